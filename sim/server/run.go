package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
)

// A run is one `run` request in flight: its checked request (runsvc.Plan)
// and the client that asked for it.
type run struct {
	*runsvc.Plan
	c      *client
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// handle acts on one client message. Every refusal is an `error`
// message; the socket stays open.
func (c *client) handle(data []byte) {
	m, reply := decode(data)
	if reply != nil {
		c.send(reply)
		return
	}
	switch m.Type {
	case "run":
		r, err := c.newRun(m)
		if err != nil {
			c.send(errorOf(m.ID, err))
			return
		}
		go r.exec()
	case "cancel":
		c.mu.Lock()
		r := c.runs[m.ID]
		c.mu.Unlock()
		if r == nil {
			c.send(errorMsg(m.ID, "id", fmt.Sprintf("no run with id %q in flight", m.ID)))
			return
		}
		r.cancel(runsvc.ErrCancelled)
	}
}

// newRun checks a run request (runsvc.Planner) and registers the run on
// the client, not started.
func (c *client) newRun(m *runsvc.Run) (*run, error) {
	p, err := c.s.planner.Plan(m)
	if err != nil {
		return nil, err
	}
	lim := c.s.limits
	ctx, cancel := context.WithCancelCause(c.ctx)
	r := &run{Plan: p, c: c, ctx: ctx, cancel: cancel}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.runs[m.ID] != nil:
		cancel(nil)
		return nil, &runsvc.FieldError{Field: "id", Msg: fmt.Sprintf("a run with id %q is already in flight", m.ID)}
	case len(c.runs) >= lim.RunsPerSocket:
		cancel(nil)
		return nil, &runsvc.FieldError{Field: "", Msg: fmt.Sprintf("at most %d runs in flight per socket: wait for one to finish or cancel it", lim.RunsPerSocket)}
	case !c.s.track(1):
		cancel(nil)
		return nil, errors.New("the server is stopping")
	}
	c.runs[m.ID] = r
	return r, nil
}

// noReal is why a server without Options.Real refuses real runs.
const noReal = "real runs are not available in this build of sim serve; model runs are"

// exec runs r to its end and reports it; it is the run's goroutine.
func (r *run) exec() {
	defer r.c.s.wg.Done()
	r.c.s.runs.Add(1)
	defer r.c.s.runs.Add(-1)
	defer func() {
		r.cancel(nil)
		r.c.mu.Lock()
		delete(r.c.runs, r.ID)
		r.c.mu.Unlock()
	}()
	r.Start = time.Now()
	var err error
	if r.Mode == "real" {
		err = r.execReal()
	} else {
		err = r.execModel()
	}
	if f := r.c.s.runEnded; f != nil {
		f(r.ID, err)
	}
	if err != nil {
		r.fail(err)
	}
}

// fail reports why a run stopped (runsvc.ErrorOf): nothing when its client
// left.
func (r *run) fail(err error) {
	if r.c.ctx.Err() != nil {
		return
	}
	if cause := context.Cause(r.ctx); cause != nil && r.ctx.Err() != nil {
		err = cause
	}
	r.c.send(errorOf(r.ID, err))
}

// execModel runs a model run (runsvc.Model) once it has its turns: the
// socket's and a model slot.
func (r *run) execModel() error {
	s := r.c.s
	// One model run of a socket at a time, then one of the server's
	// slots, which the run gives back while its page takes nothing
	// (client.waitRoom): a page that stops reading holds no slot.
	select {
	case r.c.modelTurn <- struct{}{}:
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
	defer func() { <-r.c.modelTurn }()
	t := &turn{sem: s.modelSem}
	if err := t.take(r.ctx); err != nil {
		return err
	}
	defer t.release()
	ctx, cancel := context.WithTimeoutCause(r.ctx, s.limits.ModelRunTime,
		fmt.Errorf("the run took longer than %s; make it smaller", s.limits.ModelRunTime))
	defer cancel()
	st := newModelStream(ctx, r.c, r.ID, t)
	defer st.close()
	err := runsvc.Model(ctx, r.Plan, &modelOut{r: r, st: st})
	if err != nil && r.c.ctx.Err() != nil {
		return context.Canceled // the client left: nothing to tell it
	}
	return err
}

// modelOut is a model run's runsvc.Out: messages go to the client, events
// through the run's stream, which waits for the page's room.
type modelOut struct {
	r  *run
	st *stream
}

func (o *modelOut) Send(msg any) { o.r.c.send(encode(msg)) }

// Add's error, a variant over ModelRequests, stops the whole run at once,
// its wait for the page's room included.
func (o *modelOut) Add(variant string, e *sim.Event) error {
	err := o.st.add(variant, e)
	if err != nil {
		o.r.cancel(err)
	}
	return err
}

func (o *modelOut) Flush() error {
	o.st.flush()
	return o.st.failure()
}

func (o *modelOut) Reply(msg any) error { return o.st.reply(encode(msg)) }

func (o *modelOut) Drain() error { return o.st.drain() }

// doneMsg is the run's done message; a real run's sets beside each
// variant the model of its scenario (model).
func (r *run) doneMsg(res, model *lab.BlockResult, checks []lab.Check) *runsvc.Done {
	d := r.Done(res, checks)
	for i, v := range res.Variants {
		dv := &d.Variants[i]
		if model != nil {
			for _, mv := range model.Variants {
				if mv.Name == v.Name && mv.Summary != nil {
					dv.Model = mv.Summary
					if v.Summary != nil {
						dv.Compare = harness.ComparePhases(mv.Summary, v.Summary, harness.DefaultTolerance)
					}
				}
				if mv.Name == v.Name && mv.Summary == nil && mv.Error != "" && v.Runtime != nil {
					dv.ModelError = harness.ModelText(mv.Error) // the real software ran what the model rejects
				}
			}
		}
	}
	return d
}

// execReal waits for the server's real-run slot, then runs the block on
// real servers through Options.Real, streaming its events and a summary of
// each variant about once a second.
func (r *run) execReal() error {
	s := r.c.s
	job := &realJob{c: r.c, id: r.ID, ctx: r.ctx, start: make(chan struct{})}
	defer s.hub.release(job)
	if !s.hub.wait(job) {
		return r.ctx.Err()
	}
	limit := s.limits.RealDuration + 30*time.Second // the run, plus starting its servers
	ctx, cancel := context.WithTimeoutCause(r.ctx, limit,
		fmt.Errorf("the real run took longer than %s and was stopped", sim.FormatDuration(limit)))
	defer cancel()
	r.c.send(encode(r.Started()))
	st := newRealStream(r.c, r.ID)
	defer st.close()
	tick := time.NewTicker(s.limits.StatsEvery)
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for {
			select {
			case <-tick.C:
				st.sendStats()
			case <-stop:
				return
			}
		}
	}()
	names := make([]string, len(r.Sub.Variants))
	for i, v := range r.Sub.Variants {
		names[i] = v.Name
	}
	var mu sync.Mutex
	requests := map[string]int{}
	sink := func(variant string, e *sim.Event) {
		if e.Kind == sim.KindRequest {
			mu.Lock()
			requests[variant]++
			n := requests[variant]
			mu.Unlock()
			if n > s.limits.RealRequests {
				r.cancel(&runsvc.FieldError{Field: "duration", Msg: fmt.Sprintf("variant %q sent more than %d requests, the most a real run may; shorten duration or set requests", variant, s.limits.RealRequests)})
				return
			}
		}
		st.add(variant, e)
	}
	res, err := s.opt.Real(ctx, r.Sub, r.Set, names, r.Seed, sink)
	tick.Stop()
	close(stop)
	<-ticked
	st.sendStats()
	st.close()
	if ctx.Err() != nil {
		if c := context.Cause(ctx); c != nil {
			return c
		}
	}
	if err != nil {
		return err
	}
	if res == nil {
		return errors.New("the real run returned no result")
	}
	model, err := r.modelOf(ctx, res)
	if err != nil {
		return err
	}
	tares := map[string]time.Duration{}
	measured := map[string]*lab.VariantResult{} // those with a tare, by name
	if s.opt.Tare != nil {
		for _, v := range res.Variants {
			if v.Scenario == nil || v.Summary == nil {
				continue
			}
			measured[v.Name] = v
			d, err := s.opt.Tare(ctx, v.Scenario.RTT)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				s.logf("measuring the harness's overhead at %s RTT: %v", v.Scenario.RTT, err)
				continue
			}
			tares[v.Name] = d
		}
	}
	d := r.doneMsg(res, model, []lab.Check{})
	for i := range d.Variants {
		dv := &d.Variants[i]
		if tare, ok := tares[dv.Name]; ok && dv.Model != nil && dv.Summary != nil {
			tol := harness.DefaultTolerance.WithTare(tare, measured[dv.Name].Scenario)
			tol.OneCall = measured[dv.Name].CallSpread
			dv.Compare = harness.ComparePhases(dv.Model, dv.Summary, tol)
			dv.HarnessOverheadMS = float64(tare.Microseconds()) / 1000
		}
		if len(dv.Compare) == 0 {
			continue
		}
		busy := ""
		if v := res.Variants[i]; v.Name == dv.Name {
			busy = v.Busy
			if busy != "" {
				dv.BusyCPUs = v.BusyCPUs
			}
		}
		dv.Verdict, dv.Why = harness.PhaseVerdict(dv.Compare, busy)
	}
	r.c.send(encode(d))
	return nil
}

// modelOf runs the model on the scenario each variant of a real run ran, so
// the page sets like against like; a variant that reports none (a test
// double) is modelled from the block with the run's settings.
func (r *run) modelOf(ctx context.Context, res *lab.BlockResult) (*lab.BlockResult, error) {
	var fallback *lab.BlockResult
	model := &lab.BlockResult{ID: res.ID, Title: res.Title, Checks: []lab.Check{}}
	for _, vr := range res.Variants {
		mv := &lab.VariantResult{Name: vr.Name, Label: vr.Label, Error: vr.Error}
		switch {
		case vr.Scenario != nil:
			m, err := sim.Run(ctx, *vr.Scenario, sim.Options{Seed: r.Seed})
			if err != nil {
				return nil, err
			}
			mv.Scenario, mv.Summary = vr.Scenario, &m.Summary
		case vr.Summary != nil:
			if fallback == nil {
				var err error
				if fallback, err = r.Sub.RunVariants(ctx, lab.RunOptions{Seed: r.Seed, Set: r.Set}); err != nil {
					return nil, err
				}
			}
			for _, fv := range fallback.Variants {
				if fv.Name == vr.Name {
					mv = fv
				}
			}
		}
		model.Variants = append(model.Variants, mv)
	}
	return model, nil
}
