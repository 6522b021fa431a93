package measure

import (
	"math"
	"slices"
	"time"
)

// HostSummary is what one host's calls say about connection reuse. It is an
// estimate from the reader's own measurements, not a model run: the saving
// is the setups a pool of the smallest size that fits would not have
// done, each costing the median setup those calls measured.
type HostSummary struct {
	Host     string  `json:"host"`
	Calls    int     `json:"calls"`
	NewConns int     `json:"new_connections"`
	Reused   int     `json:"reused"`
	Share    float64 `json:"reused_share"` // reused / calls, 0 to 1

	New       Phases `json:"new"`          // the calls that opened a connection
	ReusedPhs Phases `json:"reused_calls"` // the calls that reused one

	// MinPool is the fewest connections a pool needs: the peak number of
	// calls at once when every call has a start, else 1 (MinPoolFrom says
	// which).
	MinPool     int    `json:"min_pool"`
	MinPoolFrom string `json:"min_pool_from"` // "peak_concurrency" or "no_start_times"

	// SetupP50 is the median DNS+TCP+TLS of the SetupN new-connection
	// calls that measured a setup (Chromium reports none for a connection
	// it opened before the request, by a preconnect).
	SetupP50     float64 `json:"setup_p50_ms"`
	SetupN       int     `json:"setup_n"`
	Avoidable    int     `json:"avoidable_connections"`
	SavedMS      float64 `json:"saved_ms"`          // Avoidable × SetupP50
	SavedPerCall float64 `json:"saved_per_call_ms"` // SavedMS / Calls
}

// Stat is a median and a 90th percentile, in ms.
type Stat struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
}

// Phases are a group of calls' phases: curl's cumulative times and the
// setup; all zero when N is 0.
type Phases struct {
	N             int  `json:"n"`
	NameLookup    Stat `json:"namelookup_ms"`
	Connect       Stat `json:"connect_ms"`
	AppConnect    Stat `json:"appconnect_ms"`
	StartTransfer Stat `json:"starttransfer_ms"`
	Total         Stat `json:"total_ms"`
	Setup         Stat `json:"setup_ms"`
}

// Summarize sums the calls up per host, in the order hosts first appear.
func Summarize(calls []Call) []HostSummary {
	var hosts []string
	by := map[string][]Call{}
	for _, c := range calls {
		if by[c.Host] == nil {
			hosts = append(hosts, c.Host)
		}
		by[c.Host] = append(by[c.Host], c)
	}
	out := make([]HostSummary, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, summarize(h, by[h]))
	}
	return out
}

func summarize(host string, calls []Call) HostSummary {
	s := HostSummary{Host: host, Calls: len(calls)}
	var fresh, reused []Call
	for _, c := range calls {
		if c.NewConn {
			fresh = append(fresh, c)
		} else {
			reused = append(reused, c)
		}
	}
	s.NewConns, s.Reused = len(fresh), len(reused)
	s.Share = float64(s.Reused) / float64(s.Calls)
	s.New, s.ReusedPhs = phases(fresh), phases(reused)
	var setups []float64
	for _, c := range fresh {
		if x := c.Setup(); x > 0 {
			setups = append(setups, x)
		}
	}
	if s.SetupN = len(setups); s.SetupN > 0 {
		slices.Sort(setups)
		s.SetupP50 = quantile(setups, 0.5)
	}
	s.MinPool, s.MinPoolFrom = 1, "no_start_times"
	if peak, ok := peakConcurrency(calls); ok {
		// A call that took no time still needed a connection.
		s.MinPool, s.MinPoolFrom = max(peak, 1), "peak_concurrency"
	}
	s.Avoidable = max(0, s.NewConns-s.MinPool)
	s.SavedMS = float64(s.Avoidable) * s.SetupP50
	s.SavedPerCall = s.SavedMS / float64(s.Calls)
	return s
}

func phases(calls []Call) Phases {
	p := Phases{N: len(calls)}
	if len(calls) == 0 {
		return p
	}
	get := func(f func(*Call) float64) Stat {
		v := make([]float64, len(calls))
		for i := range calls {
			v[i] = f(&calls[i])
		}
		slices.Sort(v)
		return Stat{P50: quantile(v, 0.5), P90: quantile(v, 0.9)}
	}
	p.NameLookup = get(func(c *Call) float64 { return c.NameLookup })
	p.Connect = get(func(c *Call) float64 { return c.Connect })
	p.AppConnect = get(func(c *Call) float64 { return c.AppConnect })
	p.StartTransfer = get(func(c *Call) float64 { return c.StartTransfer })
	p.Total = get(func(c *Call) float64 { return c.Total })
	p.Setup = get((*Call).Setup)
	return p
}

// quantile interpolates between the closest ranks of sorted v, rounded to
// the microsecond.
func quantile(v []float64, q float64) float64 {
	pos := q * float64(len(v)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(v)-1)
	x := v[lo] + (v[hi]-v[lo])*(pos-float64(lo))
	return math.Round(x*1000) / 1000
}

// peakConcurrency is the most calls in flight at once, each from its start
// for its total; a call ending when another starts does not overlap it.
func peakConcurrency(calls []Call) (int, bool) {
	type edge struct {
		at    time.Time
		delta int
	}
	edges := make([]edge, 0, 2*len(calls))
	for _, c := range calls {
		if !c.HasStart {
			return 0, false
		}
		edges = append(edges, edge{c.Start, 1}, edge{c.Start.Add(time.Duration(c.Total * float64(time.Millisecond))), -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	n, peak := 0, 0
	for _, e := range edges {
		n += e.delta
		peak = max(peak, n)
	}
	return peak, true
}
