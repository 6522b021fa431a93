package lab

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/connlab/connlab/sim/internal/msgf"
)

// An Expect is one statement the page makes about a block's results, written
// as a comparison:
//
//	share.total_ms.p50 ≈ 93 ±10%
//	persistent.num_connects == [1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
//	with.throughput_rps - without.throughput_rps >= 150
//	cookie.error contains "CURL_LOCK_DATA_COOKIE"
//
// A reference is variant.metric, where metric is a field of the variant's
// summary as `sim run --json` prints it (total_ms.p50, connects, ...), with
// an optional [index] for lists; in a block with one variant the variant
// may be left out. Operators: == != < <= > >= ≈ (also ~=) and contains.
// ≈ needs a tolerance: ±N (absolute) or ±N% (of the right-hand side).
// Binary + - * / need spaces around them (names may contain '-').
type Expect struct {
	Text string
	Line int
	lhs  node
	op   string
	rhs  node
	tol  float64
	pct  bool
	real bool // a real_expect: may also read check.ID and runtime.KEY
}

// Check is the outcome of one expectation.
type Check struct {
	Expect string  `json:"expect"`
	Line   int     `json:"line"`
	OK     bool    `json:"ok"`
	Got    string  `json:"got"`
	Want   string  `json:"want"`
	Value  any     `json:"value,omitempty"`
	Target any     `json:"target,omitempty"`
	Slack  float64 `json:"slack,omitempty"`
}

type node interface{}

type (
	numNode  float64
	strNode  string
	listNode []node
	refNode  struct {
		block   string // "" until bound: the block the variant belongs to
		variant string
		path    []string
		index   int // -1: none
		raw     string
	}
	binNode struct {
		op   byte
		l, r node
	}
)

var ops = []string{"contains", "==", "!=", "<=", ">=", "~=", "≈", "<", ">"}

// Limits on one expression, so that a typo cannot make the reader recurse
// or allocate without bound; the labs' longest expectation is far shorter.
const (
	MaxExpectBytes = 1000 // bytes of one expectation or metric expression
	maxExprDepth   = 32   // nested parentheses and lists
)

func parseExpect(s string) (*Expect, error) {
	if len(s) > MaxExpectBytes {
		return nil, msgf.Errorf("longer than %d bytes", MaxExpectBytes)
	}
	x := &Expect{Text: s}
	body := s
	if i := strings.LastIndexAny(body, "±"); i >= 0 || strings.Contains(body, "+-") {
		mark := "±"
		if i < 0 {
			mark = "+-"
			i = strings.LastIndex(body, "+-")
		}
		tol := strings.TrimSpace(body[i+len(mark):])
		body = body[:i]
		if strings.HasSuffix(tol, "%") {
			x.pct = true
			tol = strings.TrimSpace(strings.TrimSuffix(tol, "%"))
		}
		v, err := strconv.ParseFloat(tol, 64)
		if err != nil || v < 0 {
			return nil, msgf.Errorf("tolerance %q: want ±number or ±number%%", tol)
		}
		x.tol = v
	}
	var opAt int = -1
	for _, op := range ops {
		if i := indexOp(body, op); i >= 0 {
			x.op, opAt = op, i
			break
		}
	}
	if opAt < 0 {
		return nil, errors.New("no comparison (==, !=, <, <=, >, >=, ≈, contains)")
	}
	left, right := body[:opAt], body[opAt+len(x.op):]
	if x.op == "~=" {
		x.op = "≈"
	}
	if x.op == "≈" && x.tol == 0 {
		return nil, errors.New("≈ needs a tolerance, e.g. ≈ 93 ±10%")
	}
	if x.op != "≈" && x.tol != 0 {
		return nil, errors.New("a tolerance only goes with ≈")
	}
	var err error
	if x.lhs, err = parseSide(left); err != nil {
		return nil, err
	}
	if x.rhs, err = parseSide(right); err != nil {
		return nil, err
	}
	return x, nil
}

// indexOp finds op outside string literals.
func indexOp(s, op string) int {
	in := false
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			in = !in
		}
		if !in && strings.HasPrefix(s[i:], op) {
			if op == "contains" && (i == 0 || s[i-1] != ' ') {
				continue
			}
			return i
		}
	}
	return -1
}

type exprParser struct {
	s     string
	pos   int
	depth int
}

func parseSide(s string) (node, error) {
	if len(s) > MaxExpectBytes {
		return nil, msgf.Errorf("longer than %d bytes", MaxExpectBytes)
	}
	p := &exprParser{s: s}
	n, err := p.sum()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos < len(p.s) {
		return nil, msgf.Errorf("unexpected %q", p.s[p.pos:])
	}
	return n, nil
}

func (p *exprParser) space() {
	for p.pos < len(p.s) && p.s[p.pos] == ' ' {
		p.pos++
	}
}

func (p *exprParser) sum() (node, error)     { return p.binary("+-", p.product) }
func (p *exprParser) product() (node, error) { return p.binary("*/", p.factor) }

// binary parses operands read by next, joined left to right by the
// operators in ops.
func (p *exprParser) binary(ops string, next func() (node, error)) (node, error) {
	l, err := next()
	if err != nil {
		return nil, err
	}
	for {
		p.space()
		if p.pos >= len(p.s) || strings.IndexByte(ops, p.s[p.pos]) < 0 {
			return l, nil
		}
		op := p.s[p.pos]
		p.pos++
		r, err := next()
		if err != nil {
			return nil, err
		}
		l = binNode{op, l, r}
	}
}

func (p *exprParser) factor() (node, error) {
	p.space()
	if p.pos >= len(p.s) {
		return nil, errors.New("missing value")
	}
	c := p.s[p.pos]
	if c == '(' || c == '[' {
		if p.depth++; p.depth > maxExprDepth {
			return nil, msgf.Errorf("nested more than %d deep", maxExprDepth)
		}
		defer func() { p.depth-- }()
	}
	switch {
	case c == '(':
		p.pos++
		n, err := p.sum()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.s) || p.s[p.pos] != ')' {
			return nil, errors.New("missing )")
		}
		p.pos++
		return n, nil
	case c == '[':
		p.pos++
		var l listNode
		for {
			p.space()
			if p.pos < len(p.s) && p.s[p.pos] == ']' {
				p.pos++
				return l, nil
			}
			n, err := p.sum()
			if err != nil {
				return nil, err
			}
			l = append(l, n)
			p.space()
			switch {
			case p.pos < len(p.s) && p.s[p.pos] == ',':
				p.pos++
			case p.pos < len(p.s) && p.s[p.pos] == ']':
			case p.pos >= len(p.s):
				return nil, errors.New("missing ]")
			default:
				return nil, msgf.Errorf("unexpected %q in a list: want , or ]", p.s[p.pos:])
			}
		}
	case c == '"':
		end := strings.IndexByte(p.s[p.pos+1:], '"')
		if end < 0 {
			return nil, errors.New("unclosed string")
		}
		v := p.s[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		return strNode(v), nil
	case c == '-' || c == '.' || (c >= '0' && c <= '9'):
		start := p.pos
		p.pos++
		for p.pos < len(p.s) && (p.s[p.pos] == '.' || p.s[p.pos] == '_' || p.s[p.pos] == 'e' || (p.s[p.pos] >= '0' && p.s[p.pos] <= '9')) {
			p.pos++
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(p.s[start:p.pos], "_", ""), 64)
		if err != nil {
			return nil, msgf.Errorf("bad number %q", p.s[start:p.pos])
		}
		return numNode(v), nil
	default:
		r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
		if !unicode.IsLetter(r) {
			return nil, msgf.Errorf("unexpected %q", p.s[p.pos:])
		}
		start := p.pos
		for p.pos < len(p.s) {
			ch := p.s[p.pos]
			ok := ch == '_' || ch == '.' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
				(ch == '-' && p.pos+1 < len(p.s) && isNameByte(p.s[p.pos+1]))
			if !ok {
				break
			}
			p.pos++
		}
		if p.pos == start {
			return nil, msgf.Errorf("unexpected %q: a name is ASCII letters, digits, _, - and .", p.s[p.pos:])
		}
		ref := refNode{raw: p.s[start:p.pos], index: -1}
		ref.path = strings.Split(ref.raw, ".")
		if p.pos < len(p.s) && p.s[p.pos] == '[' {
			end := strings.IndexByte(p.s[p.pos:], ']')
			if end < 0 {
				return nil, errors.New("missing ]")
			}
			i, err := strconv.Atoi(strings.TrimSpace(p.s[p.pos+1 : p.pos+end]))
			if err != nil || i < 0 {
				return nil, msgf.Errorf("bad index in %q", p.s[start:p.pos+end+1])
			}
			ref.index = i
			ref.raw = p.s[start : p.pos+end+1]
			p.pos += end + 1
		}
		return ref, nil
	}
}

// names finds blocks by id and variants by name while expectations are
// bound, so that binding takes time in proportion to the references.
type names struct {
	blocks   map[string]*Block
	variants map[*Block]map[string]*Variant
}

func newNames(blocks []*Block) *names {
	n := &names{blocks: make(map[string]*Block, len(blocks)), variants: map[*Block]map[string]*Variant{}}
	for _, b := range blocks {
		n.blocks[b.ID] = b
	}
	return n
}

// variant is b.Variant(name), indexed on first use.
func (n *names) variant(b *Block, name string) *Variant {
	idx, ok := n.variants[b]
	if !ok {
		idx = make(map[string]*Variant, len(b.Variants))
		for _, v := range b.Variants {
			if _, dup := idx[v.Name]; !dup {
				idx[v.Name] = v
			}
		}
		n.variants[b] = idx
	}
	return idx[name]
}

// bind resolves the names in references. A reference's first name is, in
// order: a variant of the block itself; the id of another block of the lab
// (followed by one of its variants, or meaning its only variant); or, in a
// block with one variant, already the metric.
func (x *Expect) bind(b *Block, lab *names) error {
	var err error
	if x.lhs, err = bindNode(x.lhs, b, lab, x.real); err != nil {
		return err
	}
	x.rhs, err = bindNode(x.rhs, b, lab, x.real)
	return err
}

func bindNode(n node, b *Block, lab *names, real bool) (node, error) {
	switch v := n.(type) {
	case refNode:
		other := lab.blocks[v.path[0]]
		switch {
		case lab.variant(b, v.path[0]) != nil:
			v.block, v.variant, v.path = b.ID, v.path[0], v.path[1:]
		case other != nil:
			v.block, v.path = other.ID, v.path[1:]
			if len(v.path) > 0 && lab.variant(other, v.path[0]) != nil {
				v.variant, v.path = v.path[0], v.path[1:]
			} else if len(other.Variants) == 1 {
				v.variant = other.Variants[0].Name
			} else {
				return nil, msgf.Errorf("%q: block %q has several variants; name one (%s.%s.metric)", v.raw, other.ID, other.ID, other.Variants[0].Name)
			}
		case len(b.Variants) == 1:
			v.block, v.variant = b.ID, b.Variants[0].Name
		default:
			return nil, msgf.Errorf("%q: no variant or block %q (variants: %s)", v.raw, v.path[0], variantNames(b))
		}
		if len(v.path) == 0 {
			return nil, msgf.Errorf("%q: name a metric, e.g. %s.total_ms.p50", v.raw, v.raw)
		}
		if !knownMetric(v.path) && !(real && realMetric(v.path)) {
			more := ""
			if real {
				more = ", or check.ID and runtime.KEY of a real run"
			}
			return nil, msgf.Errorf("%q: no metric %q (see sim run --json for the names%s)", v.raw, strings.Join(v.path, "."), more)
		}
		return v, nil
	case binNode:
		l, err := bindNode(v.l, b, lab, real)
		if err != nil {
			return nil, err
		}
		r, err := bindNode(v.r, b, lab, real)
		if err != nil {
			return nil, err
		}
		return binNode{v.op, l, r}, nil
	case listNode:
		out := make(listNode, len(v))
		for i, e := range v {
			var err error
			if out[i], err = bindNode(e, b, lab, real); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return n, nil
}

// blocks lists the ids of the blocks x reads.
func (x *Expect) blocks() []string {
	var ids []string
	x.walk(func(r refNode) {
		if !slices.Contains(ids, r.block) {
			ids = append(ids, r.block)
		}
	})
	return ids
}

func (x *Expect) walk(f func(refNode)) {
	var walk func(n node)
	walk = func(n node) {
		switch v := n.(type) {
		case refNode:
			f(v)
		case binNode:
			walk(v.l)
			walk(v.r)
		case listNode:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(x.lhs)
	walk(x.rhs)
}

// Metrics gives each variant's values by name (the summary as JSON, plus
// "error"), by block id and variant name.
type Metrics map[string]map[string]map[string]any

func (x *Expect) eval(m Metrics) Check {
	c := Check{Expect: x.Text, Line: x.Line}
	l, err := evalNode(x.lhs, m)
	if err != nil {
		c.Got = err.Error()
		return c
	}
	r, err := evalNode(x.rhs, m)
	if err != nil {
		c.Got = err.Error()
		return c
	}
	c.Value, c.Target = l, r
	c.Got, c.Want = show(l), x.op+" "+show(r)
	if x.tol != 0 {
		c.Want += " ±" + strconv.FormatFloat(x.tol, 'g', -1, 64)
		if x.pct {
			c.Want += "%"
		}
	}
	switch x.op {
	case "contains":
		ls, ok1 := l.(string)
		rs, ok2 := r.(string)
		c.OK = ok1 && ok2 && rs != "" && strings.Contains(ls, rs)
		return c
	case "==", "!=":
		eq := equal(l, r)
		c.OK = eq == (x.op == "==")
		return c
	}
	lf, ok1 := l.(float64)
	rf, ok2 := r.(float64)
	if !ok1 || !ok2 {
		c.Got += " (not a number)"
		return c
	}
	switch x.op {
	case "<":
		c.OK = lf < rf
	case "<=":
		c.OK = lf <= rf
	case ">":
		c.OK = lf > rf
	case ">=":
		c.OK = lf >= rf
	case "≈":
		tol := x.tol
		if x.pct {
			tol = math.Abs(rf) * x.tol / 100
		}
		c.Slack = tol
		c.OK = math.Abs(lf-rf) <= tol+1e-9
	}
	return c
}

func evalNode(n node, m Metrics) (any, error) {
	switch v := n.(type) {
	case numNode:
		return float64(v), nil
	case strNode:
		return string(v), nil
	case listNode:
		out := make([]any, len(v))
		for i, e := range v {
			x, err := evalNode(e, m)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case refNode:
		var cur any = m[v.block][v.variant]
		for _, p := range v.path {
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, msgf.Errorf("%s: no value", v.raw)
			}
			cur = obj[p]
		}
		if v.index >= 0 {
			l, ok := cur.([]any)
			if !ok || v.index >= len(l) {
				return nil, msgf.Errorf("%s: no such element", v.raw)
			}
			cur = l[v.index]
		}
		return cur, nil
	case binNode:
		l, err := evalNode(v.l, m)
		if err != nil {
			return nil, err
		}
		r, err := evalNode(v.r, m)
		if err != nil {
			return nil, err
		}
		lf, ok1 := l.(float64)
		rf, ok2 := r.(float64)
		if !ok1 || !ok2 {
			return nil, msgf.Errorf("arithmetic on %s and %s", show(l), show(r))
		}
		switch v.op {
		case '+':
			return lf + rf, nil
		case '-':
			return lf - rf, nil
		case '*':
			return lf * rf, nil
		default:
			if rf == 0 {
				return nil, errors.New("division by zero")
			}
			return lf / rf, nil
		}
	}
	return nil, errors.New("bad expression")
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y))
	}
	return a == b
}

func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "none"
	case float64:
		return strconv.FormatFloat(math.Round(x*1000)/1000, 'f', -1, 64)
	case string:
		return strconv.Quote(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = show(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return msgf.Sprint(v)
}

func isNameByte(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') }
