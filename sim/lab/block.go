package lab

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/connlab/connlab/sim"
	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// A Block is one ```sim block: a base scenario, its variants (shown side by
// side) and the expectations the page's prose states about them.
type Block struct {
	ID        string
	Title     string
	Note      string // what the block shows, one or two sentences
	File      string
	Line      int // first line of the TOML body in File
	FenceLine int
	Source    string
	Base      []Setting // scenario keys shared by every variant
	Tiers     []string  // the chain's tiers in order, from [[tier]] tables (none: one hop)
	Variants  []*Variant
	Expects   []*Expect
	Predict   *Predict // the question the page asks before it shows the results (predict.go)
}

// A Setting is one scenario key set in a block, a variant or on the command
// line (Line 0).
type Setting struct {
	Key   string
	Value any
	Line  int
}

// A Variant is one column of a block: the base plus its own settings.
type Variant struct {
	Name     string
	Label    string // how the page names it, e.g. "curl_share_init_persistent()"
	Line     int
	Settings []Setting
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// blockKeys are the keys a block may hold besides scenario keys.
var blockKeys = map[string]bool{"title": true, "note": true, "expect": true, "variant": true, "predict": true}

func parseBlock(file, id string, line int, src []byte) (*Block, error) {
	b := &Block{ID: id, File: file, Line: line, Source: string(src)}
	fail := func(rel int, format string, args ...any) error {
		l := 0
		if rel > 0 {
			l = line + rel - 1
		}
		return &Error{File: file, Line: l, Block: id, Msg: fmt.Sprintf(format, args...)}
	}
	var doc map[string]any
	if err := toml.Unmarshal(src, &doc); err != nil {
		return nil, fail(tomlLine(err), "TOML: %s", tomlMsg(err))
	}
	lines := keyLines(src)
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lines[keys[i]] < lines[keys[j]] })
	for _, k := range keys {
		v := doc[k]
		switch k {
		case "title", "note":
			s, ok := v.(string)
			if !ok {
				return nil, fail(lines[k], "%s: want a string", k)
			}
			if k == "title" {
				b.Title = s
			} else {
				b.Note = s
			}
		case "expect":
			list, ok := v.([]any)
			if !ok {
				return nil, fail(lines[k], `expect: want a list of strings, e.g. expect = ["share.total_ms.p50 ≈ 93 ±10%%"]`)
			}
			for i, e := range list {
				s, ok := e.(string)
				el := lines[fmt.Sprintf("expect[%d]", i)]
				if el == 0 {
					el = lines[k]
				}
				if !ok {
					return nil, fail(el, "expect[%d]: want a string", i)
				}
				x, err := parseExpect(s)
				if err != nil {
					return nil, fail(el, "expect %q: %v", s, err)
				}
				x.Line = line + el - 1
				b.Expects = append(b.Expects, x)
			}
		case "predict":
			p, rel, err := parsePredict(v, lines)
			if err != nil {
				return nil, fail(rel, "%v", err)
			}
			p.Line = line + p.Line - 1
			b.Predict = p
		case "tier":
			names, settings, rel, err := parseTiers(v, lines, line)
			if err != nil {
				return nil, fail(rel, "%v", err)
			}
			b.Tiers = names
			b.Base = append(b.Base, settings...)
		case "variant":
			tables, ok := v.([]any)
			if !ok {
				return nil, fail(lines[k], "variant: write each variant as a [[variant]] table")
			}
			seen := make(map[string]bool, len(tables))
			for i, t := range tables {
				tm, ok := t.(map[string]any)
				if !ok {
					return nil, fail(lines[k], "variant: write each variant as a [[variant]] table")
				}
				prefix := fmt.Sprintf("variant[%d]", i)
				vr := &Variant{Line: line + lines[prefix] - 1}
				vkeys := sortedKeys(tm, lines, prefix+".")
				for _, vk := range vkeys {
					vl := lines[prefix+"."+vk]
					switch vk {
					case "name", "label":
						s, ok := tm[vk].(string)
						if !ok {
							return nil, fail(vl, "%s.%s: want a string", prefix, vk)
						}
						if vk == "name" {
							vr.Name = s
						} else {
							vr.Label = s
						}
					case "tier":
						sts, rel, err := variantTierSettings(tm[vk], lines, line, prefix)
						if err != nil {
							return nil, fail(rel, "variant %q: %v", tm["name"], err)
						}
						vr.Settings = append(vr.Settings, sts...)
					default:
						st, err := checkSetting(vk, tm[vk], line+vl-1)
						if err != nil {
							return nil, fail(vl, "variant %q: %v", tm["name"], err)
						}
						vr.Settings = append(vr.Settings, st)
					}
				}
				if !nameRE.MatchString(vr.Name) {
					return nil, fail(lines[prefix], "variant %d needs a name of lower-case letters, digits, - and _ (name = \"persistent\")", i+1)
				}
				if seen[vr.Name] {
					return nil, fail(lines[prefix], "variant name %q used twice", vr.Name)
				}
				seen[vr.Name] = true
				b.Variants = append(b.Variants, vr)
			}
		default:
			st, err := checkSetting(k, v, line+lines[k]-1)
			if err != nil {
				return nil, fail(lines[k], "%v", err)
			}
			b.Base = append(b.Base, st)
		}
	}
	if len(b.Variants) == 0 {
		b.Variants = []*Variant{{Name: "base", Line: line}}
	}
	return b, nil
}

// bindExpects resolves the names in every expectation of the lab's blocks.
func bindExpects(blocks []*Block) error {
	lab := newNames(blocks)
	for _, b := range blocks {
		for _, x := range b.Expects {
			if err := x.bind(b, lab); err != nil {
				return &Error{File: b.File, Line: x.Line, Block: b.ID, Msg: fmt.Sprintf("expect %q: %v", x.Text, err)}
			}
		}
		if p := b.Predict; p != nil {
			if err := p.bind(b, lab); err != nil {
				return &Error{File: b.File, Line: p.Line, Block: b.ID, Msg: fmt.Sprintf("predict: metric %q: %v", p.Metric, err)}
			}
		}
	}
	return nil
}

// checkSetting applies one key to a default scenario to catch unknown keys
// and bad values where they are written.
func checkSetting(key string, v any, line int) (Setting, error) {
	if strings.HasPrefix(key, "tier.") {
		return checkTierSetting(key, v, line)
	}
	if _, ok := sim.LookupParam(key); !ok && blockKeys[key] {
		return Setting{}, fmt.Errorf("%s belongs at the top of the block, not in a variant", key)
	}
	s := sim.Default()
	if err := s.Set(key, v); err != nil {
		return Setting{}, err
	}
	return Setting{Key: key, Value: v, Line: line}, nil
}

func sortedKeys(m map[string]any, lines map[string]int, prefix string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lines[prefix+keys[i]] < lines[prefix+keys[j]] })
	return keys
}

// keyLines maps each key path of a TOML document to its 1-based line:
// "rtt", "variant[0]" (the table header), "variant[0].reuse", "expect[2]".
func keyLines(src []byte) map[string]int {
	lines := map[string]int{}
	counts := map[string]int{}
	p := unstable.Parser{}
	p.Reset(src)
	// Parser.Shape counts lines from the start on every call; an index of
	// line starts keeps this linear in the size of the block.
	lineOf := lineIndex(src)
	// key joins a node's dotted key and returns the line of its first part.
	key := func(e *unstable.Node) (string, int) {
		var parts []string
		line := 0
		for it := e.Key(); it.Next(); {
			if line == 0 {
				line = lineOf(int(it.Node().Raw.Offset))
			}
			parts = append(parts, string(it.Node().Data))
		}
		return strings.Join(parts, "."), line
	}
	table := ""
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			name, line := key(e)
			table = name
			if e.Kind == unstable.ArrayTable {
				table = fmt.Sprintf("%s[%d]", name, counts[name])
				counts[name]++
			}
			lines[table] = line
		case unstable.KeyValue:
			path, line := key(e)
			if table != "" {
				path = table + "." + path
			}
			lines[path] = line
			if v := e.Value(); v.Kind == unstable.Array {
				i := 0
				for c := v.Children(); c.Next(); i++ {
					if n := c.Node(); n.Raw.Length > 0 {
						lines[fmt.Sprintf("%s[%d]", path, i)] = lineOf(int(n.Raw.Offset))
					}
				}
			}
		}
	}
	return lines
}

func tomlLine(err error) int {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return row
	}
	return 0
}

func tomlMsg(err error) string {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		_, col := de.Position()
		msg := de.Error()
		if k := de.Key(); len(k) > 0 {
			msg = strings.Join(k, ".") + ": " + msg
		}
		return msg + " (column " + strconv.Itoa(col) + ")"
	}
	return err.Error()
}

// Scenario builds the scenario of variant v: defaults, then the block's base
// settings, then the variant's, then overrides (from --set or a page's
// controls). It does not validate.
func (b *Block) Scenario(v *Variant, overrides []Setting) (sim.Scenario, error) {
	s := sim.Default()
	for _, name := range b.Tiers {
		if err := s.AddTier(name); err != nil {
			return s, &Error{File: b.File, Line: b.Line, Block: b.ID, Msg: err.Error()}
		}
	}
	for _, group := range [][]Setting{b.Base, v.Settings, overrides} {
		for _, st := range group {
			if err := s.Set(st.Key, st.Value); err != nil {
				if st.Line == 0 {
					return s, fmt.Errorf("--set %v", err)
				}
				return s, &Error{File: b.File, Line: st.Line, Block: b.ID, Msg: err.Error()}
			}
		}
	}
	return s, nil
}

// Variant returns the variant with the given name.
func (b *Block) Variant(name string) *Variant {
	for _, v := range b.Variants {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// lineOfKey finds where key was last set for variant v (0: not set).
func (b *Block) lineOfKey(v *Variant, key string) int {
	base, _, _ := strings.Cut(key, "[")
	for i := len(v.Settings) - 1; i >= 0; i-- {
		if v.Settings[i].Key == base {
			return v.Settings[i].Line
		}
	}
	for i := len(b.Base) - 1; i >= 0; i-- {
		if b.Base[i].Key == base {
			return b.Base[i].Line
		}
	}
	return 0
}

// ParseSetting reads a command-line "key=value". The value is read as a TOML
// value when it is one (100, true, ["dns"]) and as a plain string otherwise
// (30ms, 1.3).
func ParseSetting(kv string) (Setting, error) {
	k, v, ok := strings.Cut(kv, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return Setting{}, fmt.Errorf("--set %q: want key=value, e.g. --set rtt=30ms", kv)
	}
	v = strings.TrimSpace(v)
	var doc map[string]any
	var value any = v
	if err := toml.Unmarshal([]byte("v = "+v), &doc); err == nil {
		value = doc["v"]
	}
	p, ok := sim.LookupParam(k)
	if strings.HasPrefix(k, "tier.") {
		p, ok = tierParam(k)
	}
	if ok && (p.Kind == "enum" || p.Kind == "duration" || p.Kind == "ports") {
		value = v // "1.3" stays a string
	}
	if strings.HasPrefix(k, "tier.") {
		st, err := checkTierSetting(k, value, 0)
		if err != nil {
			return Setting{}, fmt.Errorf("--set %v", err)
		}
		return st, nil
	}
	s := sim.Default()
	if err := s.Set(k, value); err != nil {
		return Setting{}, fmt.Errorf("--set %v", err)
	}
	return Setting{Key: k, Value: value}, nil
}
