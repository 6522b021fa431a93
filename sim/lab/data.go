package lab

import (
	"math"
	"slices"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
)

// Data is a lab as read from its source: what `sim lab --json` prints (the
// site's pages are made from it, and the page's model runs it) and what
// FromData makes a Lab of again. Values of settings are what the TOML gave
// (strings, numbers, booleans, lists).
type Data struct {
	File      string         `json:"file"`
	Title     string         `json:"title"`
	Blocks    []BlockData    `json:"blocks"`
	Exercises []ExerciseData `json:"exercises"`
}

// BlockData is a ```sim block as read, and how a page shows it: Controls
// are the base keys a reader may change (in `sim params` order, the keys no
// variant sets), Fixed the base keys shown as they are (sets, and keys
// marked fixed), PortCount the ports of the base scenario's port_range.
type BlockData struct {
	ID        string        `json:"id"`
	Title     string        `json:"title"`
	Note      string        `json:"note"`
	Line      int           `json:"line"`
	FenceLine int           `json:"fence_line"`
	Tiers     []string      `json:"tiers,omitempty"` // a chain's tiers, in order ([[tier]] tables)
	Base      []Setting     `json:"base"`
	Variants  []VariantData `json:"variants"`
	Expect    []ExpectData  `json:"expect"`
	Controls  []Control     `json:"controls"`
	Fixed     []Setting     `json:"fixed"`
	PortCount int           `json:"port_count"`
	Predict   *Predict      `json:"predict,omitempty"` // the question asked before the results
}

// VariantData is one variant of a block. Label is as written ("" when the
// page names the variant by its name).
type VariantData struct {
	Name     string    `json:"name"`
	Label    string    `json:"label,omitempty"`
	Line     int       `json:"line"`
	Settings []Setting `json:"settings"`
}

// ExpectData is one expectation as written.
type ExpectData struct {
	Text string `json:"text"`
	Line int    `json:"line"`
}

// A Control is a scenario key of a block that a page lets the reader change:
// the key's description (sim params) and the block's value.
type Control struct {
	sim.Param
	Value any `json:"value"`
}

// ExerciseData is an ```exercise block as read.
type ExerciseData struct {
	ID           string        `json:"id"`
	Kind         ExerciseKind  `json:"kind"`
	Line         int           `json:"line"`
	FenceLine    int           `json:"fence_line"`
	Title        string        `json:"title,omitempty"`
	Question     string        `json:"question"`
	Unit         string        `json:"unit,omitempty"`
	Hints        []string      `json:"hints"`
	Explain      string        `json:"explain,omitempty"`
	Choices      []string      `json:"choices,omitempty"`
	Correct      int           `json:"correct,omitempty"`
	CorrectWhen  []string      `json:"correct_when,omitempty"` // a computed choice's expectations
	ModelAnswer  string        `json:"model_answer,omitempty"`
	Block        string        `json:"block,omitempty"`
	Variant      string        `json:"variant,omitempty"`
	Set          []Setting     `json:"set"`
	Metric       string        `json:"metric,omitempty"`
	Call         int           `json:"call,omitempty"`
	Tolerance    float64       `json:"tolerance,omitempty"`
	TolerancePct bool          `json:"tolerance_pct,omitempty"`
	Vary         []Vary        `json:"vary"`
	Expect       []ExpectData  `json:"expect"`
	Rubric       []RubricPoint `json:"rubric,omitempty"` // explain: the key points
	Pass         int           `json:"pass,omitempty"`
	Worked       string        `json:"worked,omitempty"`
}

// Data returns the lab as read, with its exercises (which it reads now, if
// it has not: their errors are returned).
func (l *Lab) Data() (*Data, error) {
	xs, err := l.Exercises()
	if err != nil {
		return nil, err
	}
	d := &Data{File: l.File, Title: l.Title, Blocks: []BlockData{}, Exercises: []ExerciseData{}}
	for _, b := range l.Blocks {
		d.Blocks = append(d.Blocks, b.Data())
	}
	for _, x := range xs {
		d.Exercises = append(d.Exercises, x.Data())
	}
	return d, nil
}

// Data returns the block as read and how a page shows it.
func (b *Block) Data() BlockData {
	d := BlockData{ID: b.ID, Title: b.Title, Note: b.Note, Line: b.Line, FenceLine: b.FenceLine, Tiers: b.Tiers,
		Base: nonNil(b.Base), Expect: []ExpectData{}, Controls: []Control{}, Fixed: []Setting{}}
	for _, v := range b.Variants {
		d.Variants = append(d.Variants, VariantData{Name: v.Name, Label: v.Label, Line: v.Line, Settings: nonNil(v.Settings)})
	}
	for _, x := range b.Expects {
		d.Expect = append(d.Expect, ExpectData{Text: x.Text, Line: x.Line})
	}
	d.Controls, d.Fixed = b.Controls()
	d.Predict = b.Predict
	base := sim.Default()
	for _, name := range b.Tiers {
		_ = base.AddTier(name) // checked when read
	}
	for _, st := range b.Base {
		_ = base.Set(st.Key, st.Value)
	}
	d.PortCount = base.PortRange.Size()
	return d
}

// Controls splits the block's own keys (base keys no variant sets, in `sim
// params` order) into those a page lets a reader change and those it shows
// as they are: sets, and keys marked fixed (setup).
func (b *Block) Controls() (controls []Control, fixed []Setting) {
	controls, fixed = []Control{}, []Setting{}
	byVariant := map[string]bool{}
	for _, v := range b.Variants {
		for _, st := range v.Settings {
			byVariant[st.Key] = true
		}
	}
	add := func(p sim.Param, st Setting) {
		if p.Kind == "sets" || p.Kind == "shares" || p.Fixed {
			fixed = append(fixed, st)
		} else {
			controls = append(controls, Control{Param: p, Value: st.Value})
		}
	}
	for _, p := range sim.Params() {
		if byVariant[p.Key] {
			continue
		}
		if i := slices.IndexFunc(b.Base, func(st Setting) bool { return st.Key == p.Key }); i >= 0 {
			add(p, b.Base[i])
		}
	}
	// A chain's tier settings (tier.NAME.KEY) follow, in the block's order,
	// described as the key they set.
	for _, st := range b.Base {
		if !strings.HasPrefix(st.Key, "tier.") || byVariant[st.Key] {
			continue
		}
		if p, ok := tierParam(st.Key); ok {
			p.Key = st.Key
			add(p, st)
		} else {
			fixed = append(fixed, st) // a tier's own keys (software) are named, not changed
		}
	}
	return controls, fixed
}

// Data returns the exercise as read.
func (x *Exercise) Data() ExerciseData {
	d := ExerciseData{ID: x.ID, Kind: x.Kind, Line: x.Line, FenceLine: x.FenceLine, Title: x.Title,
		Question: x.Question, Unit: x.Unit, Hints: nonNil(x.Hints), Explain: x.Explain, Choices: x.Choices,
		Correct: x.Correct, CorrectWhen: x.CorrectWhen, ModelAnswer: x.ModelAnswer, Block: x.Block, Variant: x.Variant, Set: nonNil(x.Set),
		Metric: x.Metric, Call: x.Call, Tolerance: x.Tolerance, TolerancePct: x.TolerancePct,
		Vary: nonNil(x.Vary), Expect: []ExpectData{}, Rubric: x.Rubric, Pass: x.Pass, Worked: x.Worked}
	for _, e := range x.Expects {
		d.Expect = append(d.Expect, ExpectData{Text: e.Text, Line: e.Line})
	}
	return d
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// FromData makes a Lab of its data, without reading any Markdown or TOML:
// settings and expectations are checked and bound as when the lab was read,
// and errors name the file and line.
func FromData(d *Data) (*Lab, error) {
	l := &Lab{File: d.File, Title: d.Title, fromData: true, exercises: []*Exercise{}}
	seen := map[string]bool{}
	for _, bd := range d.Blocks {
		fail := func(line int, format string, args ...any) error {
			return &Error{File: d.File, Line: line, Block: bd.ID, Msg: msgf.Sprintf(format, args...)}
		}
		if bd.ID == "" || seen[bd.ID] {
			return nil, &Error{File: d.File, Line: bd.FenceLine, Msg: msgf.Sprintf("block id %q: empty or used twice", bd.ID)}
		}
		seen[bd.ID] = true
		b := &Block{ID: bd.ID, Title: bd.Title, Note: bd.Note, File: d.File, Line: bd.Line, FenceLine: bd.FenceLine, Tiers: bd.Tiers}
		var err error
		if b.Base, err = dataSettings(bd.Base); err != nil {
			return nil, fail(err.(lineError).line, "%v", err.(lineError).err)
		}
		if len(bd.Variants) == 0 {
			return nil, fail(bd.Line, "no variants")
		}
		for _, vd := range bd.Variants {
			if vd.Name == "" || b.Variant(vd.Name) != nil {
				return nil, fail(vd.Line, "variant name %q: empty or used twice", vd.Name)
			}
			v := &Variant{Name: vd.Name, Label: vd.Label, Line: vd.Line}
			if v.Settings, err = dataSettings(vd.Settings); err != nil {
				return nil, fail(err.(lineError).line, "variant %q: %v", vd.Name, err.(lineError).err)
			}
			b.Variants = append(b.Variants, v)
		}
		for _, ed := range bd.Expect {
			x, err := parseExpect(ed.Text)
			if err != nil {
				return nil, fail(ed.Line, "expect %q: %v", ed.Text, err)
			}
			x.Line = ed.Line
			b.Expects = append(b.Expects, x)
		}
		if pd := bd.Predict; pd != nil {
			p := *pd
			if p.Kind != "number" && (p.Kind != "choice" || len(p.Choices) < 2 || len(p.Values) != len(p.Choices)) {
				return nil, fail(p.Line, "predict: a number, or 2 or more choices with as many values")
			}
			if p.expr, err = parseSide(p.Metric); err != nil {
				return nil, fail(p.Line, "predict: metric %q: %v", p.Metric, err)
			}
			b.Predict = &p
		}
		l.Blocks = append(l.Blocks, b)
	}
	if err := bindExpects(l.Blocks); err != nil {
		return nil, err
	}
	lab := newNames(l.Blocks)
	for _, xd := range d.Exercises {
		x, err := exerciseFromData(d.File, xd, lab)
		if err != nil {
			return nil, err
		}
		l.exercises = append(l.exercises, x)
	}
	return l, nil
}

func exerciseFromData(file string, d ExerciseData, lab *names) (*Exercise, error) {
	x := &Exercise{ID: d.ID, Kind: d.Kind, File: file, Line: d.Line, FenceLine: d.FenceLine, Title: d.Title,
		Question: d.Question, Unit: d.Unit, Hints: d.Hints, Explain: d.Explain, Choices: d.Choices,
		Correct: d.Correct, ModelAnswer: d.ModelAnswer, Block: d.Block, Variant: d.Variant, Metric: d.Metric,
		Call: d.Call, Tolerance: d.Tolerance, TolerancePct: d.TolerancePct, Rubric: d.Rubric, Pass: d.Pass, Worked: d.Worked}
	fail := func(line int, format string, args ...any) error {
		return &Error{File: file, Line: line, Msg: msgf.Sprintf("exercise %q: ", d.ID) + msgf.Sprintf(format, args...)}
	}
	if !slices.Contains(ExerciseKinds, x.Kind) {
		return nil, fail(d.FenceLine, "kind %q: want one of %s", x.Kind, kindList())
	}
	if x.Kind == "choice" && len(d.CorrectWhen) == 0 && (x.Correct < 1 || x.Correct > len(x.Choices)) {
		return nil, fail(d.FenceLine, "correct: want 1 to %d, got %d", len(x.Choices), x.Correct)
	}
	if len(x.Rubric) > 0 && (x.Pass < 1 || x.Pass > len(x.Rubric)) {
		return nil, fail(d.FenceLine, "pass: want 1 to %d, got %d", len(x.Rubric), x.Pass)
	}
	var err error
	if x.Set, err = dataSettings(d.Set); err != nil {
		return nil, fail(err.(lineError).line, "set: %v", err.(lineError).err)
	}
	for _, vr := range d.Vary {
		vr.Values = slices.Clone(vr.Values)
		for i, v := range vr.Values {
			vr.Values[i] = wholeToInt(v)
		}
		if len(vr.Values) == 0 {
			return nil, fail(vr.Line, "vary.%s: no values", vr.Key)
		}
		x.Vary = append(x.Vary, vr)
	}
	if x.Block != "" {
		if x.block = lab.blocks[x.Block]; x.block == nil {
			return nil, fail(d.FenceLine, "block %q is not a ```sim block of this lab", x.Block)
		}
		if x.Variant != "" && lab.variant(x.block, x.Variant) == nil {
			return nil, fail(d.FenceLine, "variant %q is not in block %q", x.Variant, x.Block)
		}
	}
	if x.Kind == "number" {
		if x.metric, err = x.bindMetric(x.Metric); err != nil {
			return nil, fail(d.FenceLine, "metric %q: %v", x.Metric, err)
		}
	}
	if len(d.CorrectWhen) > 0 {
		switch {
		case x.Kind != "choice" || x.block == nil:
			err = msgf.Errorf("correct_when needs a choice with a block")
		case len(d.CorrectWhen) != len(x.Choices):
			err = msgf.Errorf("correct_when: want %d expectations, one per choice", len(x.Choices))
		default:
			x.CorrectWhen, x.correctWhen, err = x.bindCorrectWhen(d.CorrectWhen)
		}
		if err != nil {
			return nil, fail(d.FenceLine, "%v", err)
		}
	}
	home := x.block
	if home == nil {
		home = &Block{File: file}
	}
	for _, ed := range d.Expect {
		ex, err := parseExpect(ed.Text)
		if err == nil {
			ex.lhs, ex.rhs = markAnswer(ex.lhs), markAnswer(ex.rhs)
			err = ex.bind(home, lab)
		}
		if err != nil {
			return nil, fail(ed.Line, "expect %q: %v", ed.Text, err)
		}
		ex.Line = ed.Line
		x.Expects = append(x.Expects, ex)
	}
	return x, nil
}

// lineError is a setting's error with its line.
type lineError struct {
	line int
	err  error
}

func (e lineError) Error() string { return e.err.Error() }

// dataSettings checks settings read from data; a whole number comes back as
// the int64 a TOML reader gives for it (JSON has one kind of number).
func dataSettings(in []Setting) ([]Setting, error) {
	var out []Setting
	for _, raw := range in {
		st, err := checkSetting(raw.Key, wholeToInt(raw.Value), raw.Line)
		if err != nil {
			return nil, lineError{raw.Line, err}
		}
		out = append(out, st)
	}
	return out, nil
}

func wholeToInt(v any) any {
	if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return int64(f)
	}
	return v
}
