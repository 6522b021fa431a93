//go:build !nolabparse

package lab

// Reading an ```exercise block's TOML. Not in a nolabparse build (see the
// package doc).

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
	"github.com/pelletier/go-toml/v2"
)

// exerciseKeys are the keys an exercise block may hold.
var exerciseKeys = []string{"kind", "title", "question", "unit", "hints", "explain", "choices", "correct", "correct_when",
	"model_answer", "block", "variant", "set", "metric", "call", "tolerance", "vary", "expect", "rubric", "pass", "worked"}

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

// readExercises parses the lab's ```exercise blocks, in the order they
// appear. Errors carry the file and line.
func (l *Lab) readExercises() ([]*Exercise, error) {
	var out []*Exercise
	seen := map[string]int{}
	lab := newNames(l.Blocks)
	for _, f := range l.Fences {
		if f.Lang != "exercise" {
			continue
		}
		if len(out) == maxExercisesALab {
			return nil, &Error{File: l.File, Line: max(f.Line-1, 1), Msg: msgf.Sprintf("more than %d exercises in one lab", maxExercisesALab)}
		}
		fenceLine := max(f.Line-1, 1)
		id := f.Attrs["id"]
		if id == "" {
			return nil, &Error{File: l.File, Line: fenceLine, Msg: "an ```exercise block needs an id: ```exercise {id=\"name\"}"}
		}
		if !isName(id) {
			return nil, &Error{File: l.File, Line: fenceLine, Msg: msgf.Sprintf("exercise id %q: use lower-case letters, digits, - and _", id)}
		}
		if prev, dup := seen[id]; dup {
			return nil, &Error{File: l.File, Line: fenceLine, Msg: msgf.Sprintf("exercise %q: id used twice (first at line %d)", id, prev)}
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
	var doc map[string]any
	if err := toml.Unmarshal(src, &doc); err != nil {
		ln := fenceLine
		if rel := tomlLine(err); rel > 0 {
			ln = line + rel - 1
		}
		return nil, &Error{File: l.File, Line: ln, Msg: msgf.Sprintf("exercise %q: TOML: %s", id, tomlMsg(err))}
	}
	x.lines = keyLines(src)
	r := &exerciseReader{l: l, x: x, doc: doc, names: lab}
	// In this order: an error names the first problem as a reader meets it.
	for _, step := range []func() error{r.keys, r.texts, r.rubric, r.kindKeys, r.block, r.set, r.vary, r.call, r.number, r.correctWhen, r.scenarios, r.placeholders, r.expects} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// exerciseReader fills an Exercise from the decoded TOML of its block, one
// group of keys a step.
type exerciseReader struct {
	l     *Lab
	x     *Exercise
	doc   map[string]any
	names *names
}

// fail is an error at key's line (the fence's line for "" or a key not
// written).
func (r *exerciseReader) fail(key string, format string, args ...any) error {
	x := r.x
	ln := x.FenceLine
	if key != "" {
		if rel := x.lines[key]; rel > 0 {
			ln = x.Line + rel - 1
		}
	}
	return &Error{File: x.File, Line: ln, Msg: msgf.Sprintf("exercise %q: ", x.ID) + msgf.Sprintf(format, args...)}
}

// keys refuses a key an exercise does not have, with a hint for the usual
// mistakes.
func (r *exerciseReader) keys() error {
	keys := make([]string, 0, len(r.doc))
	for k := range r.doc {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return r.x.lines[keys[i]] < r.x.lines[keys[j]] })
	for _, k := range keys {
		if !slices.Contains(exerciseKeys, k) {
			hint := ""
			if _, ok := sim.LookupParam(k); ok {
				hint = msgf.Sprintf("; scenario keys go in set = { %s = … }", k)
			} else if k == "answer" {
				hint = "; a number's answer is computed by the model: name the metric (metric = \"total_ms.p50\"), and for a choice write correct = N"
			}
			return r.fail(k, "unknown key %q (keys: %s)%s", k, strings.Join(exerciseKeys, ", "), hint)
		}
	}
	return nil
}

// str reads a text key.
func (r *exerciseReader) str(k string, required bool) (string, error) {
	v, ok := r.doc[k]
	if !ok {
		if required {
			return "", r.fail("", "%s is missing", k)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", r.fail(k, "%s: want a string", k)
	}
	if len(s) > MaxExerciseText {
		return "", r.fail(k, "%s: longer than %d characters", k, MaxExerciseText)
	}
	if required && strings.TrimSpace(s) == "" {
		return "", r.fail(k, "%s is empty", k)
	}
	return s, nil
}

// strList reads a list of at most max texts.
func (r *exerciseReader) strList(k string, max int) ([]string, error) {
	v, ok := r.doc[k]
	if !ok {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, r.fail(k, "%s: want a list of strings", k)
	}
	if len(list) > max {
		return nil, r.fail(k, "%s: at most %d", k, max)
	}
	var out []string
	for i, e := range list {
		s, ok := e.(string)
		if !ok || strings.TrimSpace(s) == "" || len(s) > MaxExerciseText {
			return nil, r.fail(msgf.Sprintf("%s[%d]", k, i), "%s[%d]: want a non-empty string of at most %d characters", k, i, MaxExerciseText)
		}
		out = append(out, s)
	}
	return out, nil
}

// texts reads the kind and every text key.
func (r *exerciseReader) texts() error {
	x := r.x
	var err error
	var kind string
	if kind, err = r.str("kind", true); err != nil {
		return err
	}
	if x.Kind = ExerciseKind(kind); !slices.Contains(ExerciseKinds, x.Kind) {
		return r.fail("kind", "kind %q: want one of %s", x.Kind, kindList())
	}
	for _, f := range []struct {
		key      string
		to       *string
		required bool
	}{
		{"title", &x.Title, false},
		{"question", &x.Question, true},
		{"unit", &x.Unit, false},
		{"explain", &x.Explain, false},
	} {
		if *f.to, err = r.str(f.key, f.required); err != nil {
			return err
		}
	}
	if x.Hints, err = r.strList("hints", MaxHints); err != nil {
		return err
	}
	if x.Choices, err = r.strList("choices", MaxChoices); err != nil {
		return err
	}
	for _, f := range []struct {
		key      string
		to       *string
		required bool
	}{
		{"model_answer", &x.ModelAnswer, x.Kind == "explain"},
		{"metric", &x.Metric, x.Kind == "number"},
		{"block", &x.Block, x.Kind == "number"},
		{"variant", &x.Variant, false},
	} {
		if *f.to, err = r.str(f.key, f.required); err != nil {
			return err
		}
	}
	return nil
}

// kindKeys refuses keys of another kind, and reads a choice's answer.
func (r *exerciseReader) kindKeys() error {
	x, doc := r.x, r.doc
	only := map[string]ExerciseKind{"choices": "choice", "correct": "choice", "correct_when": "choice", "model_answer": "explain", "rubric": "explain", "pass": "explain",
		"metric": "number", "call": "number", "tolerance": "number", "unit": "number"}
	for k, kind := range only {
		if _, ok := doc[k]; ok && x.Kind != kind {
			return r.fail(k, "%s belongs to kind = %q exercises, not %q", k, kind, x.Kind)
		}
	}
	if x.Kind != "number" && x.Block == "" {
		for _, k := range []string{"variant", "set", "vary"} {
			if _, ok := doc[k]; ok {
				return r.fail(k, "%s needs block = \"…\" (the ```sim block whose run the reveal shows)", k)
			}
		}
	}
	if x.Kind == "choice" {
		if len(x.Choices) < 2 {
			return r.fail("choices", "a choice needs at least 2 choices")
		}
		if _, ok := doc["correct_when"]; ok {
			if _, both := doc["correct"]; both {
				return r.fail("correct", "correct and correct_when: write one (correct_when computes the right choice)")
			}
			if x.Block == "" {
				return r.fail("correct_when", "correct_when needs block = \"…\" (the ```sim block whose run decides)")
			}
			return nil
		}
		c, ok := toInt(doc["correct"])
		if !ok || c < 1 || c > len(x.Choices) {
			return r.fail("correct", "correct: want the number of the right choice, 1 to %d", len(x.Choices))
		}
		x.Correct = c
	}
	return nil
}

// block finds the ```sim block and the variant the exercise runs.
func (r *exerciseReader) block() error {
	x := r.x
	if x.Block == "" {
		return nil
	}
	b := r.names.blocks[x.Block]
	if b == nil {
		return r.fail("block", "block %q is not a ```sim block of this lab (blocks: %s)", x.Block, blockIDs(r.l))
	}
	x.block = b
	if x.Variant != "" && r.names.variant(b, x.Variant) == nil {
		return r.fail("variant", "variant %q is not in block %q (variants: %s)", x.Variant, b.ID, variantNames(b))
	}
	if x.Variant == "" && len(b.Variants) == 1 {
		x.Variant = b.Variants[0].Name
	}
	if x.Variant == "" && x.Kind != "number" {
		return r.fail("block", "block %q has several variants: name one (variant = %q)", b.ID, b.Variants[0].Name)
	}
	return nil
}

// table reads the table at key (set, vary) and lists its keys, each with
// the path of its line in x.lines (the table's own line for an inline
// table). ok is false when the exercise has no such key.
func (r *exerciseReader) table(key, example string) (m map[string]any, keys, paths []string, ok bool, err error) {
	v, ok := r.doc[key]
	if !ok {
		return nil, nil, nil, false, nil
	}
	if m, ok = v.(map[string]any); !ok {
		return nil, nil, nil, true, r.fail(key, "%s: want a table, e.g. %s", key, example)
	}
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := key + "." + k
		if r.x.lines[path] == 0 {
			path = key
		}
		paths = append(paths, path)
	}
	return m, keys, paths, true, nil
}

// set reads the scenario overrides, in the order written.
func (r *exerciseReader) set() error {
	x := r.x
	m, keys, paths, ok, err := r.table("set", `set = { rtt = "20ms" }`)
	if !ok || err != nil {
		return err
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return x.lines[paths[order[i]]] < x.lines[paths[order[j]]] })
	for _, i := range order {
		st, err := checkSetting(keys[i], m[keys[i]], x.Line+x.lines[paths[i]]-1)
		if err != nil {
			return r.fail(paths[i], "set: %v", err)
		}
		x.Set = append(x.Set, st)
	}
	return nil
}

// vary reads the keys whose values depend on the student's seed, by name.
func (r *exerciseReader) vary() error {
	x := r.x
	m, keys, paths, ok, err := r.table("vary", `vary = { rtt = ["10ms", "20ms"] }`)
	if !ok || err != nil {
		return err
	}
	if len(m) > maxVaryKeys {
		return r.fail("vary", "vary: at most %d keys", maxVaryKeys)
	}
	for i, k := range keys {
		vr, err := parseVary(k, m[k])
		if err != nil {
			return r.fail(paths[i], "vary.%s: %v", k, err)
		}
		vr.Line = x.Line + x.lines[paths[i]] - 1
		x.Vary = append(x.Vary, vr)
	}
	return nil
}

// call reads which call of the run a number exercise asks about.
func (r *exerciseReader) call() error {
	v, ok := r.doc["call"]
	if !ok {
		return nil
	}
	n, ok := toInt(v)
	if !ok || n < 1 || n > sim.MaxListed {
		return r.fail("call", "call: want the number of a call, 1 to %d", sim.MaxListed)
	}
	r.x.Call = n
	return nil
}

// number reads a number exercise's tolerance and binds its metric.
func (r *exerciseReader) number() error {
	x := r.x
	if x.Kind != "number" {
		return nil
	}
	v, ok := r.doc["tolerance"]
	if !ok {
		return r.fail("", "tolerance is missing: state how close an answer must be (tolerance = \"10%%\" or tolerance = 2)")
	}
	var err error
	if x.Tolerance, x.TolerancePct, err = parseTolerance(v); err != nil {
		return r.fail("tolerance", "tolerance: %v", err)
	}
	if x.metric, err = x.bindMetric(x.Metric); err != nil {
		return r.fail("metric", "metric %q: %v", x.Metric, err)
	}
	return nil
}

// correctWhen reads a computed choice's expectations, one per choice, and
// binds their names as a number's metric is bound.
func (r *exerciseReader) correctWhen() error {
	x := r.x
	v, ok := r.doc["correct_when"]
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	if !ok || len(list) != len(x.Choices) {
		return r.fail("correct_when", `correct_when: want a list of %d expectations, one per choice ("" for a choice never right), e.g. ["errors > 0", "errors == 0"]`, len(x.Choices))
	}
	var texts []string
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return r.fail("correct_when", "correct_when[%d]: want a string", i)
		}
		texts = append(texts, s)
	}
	var err error
	if x.CorrectWhen, x.correctWhen, err = x.bindCorrectWhen(texts); err != nil {
		return r.fail("correct_when", "%v", err)
	}
	return nil
}

// scenarios checks that every scenario the exercise can ask for is valid.
func (r *exerciseReader) scenarios() error {
	if r.x.block == nil {
		return nil
	}
	return r.x.checkScenarios()
}

// placeholders checks every {key} of the texts.
func (r *exerciseReader) placeholders() error {
	x := r.x
	for _, f := range []struct {
		key, text string
		answer    bool
	}{{"question", x.Question, false}, {"explain", x.Explain, true}, {"title", x.Title, false}} {
		if err := x.checkPlaceholders(f.text, f.answer); err != nil {
			return r.fail(f.key, "%s: %v", f.key, err)
		}
	}
	for i, h := range x.Hints {
		if err := x.checkPlaceholders(h, false); err != nil {
			return r.fail(msgf.Sprintf("hints[%d]", i), "hints[%d]: %v", i, err)
		}
	}
	return nil
}

// expects parses what the exercise states about its answer, with the name
// answer and the lab's metrics.
func (r *exerciseReader) expects() error {
	x := r.x
	v, ok := r.doc["expect"]
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return r.fail("expect", `expect: want a list of strings, e.g. expect = ["answer ≈ 22 ±5%%"]`)
	}
	if x.Kind == "explain" {
		return r.fail("expect", "expect: an explain exercise has no answer to check")
	}
	home := x.block
	if home == nil {
		home = &Block{ID: "", File: x.File}
	}
	for i, e := range list {
		key := msgf.Sprintf("expect[%d]", i)
		if x.lines[key] == 0 {
			key = "expect"
		}
		s, ok := e.(string)
		if !ok {
			return r.fail(key, "expect[%d]: want a string", i)
		}
		ex, err := parseExpect(s)
		if err != nil {
			return r.fail(key, "expect %q: %v", s, err)
		}
		ex.lhs, ex.rhs = markAnswer(ex.lhs), markAnswer(ex.rhs)
		if err := ex.bind(home, r.names); err != nil {
			return r.fail(key, "expect %q: %v", s, err)
		}
		ex.Line = x.Line + x.lines[key] - 1
		x.Expects = append(x.Expects, ex)
	}
	return nil
}

func blockIDs(l *Lab) string {
	ids := make([]string, len(l.Blocks))
	for i, b := range l.Blocks {
		ids[i] = b.ID
	}
	return strings.Join(ids, ", ")
}

func knownParam(key string) bool {
	_, ok := sim.LookupParam(key)
	return ok
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
			return 0, false, msgf.Errorf("want 0 or more, got %d", t)
		}
		return float64(t), false, nil
	case float64:
		if t < 0 || math.IsNaN(t) || math.IsInf(t, 0) {
			return 0, false, msgf.Errorf("want 0 or more, got %v", t)
		}
		return t, false, nil
	case string:
		s := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(t), "±"), "+-"))
		pct := strings.HasSuffix(s, "%")
		s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || (pct && f > 1000) {
			return 0, false, msgf.Errorf("want \"10%%\" (of the answer) or a number (in the answer's unit), got %q", t)
		}
		return f, pct, nil
	}
	return 0, false, msgf.Errorf("want \"10%%\" or a number, got %s", describeTOML(v))
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
	return msgf.Sprintf("%v", v)
}

// parseVary reads a vary entry: a list of values, or a range table
// {min, max, step} for numeric and duration keys.
func parseVary(key string, v any) (Vary, error) {
	tier := strings.HasPrefix(key, "tier.")
	p, ok := sim.LookupParam(key)
	if tier {
		p, ok = tierParam(key)
	}
	if !ok {
		if tier {
			_, err := checkTierSetting(key, nil, 0)
			return Vary{}, err
		}
		s := sim.Default()
		return Vary{}, s.Set(key, nil) // names the unknown key with a suggestion
	}
	// check tries a value the way the block will take it.
	check := func(e any) error {
		if tier {
			_, err := checkTierSetting(key, e, 0)
			return err
		}
		s := sim.Default()
		return s.Set(key, e)
	}
	vr := Vary{Key: key}
	switch t := v.(type) {
	case []any:
		if len(t) < 2 {
			return vr, msgf.Errorf("want at least 2 values")
		}
		if len(t) > MaxVaryValues {
			return vr, msgf.Errorf("at most %d values", MaxVaryValues)
		}
		for _, e := range t {
			if err := check(e); err != nil {
				return vr, err
			}
			vr.Values = append(vr.Values, e)
		}
	case map[string]any:
		for k := range t {
			if k != "min" && k != "max" && k != "step" {
				return vr, msgf.Errorf("unknown key %q in a range (min, max, step)", k)
			}
		}
		if p.Kind != "duration" && p.Kind != "int" && p.Kind != "float" {
			return vr, msgf.Errorf("a range needs a number or duration key; %s is %s: list its values", key, p.Kind)
		}
		num := func(name string) (float64, error) {
			e, ok := t[name]
			if !ok {
				return 0, msgf.Errorf("range needs %s", name)
			}
			if p.Kind == "duration" {
				s, ok := e.(string)
				if !ok {
					return 0, msgf.Errorf("%s: want a duration with its unit, e.g. \"10ms\"", name)
				}
				d, err := time.ParseDuration(s)
				if err != nil {
					return 0, msgf.Errorf("%s: want a duration with its unit, e.g. \"10ms\", got %q", name, s)
				}
				return float64(d), nil
			}
			f, ok := toFloat64(e)
			if !ok {
				return 0, msgf.Errorf("%s: want a number", name)
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
			return vr, msgf.Errorf("want min < max and step > 0")
		}
		n := math.Floor((hi-lo)/step+1e-9) + 1
		if n > MaxVaryValues {
			return vr, msgf.Errorf("%v values; at most %d", n, MaxVaryValues)
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
			if err := check(e); err != nil {
				return vr, err
			}
			vr.Values = append(vr.Values, e)
		}
	default:
		return vr, msgf.Errorf("want a list of values or a range {min, max, step}")
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

func (x *Exercise) checkPlaceholders(text string, answerOK bool) error {
	var err error
	fillPlaceholders(text, func(tok, key string) string {
		switch {
		case err != nil || key == "":
		case key == "answer":
			if !answerOK {
				err = msgf.Errorf("{answer} may only appear in explain")
			}
		case strings.HasPrefix(key, "tier.") && x.block != nil:
			if !x.block.hasTierKey(key) {
				err = msgf.Errorf("{%s} is not a key of one of block %q's tiers (tier.NAME.KEY)", key, x.block.ID)
			}
		case !strings.HasPrefix(key, "tier.") && !knownParam(key):
			err = msgf.Errorf("{%s} is not a scenario key (sim params lists them)", key)
		case x.block == nil:
			err = msgf.Errorf("{%s} needs block = \"…\" to take its value from", key)
		}
		return tok
	})
	return err
}

// rubric reads rubric, pass and worked.
func (r *exerciseReader) rubric() error {
	x := r.x
	var err error
	if x.Worked, err = r.str("worked", false); err != nil {
		return err
	}
	v, ok := r.doc["rubric"]
	if !ok {
		if _, has := r.doc["pass"]; has {
			return r.fail("pass", "pass needs a rubric")
		}
		return nil
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 || len(list) > maxRubricPoints {
		return r.fail("rubric", `rubric: want 1 to %d key points, e.g. rubric = [{ point = "…", any = ["word", "synonym"] }]`, maxRubricPoints)
	}
	for i, e := range list {
		key := msgf.Sprintf("rubric[%d]", i)
		if x.lines[key] == 0 {
			key = "rubric"
		}
		m, ok := e.(map[string]any)
		if !ok {
			return r.fail(key, `rubric[%d]: want { point = "…", any = ["…"] }`, i)
		}
		for k := range m {
			if k != "point" && k != "any" {
				return r.fail(key, "rubric[%d]: unknown key %q (point, any)", i, k)
			}
		}
		p := RubricPoint{}
		p.Point, _ = m["point"].(string)
		if strings.TrimSpace(p.Point) == "" || len(p.Point) > MaxExerciseText {
			return r.fail(key, "rubric[%d]: point: say the key point in a sentence", i)
		}
		words, _ := m["any"].([]any)
		if len(words) == 0 || len(words) > maxSynonyms {
			return r.fail(key, "rubric[%d]: any: want 1 to %d words or phrases that name the point", i, maxSynonyms)
		}
		for j, w := range words {
			s, ok := w.(string)
			if !ok || strings.TrimSpace(normalizeAnswer(s)) == "" || len(s) > 200 {
				return r.fail(key, "rubric[%d]: any[%d]: want a word or phrase", i, j)
			}
			p.Any = append(p.Any, s)
		}
		x.Rubric = append(x.Rubric, p)
	}
	x.Pass = len(x.Rubric)
	if pv, ok := r.doc["pass"]; ok {
		n, ok := toInt(pv)
		if !ok || n < 1 || n > len(x.Rubric) {
			return r.fail("pass", "pass: want how many key points an answer must name, 1 to %d", len(x.Rubric))
		}
		x.Pass = n
	}
	return nil
}
