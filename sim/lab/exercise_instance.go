package lab

import (
	"context"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
)

// Instances: an exercise as one student sees it, for a seed (the values
// vary picks, the order of the choices), with its answer and the command
// that reproduces it.

// fillPlaceholders returns text with each placeholder replaced by f's
// answer: "{{" and "}}" (key "", literal braces) and {key}, key a lower-case
// name ([a-z][a-z0-9_.]*: a tier's key is tier.NAME.KEY). Other braces stay
// as they are.
func fillPlaceholders(text string, f func(tok, key string) string) string {
	var b strings.Builder
	start := 0
	for i := 0; i < len(text); {
		tok, key := placeholderAt(text, i)
		if tok == "" {
			i++
			continue
		}
		b.WriteString(text[start:i])
		b.WriteString(f(tok, key))
		i += len(tok)
		start = i
	}
	if start == 0 {
		return text
	}
	b.WriteString(text[start:])
	return b.String()
}

// placeholderAt is the placeholder that begins at text[i], if any.
func placeholderAt(text string, i int) (tok, key string) {
	rest := text[i:]
	switch {
	case strings.HasPrefix(rest, "{{"):
		return "{{", ""
	case strings.HasPrefix(rest, "}}"):
		return "}}", ""
	case len(rest) > 2 && rest[0] == '{' && rest[1] >= 'a' && rest[1] <= 'z':
		j := 2
		for j < len(rest) && (rest[j] >= 'a' && rest[j] <= 'z' || rest[j] >= '0' && rest[j] <= '9' || rest[j] == '_' || rest[j] == '.') {
			j++
		}
		if j < len(rest) && rest[j] == '}' {
			return rest[:j+1], rest[1:j]
		}
	}
	return "", ""
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
				return &Error{File: x.File, Line: line, Msg: msgf.Sprintf("exercise %q: %svariant %q of block %q: %s", x.ID, what, v.Name, x.block.ID, msg)}
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
			if err := check(over, vr.Line, msgf.Sprintf("vary %s = %v: ", vr.Key, val)); err != nil {
				return err
			}
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
	ID       string       `json:"id"`
	Kind     ExerciseKind `json:"kind"`
	Title    string       `json:"title,omitempty"`
	Question string       `json:"question"`
	Unit     string       `json:"unit,omitempty"`
	Choices  []string     `json:"choices,omitempty"`
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
	Rubric        []RubricPoint     `json:"rubric,omitempty"` // explain: the key points, shown after
	Pass          int               `json:"pass,omitempty"`   // how many the answer must name
	Worked        string            `json:"worked,omitempty"` // a worked example, before the question
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
			for _, n := range s.TierNames() {
				k := "tier." + n + "." + p.Key
				if v, ok := s.Get(k); ok {
					values[k] = v
				}
			}
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
			cmd = append(cmd, "--set", ShellQuote(k+"="+ref.Set[k]))
		}
		ref.Command = strings.Join(append(cmd, ShellQuote(x.File)), " ")
		in.Scenario = ref
	}
	used := map[string]string{}
	fill := func(text, answer string) string {
		return fillPlaceholders(text, func(m, k string) string {
			switch m {
			case "{{":
				return "{"
			case "}}":
				return "}"
			case "{answer}":
				return answer
			}
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
		correct := x.Correct
		if x.Computed() {
			key := x.cacheKey(over)
			c, ok := cache.get(key)
			if !ok {
				n, err := x.CorrectChoice(ctx, over)
				if err != nil {
					return nil, err
				}
				c = float64(n)
				cache.put(key, c)
			}
			correct = int(c)
		}
		for i, o := range x.ChoiceOrder(seed) {
			in.Choices = append(in.Choices, fill(x.Choices[o], ""))
			if o == correct-1 {
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
	in.Worked = fill(x.Worked, "")
	if len(x.Rubric) > 0 {
		in.Rubric, in.Pass = x.Rubric, x.Pass
	}
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

// ChoiceOrder is the order a seed shows a choice exercise's choices in:
// the lab's index (0-based) of each choice shown. Seed 0 keeps the lab's
// order.
func (x *Exercise) ChoiceOrder(seed uint64) []int {
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
	return order
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
	return msgf.Sprint(st.Value)
}

// ShellQuote quotes s for a POSIX shell when it needs quoting: a word of
// ASCII letters and digits, -_=./:,+@% and non-ASCII characters (which no
// shell treats specially: "250µs") stays as it is, anything else goes in
// single quotes. The page's commands quote the same way
// (assets/ts/sim/helpers.ts; testdata cases shared with it).
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return r < 0x80 && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_=./:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
