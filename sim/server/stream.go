package server

import (
	"runtime"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
)

// A stream turns one run's events into `events` messages: at most
// BatchEvents events or BatchWait of time per batch, one variant per batch,
// events in the order they came. In model mode at most ModelEvents events
// of a variant are sent (then one `truncated`), and a full client queue
// slows the model down for up to BackpressureWait in total before batches
// are dropped. In real mode nothing waits and each variant's events also
// feed a Collector for the periodic `stats`.
type stream struct {
	c       *client
	id      string
	limit   int  // events per variant (0: no limit)
	collect bool // keep a Collector per variant (real mode)

	mu       sync.Mutex
	variant  string
	buf      []byte
	n        int       // events in buf
	opened   time.Time // when buf got its first event
	gen      int       // batch number, so a stale timer does nothing
	timer    *time.Timer
	sent     map[string]int
	cut      map[string]bool
	patience time.Duration
	cols     map[string]*sim.Collector
	changed  map[string]bool // variants with events since their last stats
	order    []string        // variants in the order they first appeared
	closed   bool
}

func newStream(c *client, id string, limit int, collect bool, patience time.Duration) *stream {
	return &stream{
		c: c, id: id, limit: limit, collect: collect, patience: patience,
		sent: map[string]int{}, cut: map[string]bool{},
		cols: map[string]*sim.Collector{}, changed: map[string]bool{},
	}
}

// add is the run's sink. The event is encoded at once: the pointer is only
// valid during the call.
func (st *stream) add(variant string, e *sim.Event) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	if st.collect {
		col := st.cols[variant]
		if col == nil {
			col = &sim.Collector{}
			st.cols[variant] = col
			st.order = append(st.order, variant)
		}
		col.Add(e)
		st.changed[variant] = true
	}
	if variant != st.variant {
		st.flushLocked()
		st.variant = variant
	}
	if st.limit > 0 && st.sent[variant] >= st.limit {
		if !st.cut[variant] {
			st.cut[variant] = true
			st.flushLocked()
			st.c.send(encode(outTruncated{Type: "truncated", ID: st.id, Variant: variant, Sent: st.sent[variant]}))
		}
		return
	}
	lim := st.c.s.limits
	if st.n == 0 {
		st.buf = appendBatchHead(getBuf(), st.id, variant)
		st.opened = time.Now()
		st.gen++
		gen := st.gen
		st.timer = time.AfterFunc(lim.BatchWait, func() {
			st.mu.Lock()
			defer st.mu.Unlock()
			if st.gen == gen && st.n > 0 {
				st.flushLocked()
			}
		})
	} else {
		st.buf = append(st.buf, ',')
	}
	st.buf = e.AppendCompactJSON(st.buf)
	st.n++
	st.sent[variant]++
	if st.n >= lim.BatchEvents || time.Since(st.opened) >= lim.BatchWait {
		st.flushLocked()
	}
}

func (st *stream) flushLocked() {
	if st.n == 0 {
		return
	}
	st.timer.Stop()
	st.gen++
	data := st.buf
	st.buf, st.n = nil, 0
	st.c.sendBatch(st.id, data, &st.patience) // closes it with server_ms
	// A model run computes without blocking: let the write pumps (and
	// other pages' goroutines) run now rather than at the scheduler's next
	// preemption, up to 10 ms later: it cuts the delivery delay when many
	// pages stream at once (BenchmarkConcurrentClients).
	runtime.Gosched()
}

// flush sends the batch in progress (at the end of a variant).
func (st *stream) flush() {
	st.mu.Lock()
	st.flushLocked()
	st.mu.Unlock()
}

// drain flushes, then waits (within the run's patience) until the client
// has taken every batch: a model run keeps its slot until its events are on
// their way, so the pages streaming at once share the bandwidth between a
// few runs and each batch arrives soon after it is made.
func (st *stream) drain() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.flushLocked()
	st.c.waitDrained(&st.patience)
}

// close flushes and ignores any later event.
func (st *stream) close() {
	st.mu.Lock()
	st.flushLocked()
	st.closed = true
	st.mu.Unlock()
}

// sendStats sends the running summary of every variant that had events
// since its last stats (real mode), after the events it counts.
func (st *stream) sendStats() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	st.flushLocked()
	for _, v := range st.order {
		if !st.changed[v] {
			continue
		}
		st.changed[v] = false
		sum := st.cols[v].Summary()
		st.c.send(encode(outStats{Type: "stats", ID: st.id, Variant: v, Summary: &sum}))
	}
}
