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

// A stream turns one run's events into `events` messages through a
// runsvc.Batcher: at most BatchEvents events or BatchWait of time per
// batch, one variant per batch, events in the order they came. In model
// mode at most ModelEvents events of a variant are sent (then one
// `truncated`), a variant's requests past ModelRequests stop the run, and
// the run pauses while its page has ModelQueue bytes unread
// (client.waitRoom), so no batch is dropped. In real mode nothing waits
// (batches may be dropped) and each variant's events also feed a Collector
// for the periodic `stats`.
type stream struct {
	c    *client
	id   string
	ctx  context.Context // model mode: the run's
	turn *turn           // model mode: the run's model slot; nil in real mode

	mu      sync.Mutex
	b       *runsvc.Batcher // calls Open, Batch and Send with mu held
	opened  time.Time       // when the batch in progress got its first event
	gen     int             // batch number, so a stale timer does nothing
	timer   *time.Timer
	cols    map[string]*sim.Collector
	changed map[string]bool // variants with events since their last stats
	order   []string        // variants in the order they first appeared
	closed  bool
	err     error // model mode: why the run cannot go on (its page left)
}

// newModelStream streams a model run holding t; newRealStream a real run,
// whose requests the run counts itself, against RealRequests.
func newModelStream(ctx context.Context, c *client, id string, t *turn) *stream {
	st := newStream(c, id)
	st.ctx, st.turn = ctx, t
	return st
}

func newRealStream(c *client, id string) *stream {
	st := newStream(c, id)
	st.b.Requests, st.b.Events = 0, 0
	return st
}

func newStream(c *client, id string) *stream {
	st := &stream{c: c, id: id, cols: map[string]*sim.Collector{}, changed: map[string]bool{}}
	st.b = runsvc.NewBatcher(id, c.s.limits.Limits, st)
	return st
}

// add is the run's sink. The event is encoded at once: the pointer is only
// valid during the call. Its error is a model run's variant over
// ModelRequests.
func (st *stream) add(variant string, e *sim.Event) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed || st.err != nil {
		return nil
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
	err := st.b.Add(variant, e)
	if st.b.Pending() > 0 && time.Since(st.opened) >= st.c.s.limits.BatchWait {
		st.b.Flush()
	}
	return err
}

// Open starts a batch (runsvc.BatchOut): a pooled buffer, and a timer that
// sends the batch BatchWait later if it has not filled by then.
func (st *stream) Open() []byte {
	st.opened = time.Now()
	st.gen++
	gen := st.gen
	st.timer = time.AfterFunc(st.c.s.limits.BatchWait, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.gen == gen && st.b.Pending() > 0 {
			st.b.Flush()
		}
	})
	return web.Buffer()
}

// Send queues a control message of the Batcher (truncated).
func (st *stream) Send(msg any) { st.c.send(encode(msg)) }

// Batch queues a batch (runsvc.BatchOut): a real run's at once, where it
// may be dropped; a model run's once the page has room for it.
func (st *stream) Batch(data []byte) {
	st.timer.Stop()
	st.gen++
	if st.turn == nil {
		st.c.sendBatch(st.id, data, true)
		return
	}
	if st.err == nil {
		lim := st.c.s.limits
		room := min(lim.ModelQueue, lim.QueueBytes-len(data)-web.QueueOverhead-len(runsvc.EventsTailMax))
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
	st.b.Flush()
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
	st.b.Flush()
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
		st.err = st.c.waitRoom(st.ctx, max(lim.QueueBytes-len(data)-web.QueueOverhead, 0), st.turn, true)
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
	st.b.Flush()
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
	st.b.Flush()
	for _, v := range st.order {
		if !st.changed[v] {
			continue
		}
		st.changed[v] = false
		sum := st.cols[v].Summary()
		st.c.send(encode(runsvc.Stats{Type: "stats", ID: st.id, Variant: v, Summary: &sum}))
	}
}
