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
	b := &batcher{s: s, lastYield: time.Now()}
	b.b = runsvc.NewBatcher(r.ID, limits, b)
	b.b.OnlyDrawn = true
	for _, v := range r.Sub.Variants {
		one := *r.Sub
		one.Variants = []*lab.Variant{v}
		vctx, stop := context.WithCancelCause(ctx)
		sink := func(_, variant string, e *sim.Event) {
			if err := b.add(variant, e); err != nil {
				stop(err)
			}
		}
		vr, err := one.RunVariants(vctx, lab.RunOptions{Seed: r.Seed, Set: r.Set, Sink: sink})
		b.b.Flush()
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

// A batcher hands a run's events to a runsvc.Batcher, which sends the
// events the page's widget draws (OnlyDrawn), at most PageEvents of a
// variant, and yields to the host every YieldEvery.
type batcher struct {
	s         *Session
	b         *runsvc.Batcher
	buf       []byte // the batches' buffer: Post copies what it keeps
	lastYield time.Time
	count     int
}

func (b *batcher) add(variant string, e *sim.Event) error {
	if b.count++; b.count%1024 == 0 && b.s.Yield != nil && time.Since(b.lastYield) >= YieldEvery {
		b.b.Flush()
		b.s.Yield()
		b.lastYield = time.Now()
	}
	return b.b.Add(variant, e)
}

// Open, Batch and Send are the batcher's runsvc.BatchOut: every batch is
// written into the one buffer.
func (b *batcher) Open() []byte { return b.buf[:0] }

func (b *batcher) Batch(data []byte) {
	b.buf = runsvc.AppendEventsTail(data, time.Time{})
	b.s.Post(b.buf)
}

func (b *batcher) Send(msg any) { b.s.send(msg) }
