package sim

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

// Quantiles estimates percentiles of a stream of durations in bounded memory.
// The first exactSamples values are kept and give exact percentiles (linear
// interpolation between ranks); past that, values fold into a log-linear
// histogram whose buckets are at most 0.4 % wide. The zero value is ready.
type Quantiles struct {
	n      int
	sum    float64
	exact  []time.Duration
	sorted bool
	hist   []uint32 // nil until the exact buffer overflows
}

const (
	exactSamples = 4096
	subBits      = 7 // 128 sub-buckets per power of two
	subCount     = 1 << subBits
	histBuckets  = 2*subCount + (64-subBits-1)*subCount
)

// Add records one value; negative values count as zero.
func (q *Quantiles) Add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	q.n++
	q.sum += float64(d)
	if q.hist == nil {
		if len(q.exact) < exactSamples {
			q.exact = append(q.exact, d)
			q.sorted = false
			return
		}
		q.hist = make([]uint32, histBuckets)
		for _, v := range q.exact {
			q.hist[bucketOf(uint64(v))]++
		}
		q.exact = nil
	}
	q.hist[bucketOf(uint64(d))]++
}

// Count is the number of values added.
func (q *Quantiles) Count() int { return q.n }

// Mean is the exact arithmetic mean (0 when empty).
func (q *Quantiles) Mean() time.Duration {
	if q.n == 0 {
		return 0
	}
	return time.Duration(q.sum / float64(q.n))
}

// Quantile returns the p-quantile, 0 <= p <= 1 (0 when empty).
func (q *Quantiles) Quantile(p float64) time.Duration {
	if q.n == 0 {
		return 0
	}
	p = math.Min(math.Max(p, 0), 1)
	if q.hist == nil {
		if !q.sorted {
			slices.Sort(q.exact)
			q.sorted = true
		}
		pos := p * float64(len(q.exact)-1)
		i := int(pos)
		if i+1 >= len(q.exact) {
			return q.exact[len(q.exact)-1]
		}
		frac := pos - float64(i)
		return q.exact[i] + time.Duration(frac*float64(q.exact[i+1]-q.exact[i]))
	}
	rank := uint64(math.Round(p * float64(q.n-1)))
	var seen uint64
	for b, c := range q.hist {
		seen += uint64(c)
		if seen > rank {
			lo, hi := bucketBounds(b)
			return time.Duration(lo + (hi-lo)/2)
		}
	}
	return 0
}

// bucketOf maps v to a histogram bucket: values below 2*subCount have their
// own bucket; above, each power of two is split into subCount buckets.
func bucketOf(v uint64) int {
	if v < 2*subCount {
		return int(v)
	}
	n := bits.Len64(v)       // v in [2^(n-1), 2^n)
	shift := n - subBits - 1 // >= 1
	top := int(v >> shift)   // in [subCount, 2*subCount)
	return 2*subCount + (shift-1)*subCount + (top - subCount)
}

func bucketBounds(b int) (lo, hi uint64) {
	if b < 2*subCount {
		return uint64(b), uint64(b)
	}
	shift := (b-2*subCount)/subCount + 1
	top := uint64((b-2*subCount)%subCount + subCount)
	return top << shift, (top+1)<<shift - 1
}

// Stat is a percentile summary in milliseconds.
type Stat struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
}

// Stat summarises q, rounded to the microsecond.
func (q *Quantiles) Stat() Stat {
	return Stat{P50: roundMS(q.Quantile(0.5)), P90: roundMS(q.Quantile(0.9)), P99: roundMS(q.Quantile(0.99)), Mean: roundMS(q.Mean())}
}

func roundMS(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// Summary is the result of one variant: the object `sim run --json` prints
// for each variant, and what lab expectations refer to by name.
type Summary struct {
	Requests           int      `json:"requests"`
	FailedRequests     int      `json:"failed_requests"`
	Calls              int      `json:"calls"`
	Connects           int      `json:"connects"`
	Reused             int      `json:"reused"`
	Errors             int      `json:"errors"`
	PortErrors         int      `json:"port_errors"`
	Races              int      `json:"races"`
	TimeWaitPeak       int      `json:"time_wait_peak"`
	TimeWaitReused     int      `json:"time_wait_reused"` // client TIME_WAIT sockets connect() took over (tcp_tw_reuse)
	ServerTimeWaitPeak int      `json:"server_time_wait_peak"`
	OpenPeak           int      `json:"open_peak"`
	ThroughputRPS      float64  `json:"throughput_rps"`
	DurationS          float64  `json:"duration_s"`
	FirstPortErrorS    *float64 `json:"first_port_error_s"`
	RecoveredS         *float64 `json:"recovered_s"`

	NameLookup    Stat `json:"namelookup_ms"`
	Connect       Stat `json:"connect_ms"`
	AppConnect    Stat `json:"appconnect_ms"`
	StartTransfer Stat `json:"starttransfer_ms"`
	Total         Stat `json:"total_ms"`
	Response      Stat `json:"response_ms"`
	// NewConnTotal and ReusedTotal split Total by the calls that opened a
	// connection and those that ran on a kept one. When about half the
	// calls are of each kind, Total's median falls in the gap between the
	// two and moves with the slowest reused call: these stay put.
	NewConnTotal Stat `json:"new_conn_total_ms"`
	ReusedTotal  Stat `json:"reused_total_ms"`

	// NumConnects lists curl's num_connects for the first MaxListed calls,
	// in the order they ended; ConnectsPerWorker counts new connections by
	// worker process.
	NumConnects       []int `json:"num_connects"`
	ConnectsPerWorker []int `json:"connects_per_worker"`

	// A chain of tiers (chain.go): the tiers in order, each hop by the
	// tier it leads to, and each tier. The counts above are then totals
	// over the hops, and total_ms is the response time.
	Chain []string                `json:"chain,omitempty"`
	Hop   map[string]*HopSummary  `json:"hop,omitempty"`
	Tier  map[string]*TierSummary `json:"tier,omitempty"`
}

// MaxListed bounds the per-call list in a Summary.
const MaxListed = 1000

// Collector turns call and request events into a Summary in bounded memory.
// Both the model and the real-server harness feed it, so their summaries are
// computed the same way. Socket gauges (TIME_WAIT, open connections) are
// filled in by whoever observes them.
type Collector struct {
	s                               Summary
	phases                          [numCurlPhases]Quantiles // by CurlPhases
	response, newTotal, reusedTotal Quantiles
	firstStart, lastEnd             time.Duration
	started                         bool
}

// Add records one event; kinds other than calls, requests, port errors,
// opens and the client's TIME_WAIT sockets taken over are ignored.
func (c *Collector) Add(e *Event) {
	switch e.Kind {
	case KindCall:
		c.s.Calls++
		if e.Retried {
			c.s.Races++
		}
		if e.Error != "" {
			c.s.Errors++
		}
		if e.NewConn {
			c.s.Connects++
			if e.Worker > 0 {
				for len(c.s.ConnectsPerWorker) < e.Worker {
					c.s.ConnectsPerWorker = append(c.s.ConnectsPerWorker, 0)
				}
				c.s.ConnectsPerWorker[e.Worker-1]++
			}
		}
		if e.Reused {
			c.s.Reused++
		}
		if len(c.s.NumConnects) < MaxListed {
			c.s.NumConnects = append(c.s.NumConnects, e.NumConnects())
		}
		if e.Error == "" {
			for i := range c.phases {
				c.phases[i].Add(durationAt(e, curlOffsets[i]))
			}
			if e.NewConn {
				c.newTotal.Add(e.Total)
			} else {
				c.reusedTotal.Add(e.Total)
			}
		}
	case KindRequest:
		c.s.Requests++
		if e.Error != "" {
			c.s.FailedRequests++
		} else {
			c.response.Add(e.Total)
		}
		if !c.started || e.Start < c.firstStart {
			c.firstStart, c.started = e.Start, true
		}
		c.lastEnd = max(c.lastEnd, e.Start+e.Total)
	case KindPortError:
		c.s.PortErrors++
		if c.s.FirstPortErrorS == nil {
			t := roundS(e.At)
			c.s.FirstPortErrorS = &t
		}
	case KindTimeWaitEnd:
		if e.Reason == "reused" && e.By == "client" {
			c.s.TimeWaitReused++
		}
	case KindOpen:
		if c.s.FirstPortErrorS != nil && c.s.RecoveredS == nil {
			t := roundS(e.At)
			c.s.RecoveredS = &t
		}
	}
}

func roundS(d time.Duration) float64 { return math.Round(d.Seconds()*1e6) / 1e6 }

// Summary returns the statistics so far. Socket gauges are left as set.
func (c *Collector) Summary() Summary {
	s := c.s
	s.NumConnects = slices.Clone(s.NumConnects)
	s.ConnectsPerWorker = slices.Clone(s.ConnectsPerWorker)
	if s.NumConnects == nil {
		s.NumConnects = []int{}
	}
	if s.ConnectsPerWorker == nil {
		s.ConnectsPerWorker = []int{}
	}
	for i := range c.phases {
		*curlPhases[i].stat(&s) = c.phases[i].Stat()
	}
	s.Response = c.response.Stat()
	s.NewConnTotal = c.newTotal.Stat()
	s.ReusedTotal = c.reusedTotal.Stat()
	if span := c.lastEnd - c.firstStart; c.started && span > 0 {
		s.DurationS = roundS(span)
		s.ThroughputRPS = math.Round(float64(s.Requests-s.FailedRequests)/span.Seconds()*1000) / 1000
	}
	return s
}

// SetSockets records the socket gauges' peaks.
func (c *Collector) SetSockets(timeWaitPeak, serverTimeWaitPeak, openPeak int) {
	c.s.TimeWaitPeak, c.s.ServerTimeWaitPeak, c.s.OpenPeak = timeWaitPeak, serverTimeWaitPeak, openPeak
}

// A Sample is one point of the time series: gauges at T, counts since the
// previous sample.
type Sample struct {
	T              float64 `json:"t_s"`
	Open           int     `json:"open"`
	TimeWait       int     `json:"time_wait"`
	ServerTimeWait int     `json:"server_time_wait"`
	PortsInUse     int     `json:"ports_in_use"`
	Requests       int     `json:"requests"`
	Connects       int     `json:"connects"`
	Errors         int     `json:"errors"`
	// Hops: a chain's gauges per hop, in the chain's order.
	Hops []HopSample `json:"hops,omitempty"`
}

// MaxSamples bounds a Series: when full, neighbours merge and the interval
// doubles.
const MaxSamples = 2000

// Series is a bounded time series of Samples.
type Series struct {
	Interval time.Duration
	Samples  []Sample
	pending  int // samples merged into the last one so far
	every    int // raw samples per stored sample
}

// Append adds a raw sample taken every s.Interval (as first set).
func (s *Series) Append(x Sample) {
	if s.every == 0 {
		s.every = 1
	}
	if s.pending > 0 {
		last := &s.Samples[len(s.Samples)-1]
		last.T, last.Open, last.TimeWait, last.ServerTimeWait, last.PortsInUse = x.T, x.Open, x.TimeWait, x.ServerTimeWait, x.PortsInUse
		last.Hops = x.Hops
		last.Requests += x.Requests
		last.Connects += x.Connects
		last.Errors += x.Errors
	} else {
		s.Samples = append(s.Samples, x)
	}
	s.pending = (s.pending + 1) % s.every
	if len(s.Samples) == MaxSamples && s.pending == 0 {
		half := s.Samples[:0]
		for i := 0; i+1 < len(s.Samples); i += 2 {
			a, b := s.Samples[i], s.Samples[i+1]
			b.Requests += a.Requests
			b.Connects += a.Connects
			b.Errors += a.Errors
			half = append(half, b)
		}
		s.Samples = half
		s.every *= 2
		s.Interval *= 2
	}
}
