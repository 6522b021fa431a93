package lab

import (
	"errors"
	"slices"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
)

// A widget's run of a block, as sim serve (package server) and the model in
// the page (package wasm) both take it: which block, which of its variants,
// which parameters changed. Each adds its own limits and modes.

// FieldError refuses a run request, naming the message field ("block",
// "variants") or the scenario key at fault.
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string { return e.Msg }

// Request is a run request checked against its page.
type Request struct {
	Block *Block // the page's block
	// Sub is Block with only the variants asked for, in the block's order
	// (Block itself when all are).
	Sub       *Block
	Set       []Setting       // the changed parameters, in key order
	Scenarios []*sim.Scenario // Sub's variants', nil for one whose error the block expects
	// Checked: the block as written, whose expectations a run checks.
	Checked bool
}

// Prepare checks a run of block id with the named variants (none: all)
// and params (a key's value as JSON decodes it). Every refusal is a
// *FieldError; names a client sent are clipped in its message.
func (l *Lab) Prepare(id string, variants []string, params map[string]any) (*Request, error) {
	if id == "" {
		return nil, &FieldError{"block", "a run needs a block id"}
	}
	b, err := l.Block(id)
	if err != nil && len(id) > 100 {
		err = errors.New("no block with id " + msgf.Sprintf("%q", Clip(id, 100)))
	}
	if err != nil {
		return nil, &FieldError{"block", err.Error()}
	}
	sub, err := pickVariants(b, variants)
	if err != nil {
		return nil, err
	}
	set, err := ParamSettings(params)
	if err != nil {
		return nil, err
	}
	scns, _, err := sub.Scenarios(set)
	if err != nil {
		return nil, &FieldError{refusedKey(sub, set), PageMessage(err)}
	}
	return &Request{Block: b, Sub: sub, Set: set, Scenarios: scns,
		Checked: len(set) == 0 && len(sub.Variants) == len(b.Variants)}, nil
}

// pickVariants returns b with only the named variants, in b's order, so that the
// page's columns do not move.
func pickVariants(b *Block, names []string) (*Block, error) {
	if len(names) == 0 {
		return b, nil
	}
	want := map[string]bool{}
	for _, name := range names {
		if b.Variant(name) == nil {
			var all []string
			for _, v := range b.Variants {
				all = append(all, v.Name)
			}
			return nil, &FieldError{"variants", msgf.Sprintf("block %q has no variant %q (variants: %s)", b.ID, Clip(name, 64), strings.Join(all, ", "))}
		}
		if want[name] {
			return nil, &FieldError{"variants", msgf.Sprintf("variant %q named twice", Clip(name, 64))}
		}
		want[name] = true
	}
	cp := *b
	cp.Variants = nil
	for _, v := range b.Variants {
		if want[v.Name] {
			cp.Variants = append(cp.Variants, v)
		}
	}
	return &cp, nil
}

// ParamSettings turns a run's params (a key's value as JSON decodes it)
// into settings in key order; a bad one is a *FieldError naming its key. A
// chain's tier.NAME.KEY needs the block's tiers: the block's scenarios
// check it.
func ParamSettings(params map[string]any) ([]Setting, error) {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var set []Setting
	for _, k := range keys {
		v := params[k]
		sc := sim.Default()
		if err := sc.Set(k, v); err != nil && !strings.HasPrefix(k, "tier.") {
			return nil, &FieldError{k, err.Error()}
		}
		set = append(set, Setting{Key: k, Value: v})
	}
	return set, nil
}

// refusedKey finds the scenario key that Block.Scenarios refused.
func refusedKey(b *Block, set []Setting) string {
	for _, v := range b.Variants {
		sc, err := b.Scenario(v, set)
		if err == nil {
			err = sc.Validate()
		}
		if pe, ok := errorAs[*sim.ParamError](err); ok {
			key, _, _ := strings.Cut(pe.Key, "[")
			return key
		}
	}
	return ""
}

// PageMessage is an error as a page shows it: a lab error without its
// file position, since the page names the block already.
func PageMessage(err error) string {
	if le, ok := errorAs[*Error](err); ok && le.Line > 0 {
		return le.Msg
	}
	return err.Error()
}

// errorAs finds the first error of type T in err's chain, as errors.As
// does (for chains of single errors), without errors.As's reflection,
// which would add to the page's .wasm.
func errorAs[T error](err error) (T, bool) {
	for ; err != nil; err = errors.Unwrap(err) {
		if t, ok := err.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}
