package server

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/web"
)

// A stream turns one run's events into `events` messages: at most
// BatchEvents events or BatchWait of time per batch, one variant per batch,
// events in the order they came. In model mode at most ModelEvents events
// of a variant are sent (then one `truncated`), and the run pauses while
// its page has ModelQueue bytes unread (client.waitRoom), so no batch is
// dropped. In real mode nothing waits (batches may be dropped) and each
// variant's events also feed a Collector for the periodic `stats`.
type stream struct {
	c     *client
	id    string
	limit int             // events per variant (0: no limit)
	ctx   context.Context // model mode: the run's
	turn  *turn           // model mode: the run's model slot; nil in real mode

	mu      sync.Mutex
	variant string
	buf     []byte
	n       int       // events in buf
	opened  time.Time // when buf got its first event
	gen     int       // batch number, so a stale timer does nothing
	timer   *time.Timer
	sent    map[string]int
	cut     map[string]bool
	cols    map[string]*sim.Collector
	changed map[string]bool // variants with events since their last stats
	order   []string        // variants in the order they first appeared
	closed  bool
	err     error // model mode: why the run cannot go on (its page left)
}

// newModelStream streams a model run holding t; newRealStream a real run.
func newModelStream(ctx context.Context, c *client, id string, t *turn) *stream {
	st := newStream(c, id)
	st.ctx, st.turn, st.limit = ctx, t, c.s.limits.ModelEvents
	return st
}

func newRealStream(c *client, id string) *stream { return newStream(c, id) }

func newStream(c *client, id string) *stream {
	return &stream{
		c: c, id: id,
		sent: map[string]int{}, cut: map[string]bool{},
		cols: map[string]*sim.Collector{}, changed: map[string]bool{},
	}
}

// add is the run's sink. The event is encoded at once: the pointer is only
// valid during the call.
func (st *stream) add(variant string, e *sim.Event) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed || st.err != nil {
		return
	}
	if st.turn == nil {
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
			st.c.send(encode(runsvc.Truncated{Type: "truncated", ID: st.id, Variant: variant, Sent: st.sent[variant]}))
		}
		return
	}
	lim := st.c.s.limits
	if st.n == 0 {
		st.buf = appendBatchHead(web.Buffer(), st.id, variant)
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
	if st.turn == nil {
		st.c.sendBatch(st.id, data, true)
		return
	}
	if st.err == nil {
		lim := st.c.s.limits
		room := min(lim.ModelQueue, lim.ClientBuffer-len(data)-web.QueueOverhead-len(batchTailMax))
		st.err = st.c.waitRoom(st.ctx, max(room, 0), st.turn, false)
	}
	if st.err != nil {
		web.Recycle(data)
		return
	}
	st.c.sendBatch(st.id, data, false) // closes it with server_ms
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

// drain flushes, then (model mode) waits until the page has taken every
// batch: a model run keeps its slot while its events are on their way, so
// the pages streaming at once share the bandwidth between a few runs and
// each batch arrives soon after it is made; a page that stops taking them
// loses the slot (client.waitRoom).
func (st *stream) drain() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.flushLocked()
	if st.err == nil && st.turn != nil {
		st.err = st.c.waitRoom(st.ctx, 0, st.turn, true)
	}
	return st.err
}

// reply queues a model run's control reply (a variant's stats) once it
// fits beside the batches still queued for the page. Queued at once, a
// reply after a batch that filled the page's buffer would close a page that
// reads as fast as it can (web.Conn drops a reader whose replies that
// cannot be dropped exceed its buffer).
func (st *stream) reply(data []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err == nil && st.turn != nil {
		lim := st.c.s.limits
		st.err = st.c.waitRoom(st.ctx, max(lim.ClientBuffer-len(data)-web.QueueOverhead, 0), st.turn, true)
	}
	if st.err != nil {
		return st.err
	}
	st.c.send(data)
	return nil
}

// failure is why a model run's stream cannot go on (its page or the run
// ended while it waited), or nil.
func (st *stream) failure() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.err
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
		st.c.send(encode(runsvc.Stats{Type: "stats", ID: st.id, Variant: v, Summary: &sum}))
	}
}
