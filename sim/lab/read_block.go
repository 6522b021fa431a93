//go:build !nolabparse

package lab

// Reading a ```sim block's TOML, and a --set key=value. Not in a
// nolabparse build (see the package doc).

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

func parseBlock(file, id string, line int, src []byte) (*Block, error) {
	b := &Block{ID: id, File: file, Line: line, Source: string(src)}
	fail := func(rel int, format string, args ...any) error {
		l := 0
		if rel > 0 {
			l = line + rel - 1
		}
		return &Error{File: file, Line: l, Block: id, Msg: msgf.Sprintf(format, args...)}
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
		case "title", "note", "script":
			s, ok := v.(string)
			if !ok {
				return nil, fail(lines[k], "%s: want a string", k)
			}
			switch k {
			case "title":
				b.Title = s
			case "note":
				b.Note = s
			default:
				if err := checkScript(s); err != nil {
					return nil, fail(lines[k], "script: %v", err)
				}
				b.Script = s
			}
		case "expect", "real_expect":
			list, ok := v.([]any)
			if !ok {
				return nil, fail(lines[k], `%s: want a list of strings, e.g. %s = ["share.num_connects == [1, 1]"]`, k, k)
			}
			for i, e := range list {
				s, ok := e.(string)
				el := lines[msgf.Sprintf("%s[%d]", k, i)]
				if el == 0 {
					el = lines[k]
				}
				if !ok {
					return nil, fail(el, "%s[%d]: want a string", k, i)
				}
				x, err := parseExpect(s)
				if err != nil {
					return nil, fail(el, "%s %q: %v", k, s, err)
				}
				x.Line = line + el - 1
				if k == "expect" {
					b.Expects = append(b.Expects, x)
				} else {
					x.real = true
					b.RealExpects = append(b.RealExpects, x)
				}
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
				prefix := msgf.Sprintf("variant[%d]", i)
				vr := &Variant{Line: line + lines[prefix] - 1}
				vkeys := sortedKeys(tm, lines, prefix+".")
				for _, vk := range vkeys {
					vl := lines[prefix+"."+vk]
					switch vk {
					case "name", "label", "script":
						s, ok := tm[vk].(string)
						if !ok {
							return nil, fail(vl, "%s.%s: want a string", prefix, vk)
						}
						switch vk {
						case "name":
							vr.Name = s
						case "label":
							vr.Label = s
						default:
							if err := checkScript(s); err != nil {
								return nil, fail(vl, "%s.script: %v", prefix, err)
							}
							vr.Script = s
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
				if !isName(vr.Name) {
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
				table = msgf.Sprintf("%s[%d]", name, counts[name])
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
						lines[msgf.Sprintf("%s[%d]", path, i)] = lineOf(int(n.Raw.Offset))
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

// ParseSetting reads a command-line "key=value". The value is read as a TOML
// value when it is one (100, true, ["dns"]) and as a plain string otherwise
// (30ms, 1.3).
func ParseSetting(kv string) (Setting, error) {
	k, v, ok := strings.Cut(kv, "=")
	k = strings.TrimSpace(k)
	if !ok || k == "" {
		return Setting{}, msgf.Errorf("--set %q: want key=value, e.g. --set rtt=30ms", kv)
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
			return Setting{}, msgf.Errorf("--set %v", err)
		}
		return st, nil
	}
	s := sim.Default()
	if err := s.Set(k, value); err != nil {
		return Setting{}, msgf.Errorf("--set %v", err)
	}
	return Setting{Key: k, Value: value}, nil
}
