package sim

import (
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/connlab/connlab/sim/internal/msgf"
)

// A ParamError names the scenario key at fault. The lab reader adds the file
// and line.
type ParamError struct {
	Key string
	Msg string
}

func (e *ParamError) Error() string {
	if e.Key == "" {
		return e.Msg
	}
	return e.Key + ": " + e.Msg
}

func paramErr(key, format string, args ...any) *ParamError {
	return &ParamError{Key: key, Msg: msgf.Sprintf(format, args...)}
}

// A Param describes one scenario key: its kind, limits and help. The widget
// builds its controls from this list (sim params --json).
type Param struct {
	Key     string    `json:"key"`
	Kind    ParamKind `json:"kind"`
	Enum    []string  `json:"enum,omitempty"`
	Min     string    `json:"min,omitempty"`
	Max     string    `json:"max,omitempty"`
	Unit    string    `json:"unit,omitempty"`
	Default string    `json:"default"`
	Help    string    `json:"help"`
	// Fixed: a block's value is shown as it is, not as a control a reader
	// can change (the page's widget lists it beside the controls).
	Fixed bool `json:"fixed,omitempty"`

	index int
	min   float64 // in the field's unit (nanoseconds for durations)
	max   float64
	limit bool
}

var (
	durationType  = reflect.TypeFor[time.Duration]()
	portRangeType = reflect.TypeFor[PortRange]()
	setsType      = reflect.TypeFor[[][]string]()
	sharesType    = reflect.TypeFor[[]float64]()
	params        []Param
	paramByKey    = map[string]*Param{}
)

func init() {
	t := reflect.TypeFor[Scenario]()
	def := reflect.ValueOf(Default())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Tag.Get("key") == "-" {
			continue // set through its own keys (tier.NAME.KEY)
		}
		p := Param{Key: f.Tag.Get("key"), Help: f.Tag.Get("help"), Unit: f.Tag.Get("unit"), Fixed: f.Tag.Get("fixed") == "true", index: i}
		if f.Type == reflect.TypeFor[Reuse]() {
			// Each value's meaning lives beside it (vocab.go).
			var vs []string
			for _, r := range reuses {
				vs = append(vs, string(r)+" ("+reuseMeaning[r]+")")
			}
			p.Help += ": " + strings.Join(vs, ", ")
		}
		switch {
		case f.Type == durationType:
			p.Kind = ParamDuration
		case f.Type == portRangeType:
			p.Kind = ParamPorts
		case f.Type == setsType:
			p.Kind = ParamSets
		case f.Type == sharesType:
			p.Kind = ParamShares
		case f.Type.Kind() == reflect.Int:
			p.Kind = ParamInt
		case f.Type.Kind() == reflect.Float64:
			p.Kind = ParamFloat
		case f.Type.Kind() == reflect.Bool:
			p.Kind = ParamBool
		case f.Type.Kind() == reflect.String:
			p.Kind = ParamEnum
			e, ok := enumFor(f)
			if !ok {
				panic("sim: scenario field " + f.Name + " has no vocabulary type")
			}
			p.Enum = append([]string(nil), e.values...)
		default:
			panic("sim: unsupported scenario field " + f.Name)
		}
		if lo, hi := f.Tag.Get("min"), f.Tag.Get("max"); lo != "" || hi != "" {
			p.Min, p.Max, p.limit = lo, hi, true
			p.min, p.max = mustLimit(p.Kind, lo), mustLimit(p.Kind, hi)
		}
		p.Default = formatValue(def.Field(i))
		params = append(params, p)
	}
	for i := range params {
		paramByKey[params[i].Key] = &params[i]
	}
}

func mustLimit(kind ParamKind, s string) float64 {
	if kind == "duration" {
		d, err := time.ParseDuration(s)
		if err != nil {
			panic(err)
		}
		return float64(d)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(err)
	}
	return v
}

// Params lists every scenario key in declaration order.
func Params() []Param { return append([]Param(nil), params...) }

// LookupParam returns the description of key, or false.
func LookupParam(key string) (Param, bool) {
	p, ok := paramByKey[key]
	if !ok {
		return Param{}, false
	}
	return *p, true
}

// Keys lists every scenario key, sorted.
func Keys() []string {
	keys := make([]string, 0, len(params))
	for _, p := range params {
		keys = append(keys, p.Key)
	}
	sort.Strings(keys)
	return keys
}

// Get returns the value of key formatted as Set accepts it.
func (s *Scenario) Get(key string) (string, bool) {
	if isTierKey(key) {
		return s.getTierKey(key)
	}
	p, ok := paramByKey[key]
	if !ok {
		return "", false
	}
	return formatValue(reflect.ValueOf(s).Elem().Field(p.index)), true
}

func formatValue(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		return FormatDuration(x)
	case PortRange:
		return x.String()
	case [][]string:
		parts := make([]string, len(x))
		for i, set := range x {
			parts[i] = "[" + strings.Join(quoteAll(set), ", ") + "]"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []float64:
		parts := make([]string, len(x))
		for i, v := range x {
			parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		return msgf.Sprint(x)
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// FormatDuration prints d the way a lab writes it: "75s", "12ms", "1.5ms",
// "250µs" rather than Go's "1m15s".
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return msgf.Sprintf("%dh", d/time.Hour)
	case d >= time.Second && d%time.Millisecond == 0:
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
	case d >= time.Millisecond && d%time.Microsecond == 0:
		return strconv.FormatFloat(float64(d)/1e6, 'f', -1, 64) + "ms"
	default:
		return d.String()
	}
}

// Set assigns one key. The value is what a TOML decoder produces (string,
// int64, float64, bool, []any) or a plain string from a command line.
// Durations need a unit ("30ms"); the error names the key and what it wants.
func (s *Scenario) Set(key string, value any) error {
	if isTierKey(key) {
		return s.setTierKey(key, value)
	}
	p, ok := paramByKey[key]
	if !ok {
		return paramErr(key, "unknown key%s", suggest(key))
	}
	f := reflect.ValueOf(s).Elem().Field(p.index)
	switch p.Kind {
	case "duration":
		str, ok := value.(string)
		if !ok {
			if n, isNum := toFloat(value); isNum && n == 0 {
				str = "0s"
			} else {
				return paramErr(key, "want a duration with its unit, e.g. \"%s\", got %s", p.Default, describe(value))
			}
		}
		d, err := time.ParseDuration(strings.TrimSpace(str))
		if err != nil {
			return paramErr(key, "want a duration with its unit, e.g. \"%s\", got %q", p.Default, str)
		}
		if err := p.check(float64(d), FormatDuration(d)); err != nil {
			return err
		}
		f.SetInt(int64(d))
	case "int":
		n, ok := toFloat(value)
		if !ok || n != math.Trunc(n) || math.IsInf(n, 0) {
			return paramErr(key, "want a whole number, got %s", describe(value))
		}
		if err := p.check(n, strconv.FormatFloat(n, 'f', -1, 64)); err != nil {
			return err
		}
		f.SetInt(int64(n))
	case "float":
		n, ok := toFloat(value)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return paramErr(key, "want a number, got %s", describe(value))
		}
		if err := p.check(n, strconv.FormatFloat(n, 'g', -1, 64)); err != nil {
			return err
		}
		f.SetFloat(n)
	case "bool":
		switch v := value.(type) {
		case bool:
			f.SetBool(v)
		case string:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return paramErr(key, "want true or false, got %q", v)
			}
			f.SetBool(b)
		default:
			return paramErr(key, "want true or false, got %s", describe(value))
		}
	case "enum":
		var str string
		switch v := value.(type) {
		case string:
			str = v
		case float64, int64, int:
			str = msgf.Sprint(v) // tls = 1.3 written without quotes
		default:
			return paramErr(key, "want one of %s, got %s", strings.Join(p.Enum, ", "), describe(value))
		}
		for _, e := range p.Enum {
			if e == str {
				f.SetString(str)
				return nil
			}
		}
		return paramErr(key, "want one of %s, got %q", strings.Join(p.Enum, ", "), str)
	case "ports":
		str, ok := value.(string)
		if !ok {
			return paramErr(key, "want \"low-high\", e.g. \"32768-60999\", got %s", describe(value))
		}
		r, err := ParsePortRange(str)
		if err != nil {
			return paramErr(key, "%v", err)
		}
		f.Set(reflect.ValueOf(r))
	case "sets":
		sets, err := toSets(value)
		if err != nil {
			return paramErr(key, "%v", err)
		}
		f.Set(reflect.ValueOf(sets))
	case "shares":
		shares, err := toShares(value)
		if err != nil {
			return paramErr(key, "%v", err)
		}
		f.Set(reflect.ValueOf(shares))
	}
	return nil
}

func (p *Param) check(v float64, shown string) error {
	if p.limit && (v < p.min || v > p.max) {
		return paramErr(p.Key, "%s is out of range [%s, %s]", shown, p.Min, p.Max)
	}
	return nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case nil:
		return "nothing"
	case []any:
		return "a list"
	case map[string]any:
		return "a table"
	default:
		return msgf.Sprintf("%v", x)
	}
}

// maxShares bounds a worker_shares list: one share per worker at most.
const maxShares = 10000

// toShares accepts a list of numbers, [0.7, 0.3], or the same written on a
// command line, "0.7,0.3" (brackets allowed); an empty list clears it.
// Each share is a weight: the list need not add up to 1, but something in
// it must be above 0.
func toShares(v any) ([]float64, error) {
	const want = "want a list of shares, one per worker, e.g. [0.7, 0.3]"
	var items []any
	switch x := v.(type) {
	case []float64:
		for _, f := range x {
			items = append(items, f)
		}
	case []any:
		items = x
	case string:
		x = strings.TrimSpace(x)
		x = strings.TrimSuffix(strings.TrimPrefix(x, "["), "]")
		for _, f := range strings.Split(x, ",") {
			if f = strings.TrimSpace(f); f != "" {
				items = append(items, f)
			}
		}
	default:
		return nil, msgf.Errorf("%s, got %s", want, describe(v))
	}
	if len(items) == 0 {
		return nil, nil
	}
	if len(items) > maxShares {
		return nil, msgf.Errorf("%d shares: at most %d, one per worker", len(items), maxShares)
	}
	out := make([]float64, len(items))
	sum := 0.0
	for i, e := range items {
		f, ok := toFloat(e)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, msgf.Errorf("%s; share %d is %s", want, i+1, describe(e))
		}
		if f < 0 {
			return nil, msgf.Errorf("share %d is %g: a share cannot be negative", i+1, f)
		}
		out[i] = f
		sum += f
	}
	if sum <= 0 {
		return nil, msgf.Errorf("every share is 0: at least one worker must take connections")
	}
	return out, nil
}

// toSets accepts [["dns","connect"], ["dns"]], a single set ["dns","connect"]
// or a comma-separated string "dns,connect" (from a command line).
func toSets(v any) ([][]string, error) {
	const want = `want a list of sets, e.g. [["dns", "connect", "ssl_session"]]`
	switch x := v.(type) {
	case string:
		return [][]string{splitList(x)}, nil
	case []any:
		if len(x) == 0 {
			return nil, msgf.Errorf("%s, got an empty list", want)
		}
		if _, flat := x[0].(string); flat {
			set, err := toStrings(x)
			if err != nil {
				return nil, err
			}
			return [][]string{set}, nil
		}
		out := make([][]string, 0, len(x))
		for _, e := range x {
			l, ok := e.([]any)
			if !ok {
				return nil, msgf.Errorf("%s, got %s inside", want, describe(e))
			}
			set, err := toStrings(l)
			if err != nil {
				return nil, err
			}
			out = append(out, set)
		}
		return out, nil
	}
	return nil, msgf.Errorf("%s, got %s", want, describe(v))
}

func toStrings(l []any) ([]string, error) {
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, msgf.Errorf("want option names such as \"dns\", got %s", describe(e))
		}
		out = append(out, s)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// suggest proposes the nearest known key for a misspelt one.
func suggest(key string) string {
	best, bestD := "", 4
	for _, p := range params {
		if d := editDistance(key, p.Key); d < bestD {
			best, bestD = p.Key, d
		}
	}
	if best == "" {
		return " (sim params lists them)"
	}
	return msgf.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
