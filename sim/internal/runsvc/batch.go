package runsvc

import (
	"strconv"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/msgf"
)

// AppendEventsHead starts an events message; the events follow, comma
// separated, then AppendEventsTail closes it.
func AppendEventsHead(b []byte, id, variant string) []byte {
	b = append(b, `{"type":"events","id":`...)
	b = sim.AppendJSONString(b, id)
	b = append(b, `,"variant":`...)
	b = sim.AppendJSONString(b, variant)
	return append(b, `,"events":[`...)
}

// AppendEventsTail closes an events message, as the page's model does.
func AppendEventsTail(b []byte) []byte { return append(b, "]}"...) }

// AppendEventsTailAt closes an events message with server_ms, the server's
// clock (Unix milliseconds) at when the batch entered the socket's send
// queue, so a page or a benchmark can measure delivery delay.
func AppendEventsTailAt(b []byte, at time.Time) []byte {
	b = append(b, `],"server_ms":`...)
	b = strconv.AppendFloat(b, float64(at.UnixMicro())/1000, 'f', 3, 64)
	return append(b, '}')
}

// EventsTailMax is at least as long as what AppendEventsTailAt appends.
const EventsTailMax = `],"server_ms":99999999999999.999}`

// BatchOut is what a Batcher hands its messages to: the transport, with
// its buffers, queue and clock.
type BatchOut interface {
	// Open returns the buffer a new batch is written into (empty, its
	// capacity reused): a batch has begun.
	Open() []byte
	// Batch takes a batch: an events message without its tail
	// (AppendEventsTail, AppendEventsTailAt). The
	// Batcher does not touch data again.
	Batch(data []byte)
	// Send sends a control message (Truncated) at once.
	Send(msg any)
}

// A Batcher turns a run's events into `events` messages: one variant per
// message, at most Size events each, in the order they came. Past Events
// events of a variant it sends one `truncated` and only counts the rest;
// past Requests requests of a variant it refuses the rest of its events
// (Add's error stops the variant). A Batcher is not safe for concurrent
// use: the server's stream calls it under its lock.
type Batcher struct {
	// Requests a variant may send (ModelRequests); 0: not counted (a real
	// run counts its own, against RealRequests).
	Requests int
	// Events sent per variant (ModelEvents); 0: all.
	Events int
	// Size is the most events in one message (BatchEvents).
	Size int
	// OnlyDrawn leaves out request and idle events, which the page's
	// widget does not draw (a third of a run's events): the page's model
	// sends only calls and sockets, so a run's picture holds more calls
	// within Events and costs the page less.
	OnlyDrawn bool

	id      string
	out     BatchOut
	variant string
	buf     []byte
	n       int           // events in buf
	cur     *variantCount // variant's
	counts  map[string]*variantCount
}

type variantCount struct {
	sent, requests int
	cut, over      bool
}

// NewBatcher returns the batcher of run id's events under lim's model-mode
// limits, handing its messages to out.
func NewBatcher(id string, lim Limits, out BatchOut) *Batcher {
	return &Batcher{Requests: lim.ModelRequests, Events: lim.ModelEvents, Size: lim.BatchEvents,
		id: id, out: out, counts: map[string]*variantCount{}}
}

// Add adds e, an event of variant. The event is encoded at once: the
// pointer is only valid during the call. The error, returned once, is the
// variant's request over Requests: a *FieldError naming duration.
func (b *Batcher) Add(variant string, e *sim.Event) error {
	if b.cur == nil || variant != b.variant {
		b.Flush()
		b.variant = variant
		if b.cur = b.counts[variant]; b.cur == nil {
			b.cur = &variantCount{}
			b.counts[variant] = b.cur
		}
	}
	c := b.cur
	if c.over {
		return nil
	}
	switch e.Kind {
	case sim.KindRequest:
		if b.Requests > 0 {
			if c.requests++; c.requests > b.Requests {
				c.over = true
				return &FieldError{Field: "duration", Msg: msgf.Sprintf("variant %q sent more than %d requests, more than a model run streams; shorten duration or set requests", variant, b.Requests)}
			}
		}
		if b.OnlyDrawn {
			return nil
		}
	case sim.KindIdle:
		if b.OnlyDrawn {
			return nil
		}
	}
	if b.Events > 0 && c.sent >= b.Events {
		if !c.cut {
			c.cut = true
			b.Flush()
			b.out.Send(&Truncated{Type: "truncated", ID: b.id, Variant: variant, Sent: c.sent})
		}
		return nil
	}
	if b.n == 0 {
		b.buf = AppendEventsHead(b.out.Open(), b.id, variant)
	} else {
		b.buf = append(b.buf, ',')
	}
	b.buf = e.AppendCompactJSON(b.buf)
	b.n++
	c.sent++
	if b.n >= b.Size {
		b.Flush()
	}
	return nil
}

// Pending is the number of events in the batch in progress.
func (b *Batcher) Pending() int { return b.n }

// Flush hands the batch in progress, if any, to the transport.
func (b *Batcher) Flush() {
	if b.n == 0 {
		return
	}
	data := b.buf
	b.buf, b.n = nil, 0
	b.out.Batch(data)
}
