package runsvc

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/lab"
)

// Out is where a model run's messages go: the transport's side of Model.
type Out interface {
	// Send sends a message (Started, Done) at once.
	Send(msg any)
	// Add passes on an event of a variant (to the transport's Batcher); an
	// error (the variant's requests over the limit) stops the variant.
	Add(variant string, e *sim.Event) error
	// Flush sends the variant's events still batched, at its end; an
	// error says why the run cannot go on (its page left).
	Flush() error
	// Reply sends a variant's stats once the page has room for them.
	Reply(msg any) error
	// Drain waits until the page has taken the run's events, before done.
	Drain() error
}

// Model runs a model run: the started message, then each variant in turn,
// its events and its stats, then the block's expectations when it ran as
// written, and the done message. It returns why the run stopped instead:
// when ctx ended, its cause (a cancel, a limit), else the error.
func Model(ctx context.Context, p *Plan, out Out) error {
	err := model(ctx, p, out)
	if err != nil && ctx.Err() != nil {
		if c := context.Cause(ctx); c != nil {
			err = c
		}
	}
	return err
}

func model(ctx context.Context, p *Plan, out Out) error {
	if p.Start.IsZero() {
		p.Start = time.Now()
	}
	out.Send(p.Started())
	res := &lab.BlockResult{ID: p.Block.ID, Title: p.Block.Title, Checks: []lab.Check{}}
	for _, v := range p.Sub.Variants {
		one := *p.Sub
		one.Variants = []*lab.Variant{v}
		// The variant's own context, so that its request limit stops it
		// with its error as the cause.
		vctx, stop := context.WithCancelCause(ctx)
		sink := func(_, variant string, e *sim.Event) {
			if err := out.Add(variant, e); err != nil {
				stop(err)
			}
		}
		vr, err := one.RunVariants(vctx, lab.RunOptions{Seed: p.Seed, Set: p.Set, Sink: sink})
		if ferr := out.Flush(); err == nil {
			err = ferr
		}
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
			if err := out.Reply(&Stats{Type: "stats", ID: p.ID, Variant: x.Name, Summary: x.Summary}); err != nil {
				return err
			}
		}
	}
	checks := []lab.Check{}
	if p.Checked && len(p.Block.Expects) > 0 {
		var err error
		if checks, err = p.Block.CheckRun(ctx, p.Page, res, p.Seed); err != nil {
			return err
		}
	}
	if err := out.Drain(); err != nil {
		return err
	}
	out.Send(p.Done(res, checks))
	return nil
}

// ErrCancelled is the cause of a run its page cancelled.
var ErrCancelled = errors.New("cancelled")

// ErrorOf is the error message that refuses run id or says why it stopped
// with err: a *FieldError's field and words; "cancelled"; a scenario key's
// error (sim.ParamError) names the key; else the error as the page shows
// it (lab.PageMessage). A transport bounds what it echoes.
func ErrorOf(id string, err error) *Error {
	e := &Error{Type: "error", ID: id}
	if fe, ok := as[*FieldError](err); ok {
		e.Field, e.Message = fe.Field, fe.Msg
		return e
	}
	if is(err, ErrCancelled) {
		e.Message = "cancelled"
		return e
	}
	if pe, ok := as[*sim.ParamError](err); ok {
		e.Field, _, _ = strings.Cut(pe.Key, "[")
	}
	e.Message = lab.PageMessage(err)
	return e
}

// is reports whether target is in err's tree, as errors.Is does for an
// error compared by identity, without errors.Is.
func is(err, target error) bool {
	return find(err, func(e error) bool { return e == target }) != nil
}

// as finds the first error of type T in err's tree, as errors.As does,
// without errors.As's reflection, which would add to the page's .wasm.
func as[T error](err error) (T, bool) {
	t, ok := find(err, func(e error) bool { _, ok := e.(T); return ok }).(T)
	return t, ok
}

// find returns the first error in err's tree, depth first as errors.As
// looks, that match accepts; nil if none.
func find(err error, match func(error) bool) error {
	for err != nil {
		if match(err) {
			return err
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if f := find(e, match); f != nil {
					return f
				}
			}
			return nil
		default:
			return nil
		}
	}
	return nil
}
