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

// runReq is a checked run request.
type runReq struct {
	id      string
	page    *lab.Lab
	block   *lab.Block // the page's block
	sub     *lab.Block // with the variants asked for
	set     []lab.Setting
	seed    uint64
	checked bool // the block as written: check its expectations
}

// run checks a run request, waits for the session's turn and runs it. Every
// refusal or failure is an `error` message naming its field.
func (s *Session) run(m *inMsg) {
	r, err := s.prepare(m)
	if err != nil {
		if fe, ok := as[*fieldError](err); ok {
			s.fail(m.ID, fe.field, fe.msg)
		} else {
			s.fail(m.ID, "", err.Error())
		}
		return
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	s.mu.Lock()
	if s.runs[r.id] != nil {
		s.mu.Unlock()
		s.fail(r.id, "id", msgf.Sprintf("a run with id %q is already in flight", r.id))
		return
	}
	s.runs[r.id] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.runs, r.id)
		s.mu.Unlock()
	}()
	if !s.take(ctx) {
		s.fail(r.id, "", context.Cause(ctx).Error())
		return
	}
	defer s.release()
	if err := s.exec(ctx, r); err != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			err = c
		}
		if fe, ok := as[*fieldError](err); ok {
			s.fail(r.id, fe.field, fe.msg)
		} else if pe, ok := as[*sim.ParamError](err); ok {
			field, _, _ := strings.Cut(pe.Key, "[")
			s.fail(r.id, field, lab.PageMessage(err))
		} else {
			s.fail(r.id, "", lab.PageMessage(err))
		}
	}
}

// exec simulates each variant in turn, sending its events, then its stats;
// then the done message with the block's expectations when it ran as
// written.
func (s *Session) exec(ctx context.Context, r *runReq) error {
	start := time.Now()
	st := runsvc.Started{Type: "started", ID: r.id, Mode: "model", Block: r.block.ID, Title: r.block.Title, Params: map[string]map[string]string{}}
	for _, v := range r.sub.Variants {
		st.Variants = append(st.Variants, runsvc.VariantName{Name: v.Name, Label: v.Label})
		sc, _ := r.sub.Scenario(v, r.set)
		p := map[string]string{}
		for _, key := range sim.Keys() {
			p[key], _ = sc.Get(key)
		}
		st.Params[v.Name] = p
	}
	s.send(st)
	res := &lab.BlockResult{ID: r.block.ID, Title: r.block.Title, Checks: []lab.Check{}}
	b := &batcher{s: s, id: r.id, lastYield: time.Now()}
	for _, v := range r.sub.Variants {
		one := *r.sub
		one.Variants = []*lab.Variant{v}
		vctx, stop := context.WithCancelCause(ctx)
		b.start(v.Name, stop)
		vr, err := one.RunVariants(vctx, lab.RunOptions{Seed: r.seed, Set: r.set, Sink: func(_, _ string, e *sim.Event) { b.add(e) }})
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
			s.send(runsvc.Stats{Type: "stats", ID: r.id, Variant: x.Name, Summary: x.Summary})
		}
	}
	checks := []lab.Check{}
	if r.checked && len(r.block.Expects) > 0 {
		var err error
		if checks, err = r.block.CheckRun(ctx, r.page, res, r.seed); err != nil {
			return err
		}
	}
	d := runsvc.Done{Type: "done", ID: r.id, Variants: []runsvc.DoneVariant{}, Checks: checks, ElapsedMS: float64(time.Since(start).Microseconds()) / 1000}
	for _, v := range res.Variants {
		d.Variants = append(d.Variants, runsvc.DoneVariant{Name: v.Name, Label: v.Label, Summary: v.Summary, Error: v.Error})
	}
	s.send(d)
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
		if b.requests++; b.requests > ModelRequests {
			b.over = true
			b.stop(&fieldError{"duration", msgf.Sprintf("variant %q sent more than %d requests, more than a model run streams; shorten duration or set requests", b.variant, ModelRequests)})
		}
		return
	case sim.KindIdle:
		return
	}
	if b.sent >= PageEvents {
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
	if b.n >= BatchEvents {
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
