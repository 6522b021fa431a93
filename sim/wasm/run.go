package wasm

import (
	"context"
	"time"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/runsvc"
)

// run checks a run request, waits for the session's turn and runs it
// (runsvc.Model). Every refusal or failure is an `error` message naming its
// field.
func (s *Session) run(m *runsvc.Run) {
	r, err := s.planner.Plan(m)
	if err != nil {
		s.send(runsvc.ErrorOf(m.ID, err))
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	s.mu.Lock()
	if s.runs[r.ID] != nil {
		s.mu.Unlock()
		s.fail(r.ID, "id", msgf.Sprintf("a run with id %q is already in flight", r.ID))
		return
	}
	s.runs[r.ID] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.runs, r.ID)
		s.mu.Unlock()
	}()
	if !s.take(ctx) {
		s.fail(r.ID, "", context.Cause(ctx).Error())
		return
	}
	defer s.release()
	out := &modelOut{s: s, lastYield: time.Now()}
	out.b = runsvc.NewBatcher(r.ID, limits, out)
	out.b.OnlyDrawn = true
	if err := runsvc.Model(ctx, r, out); err != nil {
		s.send(runsvc.ErrorOf(r.ID, err))
	}
}

// modelOut is a run's runsvc.Out: the session posts its messages, and its
// runsvc.Batcher the events the page's widget draws (OnlyDrawn), at most
// PageEvents of a variant. It yields to the host every YieldEvery.
type modelOut struct {
	s         *Session
	b         *runsvc.Batcher
	buf       []byte // the batches' buffer: Post copies what it keeps
	lastYield time.Time
	count     int
}

func (o *modelOut) Send(msg any) { o.s.send(msg) }

func (o *modelOut) Add(variant string, e *sim.Event) error {
	if o.count++; o.count%1024 == 0 && o.s.Yield != nil && time.Since(o.lastYield) >= YieldEvery {
		o.b.Flush()
		o.s.Yield()
		o.lastYield = time.Now()
	}
	return o.b.Add(variant, e)
}

func (o *modelOut) Flush() error {
	o.b.Flush()
	return nil
}

// Reply sends a variant's stats at once: the page's worker has no queue
// to wait for.
func (o *modelOut) Reply(msg any) error {
	o.s.send(msg)
	return nil
}

func (o *modelOut) Drain() error { return nil }

// Open and Batch are the run's runsvc.BatchOut (with Send): every batch
// is written into the one buffer.
func (o *modelOut) Open() []byte { return o.buf[:0] }

func (o *modelOut) Batch(data []byte) {
	o.buf = runsvc.AppendEventsTail(data)
	o.s.Post(o.buf)
}
