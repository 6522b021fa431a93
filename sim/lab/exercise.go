package lab

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/connlab/connlab/sim"
	"github.com/pelletier/go-toml/v2"
)

// An Exercise is one ```exercise block of a lab: a question the student
// answers before the run reveals the answer. It is TOML, like a ```sim
// block, with an id attribute:
//
//	```exercise {id="warm-call"}
//	kind = "number"
//	question = "The API is {rtt} away. How long does the 2nd request's call take, in ms?"
//	block = "across-requests"   # a ```sim block of the same lab
//	variant = "persistent"      # one of its variants
//	set = { rtt = "20ms" }      # overrides, as sim run --set takes them
//	call = 2                    # optional: read the 2nd call of the run only
//	metric = "total_ms"         # what the answer is
//	unit = "ms"
//	tolerance = "10%"           # or an absolute number: tolerance = 2
//	vary = { rtt = ["10ms", "20ms", "30ms"] }   # per-student values (seed)
//	hints = ["The connection is already open: which phases are left?"]
//	explain = "One round trip and the server's 2 ms: {answer} ms."
//	expect = ["answer ≈ 22 ±5%"]
//	```
//
// Kinds:
//   - number: the answer is computed by the model from the exercise's
//     scenario (block, variant, set, and the seed's vary picks), never typed
//     in. metric is a summary metric as `sim run --json` names it
//     (total_ms.p50, connects, first_port_error_s, num_connects[1]) or an
//     expression of them (share.total_ms.p50 - persistent.total_ms.p50,
//     where a first name that is a variant of the block selects it). With
//     call = N, the metric reads the Nth call of the run, in the order calls
//     end (the order of num_connects): total_ms, connect_ms, num_connects, …
//   - choice: choices (2 to 8) and correct (1-based). block and variant are
//     optional: the run the reveal shows.
//   - explain: model_answer, shown after the student has written theirs.
//
// Placeholders {key} in question, hints and explain are replaced by the
// scenario's values ({rtt} → "20ms"); {answer} in explain by the answer.
// {{ and }} are literal braces. expect states what the answer must be (the
// expectation grammar of ```sim blocks, with the name answer, and the lab's
// metrics as block.variant.metric); tests check it for the unseeded answer.
type Exercise struct {
	ID        string
	Kind      string // number, choice, explain
	File      string
	Line      int // first line of the TOML body
	FenceLine int
	Source    string

	Title       string
	Question    string
	Unit        string
	Hints       []string
	Explain     string
	Choices     []string
	Correct     int // choice: 1-based
	ModelAnswer string

	Block   string // id of a ```sim block of the same lab ("" for none)
	Variant string
	Set     []Setting // overrides, in order written
	Metric  string
	Call    int // 0: the whole run

	Tolerance    float64
	TolerancePct bool
	Vary         []Vary
	Expects      []*Expect

	block  *Block
	metric node // bound: refNodes carry block and variant
	lines  map[string]int
}

// A Vary is a scenario key whose value depends on the student's seed.
type Vary struct {
	Key    string
	Values []any // as Scenario.Set takes them
	Line   int
}

// ExerciseKinds lists the kinds of exercise.
var ExerciseKinds = []string{"number", "choice", "explain"}

// exerciseKeys are the keys an exercise block may hold.
var exerciseKeys = []string{"kind", "title", "question", "unit", "hints", "explain", "choices", "correct",
	"model_answer", "block", "variant", "set", "metric", "call", "tolerance", "vary", "expect"}

// Limits on an exercise block, so a page cannot ask for unbounded work.
const (
	MaxExerciseText  = 4000 // characters of question, explain, a hint, a choice, model_answer
	MaxHints         = 6
	MaxChoices       = 8
	MaxVaryValues    = 1000 // values one vary key may take
	maxVaryKeys      = 4
	maxExercisesALab = 30
)

// callFields are the metrics of one call (call = N).
var callFields = map[string]bool{"namelookup_ms": true, "connect_ms": true, "appconnect_ms": true,
	"starttransfer_ms": true, "total_ms": true, "queue_ms": true, "num_connects": true, "worker": true, "conn": true}

var thousandsRE = regexp.MustCompile(`^-?\d{1,3}(,\d{3})+(\.\d+)?$`)

var placeholderRE = regexp.MustCompile(`\{\{|\}\}|\{([a-z][a-z0-9_]*)\}`)

// ReadExercises reads the lab at path and its exercises.
func ReadExercises(path string) (*Lab, []*Exercise, error) {
	src, err := readLimited(path)
	if err != nil {
		return nil, nil, err
	}
	l, err := Parse(path, src)
	if err != nil {
		return nil, nil, err
	}
	xs, err := l.Exercises()
	if err != nil {
		return nil, nil, err
	}
	return l, xs, nil
}

// Exercises parses the lab's ```exercise blocks, in the order they appear.
// Errors carry the file and line.
func (l *Lab) Exercises() ([]*Exercise, error) {
	var out []*Exercise
	seen := map[string]int{}
	lab := newNames(l.Blocks)
	for _, f := range l.Fences {
		if f.Lang != "exercise" {
			continue
		}
		if len(out) == maxExercisesALab {
			return nil, &Error{File: l.File, Line: max(f.Line-1, 1), Msg: fmt.Sprintf("more than %d exercises in one lab", maxExercisesALab)}
		}
		fenceLine := max(f.Line-1, 1)
		id := f.Attrs["id"]
		if id == "" {
			return nil, &Error{File: l.File, Line: fenceLine, Msg: "an ```exercise block needs an id: ```exercise {id=\"name\"}"}
		}
		if !nameRE.MatchString(id) {
			return nil, &Error{File: l.File, Line: fenceLine, Msg: fmt.Sprintf("exercise id %q: use lower-case letters, digits, - and _", id)}
		}
		if prev, dup := seen[id]; dup {
			return nil, &Error{File: l.File, Line: fenceLine, Msg: fmt.Sprintf("exercise %q: id used twice (first at line %d)", id, prev)}
		}
		seen[id] = fenceLine
		x, err := l.parseExercise(id, f.Line, fenceLine, []byte(f.Body), lab)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func (l *Lab) parseExercise(id string, line, fenceLine int, src []byte, lab *names) (*Exercise, error) {
	x := &Exercise{ID: id, File: l.File, Line: line, FenceLine: fenceLine, Source: string(src)}
	fail := func(key string, format string, args ...any) error {
		ln := fenceLine
		if key != "" {
			if rel := x.lines[key]; rel > 0 {
				ln = line + rel - 1
			}
		}
		return &Error{File: l.File, Line: ln, Msg: fmt.Sprintf("exercise %q: ", id) + fmt.Sprintf(format, args...)}
	}
	var doc map[string]any
	if err := toml.Unmarshal(src, &doc); err != nil {
		ln := fenceLine
		if rel := tomlLine(err); rel > 0 {
			ln = line + rel - 1
		}
		return nil, &Error{File: l.File, Line: ln, Msg: fmt.Sprintf("exercise %q: TOML: %s", id, tomlMsg(err))}
	}
	x.lines = keyLines(src)
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return x.lines[keys[i]] < x.lines[keys[j]] })
	for _, k := range keys {
		if !slices.Contains(exerciseKeys, k) {
			hint := ""
			if _, ok := sim.LookupParam(k); ok {
				hint = fmt.Sprintf("; scenario keys go in set = { %s = … }", k)
			} else if k == "answer" {
				hint = "; a number's answer is computed by the model: name the metric (metric = \"total_ms.p50\"), and for a choice write correct = N"
			}
			return nil, fail(k, "unknown key %q (keys: %s)%s", k, strings.Join(exerciseKeys, ", "), hint)
		}
	}
	str := func(k string, required bool) (string, error) {
		v, ok := doc[k]
		if !ok {
			if required {
				return "", fail("", "%s is missing", k)
			}
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", fail(k, "%s: want a string", k)
		}
		if len(s) > MaxExerciseText {
			return "", fail(k, "%s: longer than %d characters", k, MaxExerciseText)
		}
		if required && strings.TrimSpace(s) == "" {
			return "", fail(k, "%s is empty", k)
		}
		return s, nil
	}
	strList := func(k string, max int) ([]string, error) {
		v, ok := doc[k]
		if !ok {
			return nil, nil
		}
		list, ok := v.([]any)
		if !ok {
			return nil, fail(k, "%s: want a list of strings", k)
		}
		if len(list) > max {
			return nil, fail(k, "%s: at most %d", k, max)
		}
		var out []string
		for i, e := range list {
			s, ok := e.(string)
			if !ok || strings.TrimSpace(s) == "" || len(s) > MaxExerciseText {
				return nil, fail(fmt.Sprintf("%s[%d]", k, i), "%s[%d]: want a non-empty string of at most %d characters", k, i, MaxExerciseText)
			}
			out = append(out, s)
		}
		return out, nil
	}
	var err error
	if x.Kind, err = str("kind", true); err != nil {
		return nil, err
	}
	if !slices.Contains(ExerciseKinds, x.Kind) {
		return nil, fail("kind", "kind %q: want one of %s", x.Kind, strings.Join(ExerciseKinds, ", "))
	}
	if x.Title, err = str("title", false); err != nil {
		return nil, err
	}
	if x.Question, err = str("question", true); err != nil {
		return nil, err
	}
	if x.Unit, err = str("unit", false); err != nil {
		return nil, err
	}
	if x.Explain, err = str("explain", false); err != nil {
		return nil, err
	}
	if x.Hints, err = strList("hints", MaxHints); err != nil {
		return nil, err
	}
	if x.Choices, err = strList("choices", MaxChoices); err != nil {
		return nil, err
	}
	if x.ModelAnswer, err = str("model_answer", x.Kind == "explain"); err != nil {
		return nil, err
	}
	if x.Metric, err = str("metric", x.Kind == "number"); err != nil {
		return nil, err
	}
	if x.Block, err = str("block", x.Kind == "number"); err != nil {
		return nil, err
	}
	if x.Variant, err = str("variant", false); err != nil {
		return nil, err
	}

	// Keys that belong to one kind only.
	only := map[string]string{"choices": "choice", "correct": "choice", "model_answer": "explain",
		"metric": "number", "call": "number", "tolerance": "number", "unit": "number"}
	for k, kind := range only {
		if _, ok := doc[k]; ok && x.Kind != kind {
			return nil, fail(k, "%s belongs to kind = %q exercises, not %q", k, kind, x.Kind)
		}
	}
	if x.Kind != "number" && x.Block == "" {
		for _, k := range []string{"variant", "set", "vary"} {
			if _, ok := doc[k]; ok {
				return nil, fail(k, "%s needs block = \"…\" (the ```sim block whose run the reveal shows)", k)
			}
		}
	}

	if x.Kind == "choice" {
		if len(x.Choices) < 2 {
			return nil, fail("choices", "a choice needs at least 2 choices")
		}
		c, ok := toInt(doc["correct"])
		if !ok || c < 1 || c > len(x.Choices) {
			return nil, fail("correct", "correct: want the number of the right choice, 1 to %d", len(x.Choices))
		}
		x.Correct = c
	}

	if x.Block != "" {
		b, err := l.Block(x.Block)
		if err != nil {
			return nil, fail("block", "block %q is not a ```sim block of this lab (blocks: %s)", x.Block, blockIDs(l))
		}
		x.block = b
		if x.Variant != "" && b.Variant(x.Variant) == nil {
			return nil, fail("variant", "variant %q is not in block %q (variants: %s)", x.Variant, b.ID, variantNames(b))
		}
		if x.Variant == "" && len(b.Variants) == 1 {
			x.Variant = b.Variants[0].Name
		}
		if x.Variant == "" && x.Kind != "number" {
			return nil, fail("block", "block %q has several variants: name one (variant = %q)", b.ID, b.Variants[0].Name)
		}
	}

	if v, ok := doc["set"]; ok {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fail("set", "set: want a table of scenario keys, e.g. set = { rtt = \"20ms\" }")
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Slice(names, func(i, j int) bool {
			li, lj := x.lines["set."+names[i]], x.lines["set."+names[j]]
			if li != lj {
				return li < lj
			}
			return names[i] < names[j]
		})
		for _, k := range names {
			key := "set." + k
			if x.lines[key] == 0 {
				key = "set"
			}
			st, err := checkSetting(k, m[k], line+x.lines[key]-1)
			if err != nil {
				return nil, fail(key, "set: %v", err)
			}
			x.Set = append(x.Set, st)
		}
	}

	if v, ok := doc["vary"]; ok {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fail("vary", "vary: want a table, e.g. vary = { rtt = [\"10ms\", \"20ms\"] }")
		}
		if len(m) > maxVaryKeys {
			return nil, fail("vary", "vary: at most %d keys", maxVaryKeys)
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			key := "vary." + k
			if x.lines[key] == 0 {
				key = "vary"
			}
			vr, err := parseVary(k, m[k])
			if err != nil {
				return nil, fail(key, "vary.%s: %v", k, err)
			}
			vr.Line = line + x.lines[key] - 1
			x.Vary = append(x.Vary, vr)
		}
	}

	if v, ok := doc["call"]; ok {
		n, ok := toInt(v)
		if !ok || n < 1 || n > sim.MaxListed {
			return nil, fail("call", "call: want the number of a call, 1 to %d", sim.MaxListed)
		}
		x.Call = n
	}

	if x.Kind == "number" {
		v, ok := doc["tolerance"]
		if !ok {
			return nil, fail("", "tolerance is missing: state how close an answer must be (tolerance = \"10%%\" or tolerance = 2)")
		}
		if x.Tolerance, x.TolerancePct, err = parseTolerance(v); err != nil {
			return nil, fail("tolerance", "tolerance: %v", err)
		}
		if x.metric, err = x.bindMetric(x.Metric); err != nil {
			return nil, fail("metric", "metric %q: %v", x.Metric, err)
		}
	}

	// Every scenario the exercise can ask for must be valid.
	if x.block != nil {
		if err := x.checkScenarios(); err != nil {
			return nil, err
		}
	}

	// Placeholders.
	for _, f := range []struct {
		key, text string
		answer    bool
	}{{"question", x.Question, false}, {"explain", x.Explain, true}, {"title", x.Title, false}} {
		if err := x.checkPlaceholders(f.text, f.answer); err != nil {
			return nil, fail(f.key, "%s: %v", f.key, err)
		}
	}
	for i, h := range x.Hints {
		if err := x.checkPlaceholders(h, false); err != nil {
			return nil, fail(fmt.Sprintf("hints[%d]", i), "hints[%d]: %v", i, err)
		}
	}

	if v, ok := doc["expect"]; ok {
		list, ok := v.([]any)
		if !ok {
			return nil, fail("expect", `expect: want a list of strings, e.g. expect = ["answer ≈ 22 ±5%%"]`)
		}
		if x.Kind == "explain" {
			return nil, fail("expect", "expect: an explain exercise has no answer to check")
		}
		home := x.block
		if home == nil {
			home = &Block{ID: "", File: l.File}
		}
		for i, e := range list {
			key := fmt.Sprintf("expect[%d]", i)
			if x.lines[key] == 0 {
				key = "expect"
			}
			s, ok := e.(string)
			if !ok {
				return nil, fail(key, "expect[%d]: want a string", i)
			}
			ex, err := parseExpect(s)
			if err != nil {
				return nil, fail(key, "expect %q: %v", s, err)
			}
			ex.lhs, ex.rhs = markAnswer(ex.lhs), markAnswer(ex.rhs)
			if err := ex.bind(home, lab); err != nil {
				return nil, fail(key, "expect %q: %v", s, err)
			}
			ex.Line = line + x.lines[key] - 1
			x.Expects = append(x.Expects, ex)
		}
	}
	return x, nil
}

func blockIDs(l *Lab) string {
	ids := make([]string, len(l.Blocks))
	for i, b := range l.Blocks {
		ids[i] = b.ID
	}
	return strings.Join(ids, ", ")
}

func variantNames(b *Block) string {
	names := make([]string, len(b.Variants))
	for i, v := range b.Variants {
		names[i] = v.Name
	}
	return strings.Join(names, ", ")
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int64:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return 0, false
		}
		return int(n), true
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > math.MaxInt32 {
			return 0, false
		}
		return int(n), true
	}
	return 0, false
}

func parseTolerance(v any) (float64, bool, error) {
	switch t := v.(type) {
	case int64:
		if t < 0 {
			return 0, false, fmt.Errorf("want 0 or more, got %d", t)
		}
		return float64(t), false, nil
	case float64:
		if t < 0 || math.IsNaN(t) || math.IsInf(t, 0) {
			return 0, false, fmt.Errorf("want 0 or more, got %v", t)
		}
		return t, false, nil
	case string:
		s := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(t), "±"), "+-"))
		pct := strings.HasSuffix(s, "%")
		s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || (pct && f > 1000) {
			return 0, false, fmt.Errorf("want \"10%%\" (of the answer) or a number (in the answer's unit), got %q", t)
		}
		return f, pct, nil
	}
	return 0, false, fmt.Errorf("want \"10%%\" or a number, got %s", describeTOML(v))
}

func describeTOML(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "a table"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%v", v)
}

// parseVary reads a vary entry: a list of values, or a range table
// {min, max, step} for numeric and duration keys.
func parseVary(key string, v any) (Vary, error) {
	p, ok := sim.LookupParam(key)
	if !ok {
		s := sim.Default()
		return Vary{}, s.Set(key, nil) // names the unknown key with a suggestion
	}
	vr := Vary{Key: key}
	switch t := v.(type) {
	case []any:
		if len(t) < 2 {
			return vr, fmt.Errorf("want at least 2 values")
		}
		if len(t) > MaxVaryValues {
			return vr, fmt.Errorf("at most %d values", MaxVaryValues)
		}
		for _, e := range t {
			s := sim.Default()
			if err := s.Set(key, e); err != nil {
				return vr, err
			}
			vr.Values = append(vr.Values, e)
		}
	case map[string]any:
		for k := range t {
			if k != "min" && k != "max" && k != "step" {
				return vr, fmt.Errorf("unknown key %q in a range (min, max, step)", k)
			}
		}
		if p.Kind != "duration" && p.Kind != "int" && p.Kind != "float" {
			return vr, fmt.Errorf("a range needs a number or duration key; %s is %s: list its values", key, p.Kind)
		}
		num := func(name string) (float64, error) {
			e, ok := t[name]
			if !ok {
				return 0, fmt.Errorf("range needs %s", name)
			}
			if p.Kind == "duration" {
				s, ok := e.(string)
				if !ok {
					return 0, fmt.Errorf("%s: want a duration with its unit, e.g. \"10ms\"", name)
				}
				d, err := time.ParseDuration(s)
				if err != nil {
					return 0, fmt.Errorf("%s: want a duration with its unit, e.g. \"10ms\", got %q", name, s)
				}
				return float64(d), nil
			}
			f, ok := toFloat64(e)
			if !ok {
				return 0, fmt.Errorf("%s: want a number", name)
			}
			return f, nil
		}
		lo, err := num("min")
		if err != nil {
			return vr, err
		}
		hi, err := num("max")
		if err != nil {
			return vr, err
		}
		step, err := num("step")
		if err != nil {
			return vr, err
		}
		if step <= 0 || hi <= lo {
			return vr, fmt.Errorf("want min < max and step > 0")
		}
		n := math.Floor((hi-lo)/step+1e-9) + 1
		if n > MaxVaryValues {
			return vr, fmt.Errorf("%v values; at most %d", n, MaxVaryValues)
		}
		for i := 0; i < int(n); i++ {
			f := lo + float64(i)*step
			var e any
			switch p.Kind {
			case "duration":
				e = sim.FormatDuration(time.Duration(math.Round(f)))
			case "int":
				e = int64(math.Round(f))
			default:
				e = math.Round(f*1e9) / 1e9
			}
			s := sim.Default()
			if err := s.Set(key, e); err != nil {
				return vr, err
			}
			vr.Values = append(vr.Values, e)
		}
	default:
		return vr, fmt.Errorf("want a list of values or a range {min, max, step}")
	}
	return vr, nil
}

func toFloat64(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// bindMetric parses the metric expression and resolves its names: a first
// name that is a variant of the block selects that variant; otherwise the
// name is a metric of the exercise's variant.
func (x *Exercise) bindMetric(s string) (node, error) {
	if x.block == nil {
		return nil, fmt.Errorf("needs a block")
	}
	n, err := parseSide(s)
	if err != nil {
		return nil, err
	}
	var bind func(n node) (node, error)
	bind = func(n node) (node, error) {
		switch v := n.(type) {
		case refNode:
			v.block = x.block.ID
			if len(v.path) > 1 && x.block.Variant(v.path[0]) != nil {
				v.variant, v.path = v.path[0], v.path[1:]
			} else if x.Variant != "" {
				v.variant = x.Variant
			} else {
				return nil, fmt.Errorf("block %q has several variants (%s): set variant = \"…\" or write variant.%s", x.block.ID, variantNames(x.block), v.raw)
			}
			if x.Call > 0 {
				if len(v.path) == 2 && callFields[v.path[0]] && strings.HasSuffix(v.path[0], "_ms") {
					v.path = v.path[:1] // total_ms.p50 of one call is the call's total_ms
				}
				if len(v.path) != 1 || !callFields[v.path[0]] || v.index >= 0 {
					return nil, fmt.Errorf("with call = %d, name a field of that call (%s)", x.Call, strings.Join(sortedFields(), ", "))
				}
			} else if !knownMetric(v.path) {
				return nil, fmt.Errorf("no metric %q (see sim run --json for the names)", strings.Join(v.path, "."))
			}
			return v, nil
		case binNode:
			l, err := bind(v.l)
			if err != nil {
				return nil, err
			}
			r, err := bind(v.r)
			if err != nil {
				return nil, err
			}
			return binNode{v.op, l, r}, nil
		case numNode:
			return v, nil
		}
		return nil, fmt.Errorf("want a metric or arithmetic on metrics")
	}
	return bind(n)
}

func sortedFields() []string {
	var out []string
	for k := range callFields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// metricVariants lists the variants the metric reads.
func (x *Exercise) metricVariants() []string {
	var names []string
	var walk func(n node)
	walk = func(n node) {
		switch v := n.(type) {
		case refNode:
			if !slices.Contains(names, v.variant) {
				names = append(names, v.variant)
			}
		case binNode:
			walk(v.l)
			walk(v.r)
		}
	}
	walk(x.metric)
	return names
}

// answerNode stands for the exercise's answer in its expectations.
type answerNode struct{}

func markAnswer(n node) node {
	switch v := n.(type) {
	case refNode:
		if v.raw == "answer" {
			return answerNode{}
		}
	case binNode:
		return binNode{v.op, markAnswer(v.l), markAnswer(v.r)}
	case listNode:
		out := make(listNode, len(v))
		for i, e := range v {
			out[i] = markAnswer(e)
		}
		return out
	}
	return n
}

func fillAnswer(n node, answer node) node {
	switch v := n.(type) {
	case answerNode:
		return answer
	case binNode:
		return binNode{v.op, fillAnswer(v.l, answer), fillAnswer(v.r, answer)}
	case listNode:
		out := make(listNode, len(v))
		for i, e := range v {
			out[i] = fillAnswer(e, answer)
		}
		return out
	}
	return n
}

// variantsToCheck lists the variants whose scenarios the exercise builds.
func (x *Exercise) variantsToCheck() []*Variant {
	var out []*Variant
	names := x.metricVariants()
	if x.Variant != "" && !slices.Contains(names, x.Variant) {
		names = append(names, x.Variant)
	}
	for _, n := range names {
		out = append(out, x.block.Variant(n))
	}
	return out
}

// checkScenarios validates the scenario of every variant the exercise reads,
// with its set and with each value of each vary key.
func (x *Exercise) checkScenarios() error {
	check := func(over []Setting, line int, what string) error {
		for _, v := range x.variantsToCheck() {
			s, err := x.block.Scenario(v, over)
			if err == nil {
				err = s.Validate()
			}
			if err != nil {
				if x.Kind != "number" && x.block.expectsError(v.Name) {
					continue // the variant shows an error on purpose (COOKIE)
				}
				msg := err.Error()
				if le, ok := err.(*Error); ok {
					msg = le.Msg
				}
				return &Error{File: x.File, Line: line, Msg: fmt.Sprintf("exercise %q: %svariant %q of block %q: %s", x.ID, what, v.Name, x.block.ID, msg)}
			}
		}
		return nil
	}
	setLine := x.FenceLine
	if len(x.Set) > 0 {
		setLine = x.Set[0].Line
	}
	if err := check(x.Set, setLine, ""); err != nil {
		return err
	}
	for _, vr := range x.Vary {
		for _, val := range vr.Values {
			over := append(slices.Clone(x.Set), Setting{Key: vr.Key, Value: val, Line: vr.Line})
			if err := check(over, vr.Line, fmt.Sprintf("vary %s = %v: ", vr.Key, val)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (x *Exercise) checkPlaceholders(text string, answerOK bool) error {
	for _, m := range placeholderRE.FindAllStringSubmatch(text, -1) {
		if m[1] == "" {
			continue
		}
		if m[1] == "answer" {
			if !answerOK {
				return fmt.Errorf("{answer} may only appear in explain")
			}
			continue
		}
		if _, ok := sim.LookupParam(m[1]); !ok {
			return fmt.Errorf("{%s} is not a scenario key (sim params lists them)", m[1])
		}
		if x.block == nil {
			return fmt.Errorf("{%s} needs block = \"…\" to take its value from", m[1])
		}
	}
	return nil
}

// Overrides returns the scenario overrides of the exercise for a seed: its
// set, then one value of each vary key picked by the seed. Seed 0 is the
// lab's own exercise, with set alone.
func (x *Exercise) Overrides(seed uint64) []Setting {
	over := slices.Clone(x.Set)
	if seed == 0 {
		return over
	}
	for _, vr := range x.Vary {
		i := pick(seed, x.ID, vr.Key, len(vr.Values))
		over = append(over, Setting{Key: vr.Key, Value: vr.Values[i], Line: vr.Line})
	}
	return over
}

// pick chooses an index in [0, n) from a seed and names, the same on every
// platform.
func pick(seed uint64, id, key string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write([]byte(key))
	z := h.Sum64() ^ seed
	// splitmix64's finaliser
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int(z % uint64(n))
}

// An Instance is an exercise as one student sees it: placeholders filled
// for a seed, choices in that seed's order, and the answer the model gives.
// It is what `sim exercise --key --json` prints for each exercise.
type Instance struct {
	ID       string   `json:"id"`
	Kind     string   `json:"kind"`
	Title    string   `json:"title,omitempty"`
	Question string   `json:"question"`
	Unit     string   `json:"unit,omitempty"`
	Choices  []string `json:"choices,omitempty"`
	// Answer is a number (kind number), the right choice's text (choice) or
	// the model answer (explain).
	Answer any `json:"answer"`
	// Correct is the 1-based number of the right choice, as shown.
	Correct int `json:"correct,omitempty"`
	// Tolerance is absolute, in Unit (kind number only).
	Tolerance     *float64          `json:"tolerance"`
	ToleranceText string            `json:"tolerance_text,omitempty"`
	AnswerText    string            `json:"answer_text"`
	AnswerShort   string            `json:"answer_short,omitempty"` // a number as {answer} shows it: 22
	Hints         []string          `json:"hints"`
	Explain       string            `json:"explain,omitempty"`
	Values        map[string]string `json:"values,omitempty"` // the placeholders' values
	Scenario      *ScenarioRef      `json:"scenario"`
	Seed          uint64            `json:"seed"`
}

// ScenarioRef names the run an answer comes from, and the command that
// reproduces it.
type ScenarioRef struct {
	Lab     string            `json:"lab"`
	Block   string            `json:"block"`
	Variant string            `json:"variant,omitempty"`
	Set     map[string]string `json:"set"`
	Metric  string            `json:"metric,omitempty"`
	Call    int               `json:"call,omitempty"`
	Command string            `json:"command"`
}

// Instance builds the exercise for a seed and, for a number, computes its
// answer with the model (simulation seed 1, as `sim run` uses by default).
func (x *Exercise) Instance(ctx context.Context, seed uint64) (*Instance, error) {
	return x.InstanceCached(ctx, seed, nil)
}

// An AnswerCache remembers numeric answers by exercise and scenario, so the
// seeds of many students that pick the same values run the model once. It
// holds at most its size in answers (then starts afresh) and is safe for
// concurrent use. A nil *AnswerCache caches nothing.
type AnswerCache struct {
	mu   sync.Mutex
	m    map[string]float64
	size int
}

// NewAnswerCache returns a cache of at most size answers.
func NewAnswerCache(size int) *AnswerCache {
	return &AnswerCache{m: map[string]float64{}, size: max(size, 1)}
}

// cacheKey names an answer: the English lab file (a translation shares its
// answers), the exercise and its overrides.
func (x *Exercise) cacheKey(over []Setting) string {
	var b strings.Builder
	file := x.File
	if strings.HasSuffix(file, ".ko.md") {
		file = strings.TrimSuffix(file, ".ko.md") + ".md"
	}
	b.WriteString(file)
	b.WriteByte(0)
	b.WriteString(x.ID)
	for _, st := range over {
		b.WriteByte(0)
		b.WriteString(st.Key)
		b.WriteByte('=')
		b.WriteString(formatSetting(st))
	}
	return b.String()
}

func (c *AnswerCache) get(k string) (float64, bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *AnswerCache) put(k string, v float64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.size {
		clear(c.m)
	}
	c.m[k] = v
}

// Len is the number of answers held.
func (c *AnswerCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// InstanceCached is Instance with answers looked up in, and added to, cache.
func (x *Exercise) InstanceCached(ctx context.Context, seed uint64, cache *AnswerCache) (*Instance, error) {
	in := &Instance{ID: x.ID, Kind: x.Kind, Unit: x.Unit, Seed: seed, Hints: []string{}}
	over := x.Overrides(seed)
	values := map[string]string{}
	if x.block != nil {
		v := x.block.Variant(x.Variant)
		if v == nil {
			v = x.block.Variants[0]
		}
		s, err := x.block.Scenario(v, over)
		if err != nil {
			return nil, err
		}
		for _, p := range sim.Params() {
			values[p.Key], _ = s.Get(p.Key)
		}
		ref := &ScenarioRef{Lab: x.File, Block: x.block.ID, Variant: x.Variant, Set: map[string]string{}, Metric: x.Metric, Call: x.Call}
		cmd := []string{"sim", "run", "--block", x.block.ID}
		for _, st := range over {
			val := formatSetting(st)
			ref.Set[st.Key] = val
		}
		keys := make([]string, 0, len(ref.Set))
		for k := range ref.Set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cmd = append(cmd, "--set", shellQuote(k+"="+ref.Set[k]))
		}
		ref.Command = strings.Join(append(cmd, shellQuote(x.File)), " ")
		in.Scenario = ref
	}
	used := map[string]string{}
	fill := func(text, answer string) string {
		return placeholderRE.ReplaceAllStringFunc(text, func(m string) string {
			switch m {
			case "{{":
				return "{"
			case "}}":
				return "}"
			case "{answer}":
				return answer
			}
			k := m[1 : len(m)-1]
			used[k] = values[k]
			return values[k]
		})
	}
	switch x.Kind {
	case "number":
		key := x.cacheKey(over)
		a, ok := cache.get(key)
		if !ok {
			var err error
			if a, err = x.Answer(ctx, over); err != nil {
				return nil, err
			}
			cache.put(key, a)
		}
		in.Answer = a
		tol := x.Tolerance
		if x.TolerancePct {
			tol = math.Abs(a) * x.Tolerance / 100
		}
		tol = math.Round(tol*1e6) / 1e6
		in.Tolerance = &tol
		if x.Tolerance > 0 { // an exact answer states no tolerance
			in.ToleranceText = "±" + strconv.FormatFloat(x.Tolerance, 'f', -1, 64)
			if x.TolerancePct {
				in.ToleranceText += "%"
			} else if x.Unit != "" {
				in.ToleranceText += " " + x.Unit
			}
		}
		in.AnswerText = FormatNumber(a)
		in.AnswerShort = in.AnswerText
		if x.Unit != "" {
			in.AnswerText += " " + x.Unit
		}
	case "choice":
		order := make([]int, len(x.Choices))
		for i := range order {
			order[i] = i
		}
		if seed != 0 {
			for i := len(order) - 1; i > 0; i-- {
				j := pick(seed, x.ID, "choices/"+strconv.Itoa(i), i+1)
				order[i], order[j] = order[j], order[i]
			}
		}
		for i, o := range order {
			in.Choices = append(in.Choices, fill(x.Choices[o], ""))
			if o == x.Correct-1 {
				in.Correct = i + 1
			}
		}
		in.Answer = in.Choices[in.Correct-1]
		in.AnswerText = in.Choices[in.Correct-1]
	case "explain":
		in.Answer = fill(x.ModelAnswer, "")
		in.AnswerText = in.Answer.(string)
	}
	in.Title = fill(x.Title, "")
	in.Question = fill(x.Question, "")
	for _, h := range x.Hints {
		in.Hints = append(in.Hints, fill(h, ""))
	}
	ans := in.AnswerText
	if x.Kind == "number" {
		ans = FormatNumber(in.Answer.(float64))
	}
	in.Explain = fill(x.Explain, ans)
	if len(used) > 0 {
		in.Values = used
	}
	return in, nil
}

func formatSetting(st Setting) string {
	switch v := st.Value.(type) {
	case string:
		return v
	case []any:
		s := sim.Default()
		if err := s.Set(st.Key, v); err == nil {
			out, _ := s.Get(st.Key)
			return out
		}
	}
	return fmt.Sprint(st.Value)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_=./:,µ", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Answer computes a number exercise's answer with the model for the given
// overrides (see Overrides).
func (x *Exercise) Answer(ctx context.Context, over []Setting) (float64, error) {
	if x.Kind != "number" {
		return 0, fmt.Errorf("exercise %q is a %s, not a number", x.ID, x.Kind)
	}
	m := Metrics{x.block.ID: {}}
	for _, name := range x.metricVariants() {
		v := x.block.Variant(name)
		s, err := x.block.Scenario(v, over)
		if err != nil {
			return 0, err
		}
		var call map[string]any
		var sink func(*sim.Event)
		if x.Call > 0 {
			n := 0
			sink = func(e *sim.Event) {
				if e.Kind != sim.KindCall {
					return
				}
				n++
				if n == x.Call {
					call = map[string]any{
						"namelookup_ms": sim.MS(e.NameLookup), "connect_ms": sim.MS(e.Connect),
						"appconnect_ms": sim.MS(e.AppConnect), "starttransfer_ms": sim.MS(e.StartTransfer),
						"total_ms": sim.MS(e.Total), "queue_ms": sim.MS(e.Queue),
						"num_connects": float64(e.NumConnects()), "worker": float64(e.Worker), "conn": float64(e.Conn),
					}
				}
			}
		}
		r, err := sim.Run(ctx, s, sim.Options{Seed: 1, Sink: sink})
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, &Error{File: x.File, Line: x.FenceLine, Msg: fmt.Sprintf("exercise %q: variant %q: %v", x.ID, name, err)}
		}
		if x.Call > 0 {
			if call == nil {
				return 0, &Error{File: x.File, Line: x.Line + x.lines["call"] - 1, Msg: fmt.Sprintf("exercise %q: variant %q makes only %d calls, no call %d", x.ID, name, r.Summary.Calls, x.Call)}
			}
			m[x.block.ID][name] = call
		} else {
			m[x.block.ID][name] = MetricsOf(&VariantResult{Name: name, Summary: &r.Summary})
		}
	}
	v, err := evalNode(x.metric, m)
	if err != nil {
		return 0, &Error{File: x.File, Line: x.Line + x.lines["metric"] - 1, Msg: fmt.Sprintf("exercise %q: metric %q: %v", x.ID, x.Metric, err)}
	}
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, &Error{File: x.File, Line: x.Line + x.lines["metric"] - 1, Msg: fmt.Sprintf("exercise %q: metric %q gives %s, not a number, in this scenario", x.ID, x.Metric, show(v))}
	}
	return math.Round(f*1e6) / 1e6, nil
}

// CheckExpects evaluates the exercise's expectations against its unseeded
// instance and the lab's results (block id → result, as Lab.Run gives).
func (x *Exercise) CheckExpects(in *Instance, results map[string]*BlockResult) []Check {
	m := Metrics{}
	for _, id := range x.ExpectBlocks() {
		if r := results[id]; r != nil {
			m[id] = blockMetrics(r)
		}
	}
	var ans node
	switch a := in.Answer.(type) {
	case float64:
		ans = numNode(a)
	case string:
		ans = strNode(a)
	}
	var out []Check
	for _, e := range x.Expects {
		cp := *e
		cp.lhs, cp.rhs = fillAnswer(e.lhs, ans), fillAnswer(e.rhs, ans)
		out = append(out, cp.eval(m))
	}
	return out
}

// ExpectBlocks lists the blocks the exercise's expectations read.
func (x *Exercise) ExpectBlocks() []string {
	var ids []string
	for _, e := range x.Expects {
		for _, id := range e.blocks() {
			if id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// A Verdict is the outcome of one try.
type Verdict struct {
	OK bool `json:"ok"`
	// Direction is "high" or "low" for a wrong number.
	Direction string  `json:"direction,omitempty"`
	Value     float64 `json:"value,omitempty"`
	Choice    int     `json:"choice,omitempty"`
}

// Check judges one answer as a student typed it: a number (units and
// thousands separators allowed) within the tolerance, or the number of a
// choice as shown. An explain exercise accepts any non-empty text. An
// error means the input is not an answer at all (and says what is wanted).
func (in *Instance) Check(input string) (Verdict, error) {
	input = strings.TrimSpace(input)
	switch in.Kind {
	case "number":
		f, err := ParseNumber(input, in.Unit)
		if err != nil {
			return Verdict{}, err
		}
		a := in.Answer.(float64)
		v := Verdict{Value: f, OK: math.Abs(f-a) <= *in.Tolerance+1e-9*math.Max(1, math.Abs(a))}
		if !v.OK {
			v.Direction = "low"
			if f > a {
				v.Direction = "high"
			}
		}
		return v, nil
	case "choice":
		s := strings.TrimSuffix(strings.TrimSpace(input), ")")
		n, err := strconv.Atoi(s)
		if err != nil && len(s) == 1 && s[0] >= 'a' && s[0] <= 'a'+byte(len(in.Choices))-1 {
			n, err = int(s[0]-'a')+1, nil
		}
		if err != nil || n < 1 || n > len(in.Choices) {
			return Verdict{}, fmt.Errorf("want the number of a choice, 1 to %d", len(in.Choices))
		}
		return Verdict{OK: n == in.Correct, Choice: n}, nil
	default:
		if input == "" {
			return Verdict{}, fmt.Errorf("write your explanation first")
		}
		return Verdict{OK: true}, nil
	}
}

// ParseNumber reads a student's number: "22", "22.5", "22 ms", "~22",
// "28,232", "1_000". The unit, if written, must be the exercise's.
func ParseNumber(s, unit string) (float64, error) {
	t := strings.TrimSpace(s)
	for _, p := range []string{"≈", "~", "약"} {
		t = strings.TrimSpace(strings.TrimPrefix(t, p))
	}
	if unit != "" {
		t = strings.TrimSpace(strings.TrimSuffix(t, unit))
	}
	t = strings.ReplaceAll(t, "_", "")
	if thousandsRE.MatchString(t) {
		t = strings.ReplaceAll(t, ",", "")
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || t == "" {
		want := "a number"
		if unit != "" {
			want += " (in " + unit + ")"
		}
		return 0, fmt.Errorf("want %s, got %q", want, s)
	}
	return f, nil
}

// FormatNumber prints an answer with about three significant digits:
// 22, 92.9, 47.1, 0.35, 28232.
func FormatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	a := math.Abs(f)
	dec := 0
	if a > 0 {
		dec = 2 - int(math.Floor(math.Log10(a)))
	}
	dec = min(max(dec, 0), 6)
	out := strconv.FormatFloat(f, 'f', dec, 64)
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	return out
}
