package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
)

// A run is one `run` request in flight.
type run struct {
	c       *client
	id      string
	mode    string
	page    *lab.Lab
	block   *lab.Block // the page's block
	sub     *lab.Block // the block with the variants asked for
	set     []lab.Setting
	seed    uint64
	checked bool // model run of the lab's own scenario: check its expectations
	ctx     context.Context
	cancel  context.CancelCauseFunc
	started time.Time
}

// fieldError is a refusal that names the message field or scenario key at
// fault.
type fieldError struct {
	field, msg string
}

func (e *fieldError) Error() string { return e.msg }

var errCancelled = errors.New("cancelled")

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
			var fe *fieldError
			if errors.As(err, &fe) {
				c.send(errorMsg(m.ID, fe.field, fe.msg))
			} else {
				c.send(errorMsg(m.ID, "", err.Error()))
			}
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
		r.cancel(errCancelled)
	}
}

// newRun checks a run request (plan) and registers the run on the client,
// not started.
func (c *client) newRun(m *inMsg) (*run, error) {
	r, err := c.s.plan(m)
	if err != nil {
		return nil, err
	}
	lim := c.s.limits
	ctx, cancel := context.WithCancelCause(c.ctx)
	r.c, r.ctx, r.cancel = c, ctx, cancel
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.runs[m.ID] != nil:
		cancel(nil)
		return nil, &fieldError{"id", fmt.Sprintf("a run with id %q is already in flight", m.ID)}
	case len(c.runs) >= lim.RunsPerSocket:
		cancel(nil)
		return nil, &fieldError{"", fmt.Sprintf("at most %d runs in flight per socket: wait for one to finish or cancel it", lim.RunsPerSocket)}
	case !c.s.track(1):
		cancel(nil)
		return nil, errors.New("the server is stopping")
	}
	c.runs[m.ID] = r
	return r, nil
}

// plan checks a run request against the pages and the limits: every
// refusal names its field. The run it returns has no client yet.
func (s *Server) plan(m *inMsg) (*run, error) {
	lim := s.limits
	if m.ID == "" {
		return nil, &fieldError{"id", "a run needs an id (any string up to 64 bytes)"}
	}
	mode := m.Mode
	if mode == "" {
		mode = "model"
	}
	if mode != "model" && mode != "real" {
		return nil, &fieldError{"mode", fmt.Sprintf(`mode %q: want "model" or "real"`, lab.Clip(m.Mode, 32))}
	}
	if m.Lab == "" {
		return nil, &fieldError{"lab", `a run needs the page's name, e.g. "lab": "php-persistent-share"`}
	}
	page, err := s.pages.lookup(m.Lab)
	if err != nil {
		return nil, &fieldError{"lab", err.Error()}
	}
	params, err := decodeParams(m.Params)
	if err != nil {
		return nil, err
	}
	req, err := page.Prepare(m.Block, m.Variants, params)
	var fe *lab.FieldError
	if errors.As(err, &fe) {
		return nil, &fieldError{fe.Field, fe.Msg}
	} else if err != nil {
		return nil, err
	}
	sub := req.Sub
	for i, s := range req.Scenarios {
		if s == nil {
			continue // a variant whose error the lesson expects
		}
		if err := checkLimits(s, mode, lim); err != nil {
			if len(sub.Variants) > 1 {
				err.msg = fmt.Sprintf("variant %q: %s", sub.Variants[i].Name, err.msg)
			}
			return nil, err
		}
	}
	if mode == "real" && s.opt.Real == nil {
		return nil, &fieldError{"mode", "real runs are not available in this build of sim serve; model runs are"}
	}
	seed := uint64(1) // sim run's default, so the numbers match `sim run --json`
	if m.Seed != nil {
		seed = *m.Seed
	}
	return &run{
		id: m.ID, mode: mode, page: page, block: req.Block, sub: sub, set: req.Set, seed: seed,
		checked: mode == "model" && req.Checked,
	}, nil
}

// decodeParams decodes a run's params, each key's value as JSON; the first
// in key order that is not JSON names its key.
func decodeParams(raw map[string]json.RawMessage) (map[string]any, error) {
	params := make(map[string]any, len(raw))
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		var v any
		if err := json.Unmarshal(raw[k], &v); err != nil {
			return nil, &fieldError{k, fmt.Sprintf("%s: %v", k, err)}
		}
		params[k] = v
	}
	return params, nil
}

// checkLimits bounds a run by its effective scenario (PROTOCOL.md: limits).
func checkLimits(s *sim.Scenario, mode string, lim Limits) *fieldError {
	if mode == "model" {
		if s.Requests > lim.ModelRequests {
			return &fieldError{"requests", fmt.Sprintf("requests: %d is more than a model run streams (at most %d)", s.Requests, lim.ModelRequests)}
		}
		if s.Requests == 0 && s.Load == sim.LoadOpen && s.Rate*s.Duration.Seconds() > float64(lim.ModelRequests) {
			return &fieldError{"duration", fmt.Sprintf("duration: rate × duration = %.0f requests, more than a model run streams (at most %d); shorten duration or set requests", s.Rate*s.Duration.Seconds(), lim.ModelRequests)}
		}
		return nil
	}
	switch {
	case s.Requests > lim.RealRequests:
		return &fieldError{"requests", fmt.Sprintf("requests: %d is too many for a real run (at most %d)", s.Requests, lim.RealRequests)}
	case s.Duration > lim.RealDuration:
		return &fieldError{"duration", fmt.Sprintf("duration: %s is too long for a real run (at most %s)", sim.FormatDuration(s.Duration), sim.FormatDuration(lim.RealDuration))}
	case s.Requests == 0 && s.Load == sim.LoadOpen && s.Rate*s.Duration.Seconds() > float64(lim.RealRequests):
		return &fieldError{"rate", fmt.Sprintf("rate: rate × duration = %.0f requests, too many for a real run (at most %d)", s.Rate*s.Duration.Seconds(), lim.RealRequests)}
	case s.RTT > lim.RealRTT:
		return &fieldError{"rtt", fmt.Sprintf("rtt: %s is too long for a real run (at most %s)", sim.FormatDuration(s.RTT), sim.FormatDuration(lim.RealRTT))}
	case s.Concurrency > lim.RealConcurrency:
		return &fieldError{"concurrency", fmt.Sprintf("concurrency: %d is too many for a real run (at most %d)", s.Concurrency, lim.RealConcurrency)}
	}
	return nil
}

// exec runs r to its end and reports it; it is the run's goroutine.
func (r *run) exec() {
	defer r.c.s.wg.Done()
	r.c.s.runs.Add(1)
	defer r.c.s.runs.Add(-1)
	defer func() {
		r.cancel(nil)
		r.c.mu.Lock()
		delete(r.c.runs, r.id)
		r.c.mu.Unlock()
	}()
	r.started = time.Now()
	var err error
	if r.mode == "real" {
		err = r.execReal()
	} else {
		err = r.execModel()
	}
	if f := r.c.s.runEnded; f != nil {
		f(r.id, err)
	}
	if err != nil {
		r.fail(err)
	}
}

// fail reports why a run stopped: nothing when its client left.
func (r *run) fail(err error) {
	if r.c.ctx.Err() != nil {
		return
	}
	if cause := context.Cause(r.ctx); cause != nil && r.ctx.Err() != nil {
		err = cause
	}
	var fe *fieldError
	switch {
	case errors.As(err, &fe):
		r.c.send(errorMsg(r.id, fe.field, fe.msg))
	case errors.Is(err, errCancelled):
		r.c.send(errorMsg(r.id, "", "cancelled"))
	default:
		var pe *sim.ParamError
		field := ""
		if errors.As(err, &pe) {
			field, _, _ = strings.Cut(pe.Key, "[")
		}
		r.c.send(errorMsg(r.id, field, lab.PageMessage(err)))
	}
}

func (r *run) startedMsg() []byte {
	m := runsvc.Started{Type: "started", ID: r.id, Mode: r.mode, Block: r.block.ID, Title: r.block.Title, Params: map[string]map[string]string{}}
	for _, v := range r.sub.Variants {
		m.Variants = append(m.Variants, runsvc.VariantName{Name: v.Name, Label: v.Label})
		s, _ := r.sub.Scenario(v, r.set)
		p := map[string]string{}
		for _, key := range sim.Keys() {
			p[key], _ = s.Get(key)
		}
		m.Params[v.Name] = p
	}
	return encode(m)
}

// execModel simulates each variant in turn: its events, then its stats.
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
	r.c.send(r.startedMsg())
	st := newModelStream(ctx, r.c, r.id, t)
	defer st.close()
	res := &lab.BlockResult{ID: r.block.ID, Title: r.block.Title, Checks: []lab.Check{}}
	for _, v := range r.sub.Variants {
		one := *r.sub
		one.Variants = []*lab.Variant{v}
		requests := 0
		over := false
		sink := func(_, variant string, e *sim.Event) {
			if over {
				return
			}
			if e.Kind == sim.KindRequest {
				if requests++; requests > s.limits.ModelRequests {
					over = true
					r.cancel(&fieldError{"duration", fmt.Sprintf("variant %q sent more than %d requests, more than a model run streams; shorten duration or set requests", variant, s.limits.ModelRequests)})
					return
				}
			}
			st.add(variant, e)
		}
		vr, err := one.RunVariants(ctx, lab.RunOptions{Seed: r.seed, Set: r.set, Sink: sink})
		st.flush()
		if err == nil {
			err = st.failure()
		}
		if err != nil {
			return r.stopped(ctx, err)
		}
		x := vr.Variants[0]
		res.Variants = append(res.Variants, x)
		if x.Summary != nil {
			if err := st.reply(encode(runsvc.Stats{Type: "stats", ID: r.id, Variant: x.Name, Summary: x.Summary})); err != nil {
				return r.stopped(ctx, err)
			}
		}
	}
	checks := []lab.Check{}
	if r.checked && len(r.block.Expects) > 0 {
		var err error
		if checks, err = r.block.CheckRun(ctx, r.page, res, r.seed); err != nil {
			return err
		}
	}
	if err := st.drain(); err != nil {
		return r.stopped(ctx, err)
	}
	r.c.send(encode(r.doneMsg(res, nil, checks)))
	return nil
}

// stopped is why a run whose step failed with err stopped: the context's
// cause when it ended (a limit, a cancel), context.Canceled when the client
// left, else err.
func (r *run) stopped(ctx context.Context, err error) error {
	switch {
	case r.c.ctx.Err() != nil:
		return context.Canceled
	case ctx.Err() != nil && context.Cause(ctx) != nil:
		return context.Cause(ctx)
	}
	return err
}

func (r *run) doneMsg(res, model *lab.BlockResult, checks []lab.Check) runsvc.Done {
	d := runsvc.Done{Type: "done", ID: r.id, Checks: checks, ElapsedMS: float64(time.Since(r.started).Microseconds()) / 1000}
	for _, v := range res.Variants {
		dv := runsvc.DoneVariant{Name: v.Name, Label: v.Label, Summary: v.Summary, Error: v.Error, Runtime: v.Runtime, Checks: v.Checks}
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
		d.Variants = append(d.Variants, dv)
	}
	if d.Variants == nil {
		d.Variants = []runsvc.DoneVariant{}
	}
	return d
}

// execReal waits for the server's real-run slot, then runs the block on
// real servers through Options.Real, streaming its events and a summary of
// each variant about once a second.
func (r *run) execReal() error {
	s := r.c.s
	job := &realJob{c: r.c, id: r.id, ctx: r.ctx, start: make(chan struct{})}
	defer s.hub.release(job)
	if !s.hub.wait(job) {
		return r.ctx.Err()
	}
	limit := s.limits.RealDuration + 30*time.Second // the run, plus starting its servers
	ctx, cancel := context.WithTimeoutCause(r.ctx, limit,
		fmt.Errorf("the real run took longer than %s and was stopped", sim.FormatDuration(limit)))
	defer cancel()
	r.c.send(r.startedMsg())
	st := newRealStream(r.c, r.id)
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
	names := make([]string, len(r.sub.Variants))
	for i, v := range r.sub.Variants {
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
				r.cancel(&fieldError{"duration", fmt.Sprintf("variant %q sent more than %d requests, the most a real run may; shorten duration or set requests", variant, s.limits.RealRequests)})
				return
			}
		}
		st.add(variant, e)
	}
	res, err := s.opt.Real(ctx, r.sub, r.set, names, r.seed, sink)
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
			m, err := sim.Run(ctx, *vr.Scenario, sim.Options{Seed: r.seed})
			if err != nil {
				return nil, err
			}
			mv.Scenario, mv.Summary = vr.Scenario, &m.Summary
		case vr.Summary != nil:
			if fallback == nil {
				var err error
				if fallback, err = r.sub.RunVariants(ctx, lab.RunOptions{Seed: r.seed, Set: r.set}); err != nil {
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
