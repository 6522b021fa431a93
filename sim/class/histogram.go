package class

import (
	"math"
	"sort"
	"strconv"
)

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
