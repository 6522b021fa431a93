package lab

import (
	"slices"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
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
	// RealExpects (real_expect) are statements about what the real
	// software does, in expect's syntax, held to a real run's measured
	// results (sim validate) and to the lab's record of one
	// (labs/LAB.real.json, by go test): see Record.
	RealExpects []*Expect
	// Script is the program a real run of the block runs where its setup
	// runs the lab's own code (setup = "php": a PHP script in the lab's
	// folder, ScriptFolder); a variant's own script = "..." overrides it.
	Script  string
	Predict *Predict // the question the page asks before it shows the results (predict.go)
	// Scripts is the lab's Scripts: the folder its scripts are in, when
	// the front matter names one.
	Scripts string
}

// A Setting is one scenario key set in a block, a variant or on the command
// line (Line 0).
type Setting struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
	Line  int    `json:"line,omitempty"`
}

// A Variant is one column of a block: the base plus its own settings.
type Variant struct {
	Name     string
	Label    string // how the page names it, e.g. "curl_share_init_persistent()"
	Line     int
	Settings []Setting
	Script   string // see Block.Script; "" takes the block's
}

// isName reports whether s has the form of a block, variant or check
// name: ^[a-z][a-z0-9_-]*$ (without regexp, which the page's model leaves
// out).
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '_' || c == '-')) {
			return false
		}
	}
	return s != ""
}

// blockKeys are the keys a block may hold besides scenario keys.
var blockKeys = map[string]bool{"title": true, "note": true, "expect": true, "real_expect": true, "script": true, "variant": true, "predict": true}

// bindExpects resolves the names in every expectation of the lab's blocks.
func bindExpects(blocks []*Block) error {
	lab := newNames(blocks)
	for _, b := range blocks {
		for _, x := range slices.Concat(b.Expects, b.RealExpects) {
			if err := x.bind(b, lab); err != nil {
				key := "expect"
				if x.real {
					key = "real_expect"
				}
				return &Error{File: b.File, Line: x.Line, Block: b.ID, Msg: msgf.Sprintf("%s %q: %v", key, x.Text, err)}
			}
		}
		if p := b.Predict; p != nil {
			if err := p.bind(b, lab); err != nil {
				return &Error{File: b.File, Line: p.Line, Block: b.ID, Msg: msgf.Sprintf("predict: metric %q: %v", p.Metric, err)}
			}
		}
	}
	return nil
}

// ScriptOf is the script a real run of variant v runs (see Block.Script):
// the variant's, else the block's ("" when neither names one).
func (b *Block) ScriptOf(v *Variant) string {
	if v != nil && v.Script != "" {
		return v.Script
	}
	return b.Script
}

// checkScript accepts a file name in the lab's folder: no path, no "..".
func checkScript(s string) error {
	if s == "" || strings.ContainsAny(s, `/\`) || strings.HasPrefix(s, ".") || len(s) > 100 {
		return msgf.Errorf("want a file name in the lab's folder, e.g. \"persistent.php\", got %q", s)
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
		return Setting{}, msgf.Errorf("%s belongs at the top of the block, not in a variant", key)
	}
	s := sim.Default()
	if err := s.Set(key, v); err != nil {
		return Setting{}, err
	}
	return Setting{Key: key, Value: v, Line: line}, nil
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
					return s, msgf.Errorf("--set %w", err)
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

// hasTierKey reports whether key, tier.NAME.KEY, names a key of one of the
// block's tiers.
func (b *Block) hasTierKey(key string) bool {
	if len(b.Variants) == 0 {
		return false
	}
	s, err := b.Scenario(b.Variants[0], nil)
	if err != nil {
		return false
	}
	_, ok := s.Get(key)
	return ok
}
