package class

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/connlab/connlab/sim/lab"
)

// Limits bound what one class may hold and what one connection may send.
type Limits struct {
	MaxStudents int     // students who may join (default 300)
	MaxName     int     // runes in a display name (default 32)
	MaxText     int     // bytes of an explain answer (default 1000)
	MaxMessage  int64   // bytes of one WebSocket message (default 4096)
	Rate        float64 // messages per second a connection may keep up (default 5)
	Burst       int     // messages a connection may send at once (default 20)
	Strikes     int     // refused messages before the connection is closed (default 50)
	MaxTeachers int     // teacher pages open at once (default 8)
	MaxConns    int     // student connections open at once (default 2 × MaxStudents)
	Bins        int     // histogram bins of a number (default 10)
	Texts       int     // explain answers shown per exercise (default 40)
}

// DefaultLimits are the limits of a class of 300.
var DefaultLimits = Limits{MaxStudents: 300, MaxName: 32, MaxText: 1000, MaxMessage: 4096, Rate: 5, Burst: 20,
	Strikes: 50, MaxTeachers: 8, Bins: 10, Texts: 40}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxStudents > 0 {
		d.MaxStudents = l.MaxStudents
	}
	if l.MaxName > 0 {
		d.MaxName = l.MaxName
	}
	if l.MaxText > 0 {
		d.MaxText = l.MaxText
	}
	if l.MaxMessage > 0 {
		d.MaxMessage = l.MaxMessage
	}
	if l.Rate > 0 {
		d.Rate = l.Rate
	}
	if l.Burst > 0 {
		d.Burst = l.Burst
	}
	if l.Strikes > 0 {
		d.Strikes = l.Strikes
	}
	if l.MaxTeachers > 0 {
		d.MaxTeachers = l.MaxTeachers
	}
	if l.Bins > 0 {
		d.Bins = l.Bins
	}
	if l.Texts > 0 {
		d.Texts = l.Texts
	}
	d.MaxConns = l.MaxConns
	if d.MaxConns <= 0 {
		d.MaxConns = 2 * d.MaxStudents
	}
	return d
}

// SanitizeName turns what a student typed into a display name: control and
// formatting characters (bidi overrides, zero-width joiners) removed, runs
// of spaces collapsed, at most max runes. An empty result is an error.
func SanitizeName(s string, max int) (string, error) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r), unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs), r == utf8.RuneError:
			continue
		case !unicode.IsPrint(r) && !unicode.IsMark(r):
			continue
		}
		if n >= max {
			break
		}
		if space {
			if n+1 >= max {
				break
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	out := b.String()
	if out == "" {
		return "", fmt.Errorf("write a display name (1 to %d characters)", max)
	}
	return out, nil
}

// exKey names an exercise in a class.
type exKey struct{ Lab, ID string }

// An answer is one student's latest prediction for an exercise.
type answer struct {
	Raw   string
	Value float64 // number
	Rel   float64 // number, per-student seeds: % of the student's own answer
	Hit   bool    // within tolerance of the student's own answer
	Known bool    // Hit was computed
	Pick  int     // choice: 1-based number of the choice as the student saw it
	Orig  int     // choice: 1-based number in the lab's own order
	Text  string  // explain
}

type student struct {
	name    string
	token   string
	seed    uint64
	answers map[exKey]answer
}

// RandomSeed picks a seed, 1 to 2^31: a class's or a student's.
func RandomSeed() uint64 {
	var b [4]byte
	rand.Read(b[:])
	return uint64(b[0])<<23 | uint64(b[1])<<15 | uint64(b[2])<<7 | uint64(b[3]>>1) + 1
}

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Histogram is what the teacher's page draws for one exercise.
type Histogram struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"` // students who answered
	// Numbers: Edges has one more element than Counts; bin i holds values
	// v with Edges[i] <= v < Edges[i+1] (the last bin includes its upper
	// edge). Below and Above count values outside the edges. Relative: the
	// values are each student's prediction as a percentage of their own
	// answer (per-student seeds).
	Edges    []float64 `json:"edges,omitempty"`
	Counts   []int     `json:"counts"`
	Below    int       `json:"below,omitempty"`
	Above    int       `json:"above,omitempty"`
	Relative bool      `json:"relative,omitempty"`
	Unit     string    `json:"unit,omitempty"`
	// Choices: Labels in the lab's order, Counts per label.
	Labels []string `json:"labels,omitempty"`
	// Explain: the latest answers, anonymous, at most Limits.Texts.
	Texts []string `json:"texts,omitempty"`
	More  int      `json:"more,omitempty"`
}

// NumberHistogram bins values into at most bins bins of a round width.
// With 8 values or more, values far outside the others (beyond three
// interquartile ranges of the quartiles) are counted as Below and Above
// instead, so one absurd guess cannot squash everyone else's into one bar.
func NumberHistogram(values []float64, bins int) Histogram {
	h := Histogram{Kind: "number", Count: len(values), Counts: []int{}}
	if len(values) == 0 {
		return h
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	lo, hi := sorted[0], sorted[len(sorted)-1]
	if n := len(sorted); n >= 8 {
		q1, q3, med := sorted[n/4], sorted[(3*n)/4], sorted[n/2]
		w := 3 * (q3 - q1)
		if w == 0 {
			w = math.Max(math.Abs(med), 1)
		}
		i := sort.SearchFloat64s(sorted, q1-w)                            // first value >= q1 - w
		j := sort.Search(n, func(k int) bool { return sorted[k] > q3+w }) // first value > q3 + w
		lo, hi = sorted[i], sorted[j-1]
	}
	if lo == hi {
		h.Edges = []float64{lo, hi}
	} else {
		step := niceStep((hi - lo) / float64(bins))
		start := math.Floor(lo/step) * step
		n := int(math.Floor((hi-start)/step)) + 1
		n = min(max(n, 1), bins+1)
		for i := 0; i <= n; i++ {
			h.Edges = append(h.Edges, roundTo(start+float64(i)*step, step))
		}
		if h.Edges[len(h.Edges)-1] < hi {
			h.Edges[len(h.Edges)-1] = hi
		}
	}
	h.Counts = make([]int, len(h.Edges)-1)
	last := h.Edges[len(h.Edges)-1]
	for _, v := range values {
		switch {
		case v < h.Edges[0]:
			h.Below++
		case v > last:
			h.Above++
		default:
			// the last edge at or below v; the top edge belongs to the last bin
			i := sort.Search(len(h.Edges), func(i int) bool { return h.Edges[i] > v }) - 1
			h.Counts[min(i, len(h.Counts)-1)]++
		}
	}
	return h
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

func roundTo(v, step float64) float64 {
	dec := max(0, -int(math.Floor(math.Log10(step)))+2)
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', dec, 64), 64)
	return f
}

// relative is a prediction as a percentage of the right answer, kept within
// ±1000 % so the histogram stays readable.
func relative(guess, ans float64) float64 {
	var r float64
	switch {
	case ans == 0 && guess == 0:
		r = 100
	case ans == 0:
		r = math.Copysign(1000, guess)
	default:
		r = guess / ans * 100
	}
	return math.Max(-1000, math.Min(1000, math.Round(r*10)/10))
}

// judge records what a student's input means for an exercise instance.
func judge(in *lab.Instance, raw string, maxText int) (answer, error) {
	a := answer{Raw: raw}
	switch in.Kind {
	case "explain":
		t := strings.TrimSpace(strings.ToValidUTF8(raw, ""))
		if t == "" {
			return a, fmt.Errorf("write your explanation first")
		}
		if len(t) > maxText {
			return a, fmt.Errorf("at most %d bytes", maxText)
		}
		a.Text = t
		return a, nil
	case "number":
		f, err := lab.ParseNumber(raw, in.Unit)
		if err != nil {
			return a, err
		}
		if math.Abs(f) > 1e15 {
			return a, fmt.Errorf("want a number below 10^15")
		}
		a.Value = f
	}
	v, err := in.Check(raw)
	if err != nil {
		return a, err
	}
	a.Pick = v.Choice
	return a, nil
}
