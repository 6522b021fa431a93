package wasm

import (
	"context"
	"strings"
	"time"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
)

// run checks a run request, waits for the session's turn and runs it. Every
// refusal or failure is an `error` message naming its field.
func (s *Session) run(m *runsvc.Run) {
	r, err := s.planner.Plan(m)
	if err != nil {
		if fe, ok := as[*runsvc.FieldError](err); ok {
			s.fail(m.ID, fe.Field, fe.Msg)
		} else {
			s.fail(m.ID, "", err.Error())
		}
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
	if err := s.exec(ctx, r); err != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			err = c
		}
		if fe, ok := as[*runsvc.FieldError](err); ok {
			s.fail(r.ID, fe.Field, fe.Msg)
		} else if pe, ok := as[*sim.ParamError](err); ok {
			field, _, _ := strings.Cut(pe.Key, "[")
			s.fail(r.ID, field, lab.PageMessage(err))
		} else {
			s.fail(r.ID, "", lab.PageMessage(err))
		}
	}
}

// exec simulates each variant in turn, sending its events, then its stats;
// then the done message with the block's expectations when it ran as
// written.
func (s *Session) exec(ctx context.Context, r *runsvc.Plan) error {
	r.Start = time.Now()
	s.send(r.Started())
	res := &lab.BlockResult{ID: r.Block.ID, Title: r.Block.Title, Checks: []lab.Check{}}
	b := &batcher{s: s, id: r.ID, lastYield: time.Now()}
	for _, v := range r.Sub.Variants {
		one := *r.Sub
		one.Variants = []*lab.Variant{v}
		vctx, stop := context.WithCancelCause(ctx)
		b.start(v.Name, stop)
		vr, err := one.RunVariants(vctx, lab.RunOptions{Seed: r.Seed, Set: r.Set, Sink: func(_, _ string, e *sim.Event) { b.add(e) }})
		b.flush()
		if err != nil && vctx.Err() != nil {
			err = context.Cause(vctx)
		}
		stop(nil)
		if err != nil {
			return err
		}
		x := vr.Variants[0]
		res.Variants = append(res.Variants, x)
		if x.Summary != nil {
			s.send(runsvc.Stats{Type: "stats", ID: r.ID, Variant: x.Name, Summary: x.Summary})
		}
	}
	checks := []lab.Check{}
	if r.Checked && len(r.Block.Expects) > 0 {
		var err error
		if checks, err = r.Block.CheckRun(ctx, r.Page, res, r.Seed); err != nil {
			return err
		}
	}
	s.send(r.Done(res, checks))
	return nil
}

// A batcher turns one variant's events into `events` messages of at most
// BatchEvents events, sends at most PageEvents of them (then one
// `truncated`), counts requests against ModelRequests, and yields to the
// host every YieldEvery. It sends the events the page's widget draws:
// calls and sockets, not request and idle events (a third of a run's
// events, which the widget skips), so that a run's picture holds more calls
// within PageEvents and costs the page less.
type batcher struct {
	s         *Session
	id        string
	variant   string
	buf       []byte
	n, sent   int
	requests  int
	cut, over bool
	stop      context.CancelCauseFunc
	lastYield time.Time
	count     int
}

func (b *batcher) start(variant string, stop context.CancelCauseFunc) {
	b.variant, b.n, b.sent, b.requests, b.cut, b.over, b.stop = variant, 0, 0, 0, false, false, stop
}

func (b *batcher) add(e *sim.Event) {
	if b.over {
		return
	}
	if b.count++; b.count%1024 == 0 && b.s.Yield != nil && time.Since(b.lastYield) >= YieldEvery {
		b.flush()
		b.s.Yield()
		b.lastYield = time.Now()
	}
	switch e.Kind {
	case sim.KindRequest:
		if b.requests++; b.requests > limits.ModelRequests {
			b.over = true
			b.stop(&runsvc.FieldError{Field: "duration", Msg: msgf.Sprintf("variant %q sent more than %d requests, more than a model run streams; shorten duration or set requests", b.variant, limits.ModelRequests)})
		}
		return
	case sim.KindIdle:
		return
	}
	if b.sent >= limits.ModelEvents {
		if !b.cut {
			b.cut = true
			b.flush()
			b.s.send(runsvc.Truncated{Type: "truncated", ID: b.id, Variant: b.variant, Sent: b.sent})
		}
		return
	}
	if b.n == 0 {
		b.buf = append(b.buf[:0], `{"type":"events","id":`...)
		b.buf = sim.AppendJSONString(b.buf, b.id)
		b.buf = append(b.buf, `,"variant":`...)
		b.buf = sim.AppendJSONString(b.buf, b.variant)
		b.buf = append(b.buf, `,"events":[`...)
	} else {
		b.buf = append(b.buf, ',')
	}
	b.buf = e.AppendCompactJSON(b.buf)
	b.n++
	b.sent++
	if b.n >= limits.BatchEvents {
		b.flush()
	}
}

func (b *batcher) flush() {
	if b.n == 0 {
		return
	}
	b.buf = append(b.buf, "]}"...)
	b.n = 0
	b.s.Post(b.buf) // Post copies what it keeps: the buffer is the next batch's
}
