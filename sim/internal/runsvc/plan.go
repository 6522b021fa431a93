package runsvc

import (
	"strconv"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/msgf"
	"github.com/connlab/connlab/sim/lab"
)

// Limits bound what one run may ask (PROTOCOL.md: limits). Zero fields
// take DefaultLimits' values (WithDefaults).
type Limits struct {
	ModelRequests   int // requests of one variant in model mode
	ModelEvents     int // events streamed per variant in model mode; the rest only count
	BatchEvents     int // events per `events` message
	RealRequests    int
	RealDuration    time.Duration // longest real run, and the longest duration key
	RealRTT         time.Duration
	RealConcurrency int
}

// DefaultLimits are the limits of PROTOCOL.md. The page's model streams
// fewer events (package wasm: PageEvents).
var DefaultLimits = Limits{
	ModelRequests:   200_000,
	ModelEvents:     20_000,
	BatchEvents:     512,
	RealRequests:    2_000,
	RealDuration:    120 * time.Second,
	RealRTT:         time.Second,
	RealConcurrency: 200,
}

// WithDefaults fills the zero fields of l from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fillD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&l.ModelRequests, d.ModelRequests)
	fill(&l.ModelEvents, d.ModelEvents)
	fill(&l.BatchEvents, d.BatchEvents)
	fill(&l.RealRequests, d.RealRequests)
	fillD(&l.RealDuration, d.RealDuration)
	fillD(&l.RealRTT, d.RealRTT)
	fill(&l.RealConcurrency, d.RealConcurrency)
	return l
}

// MaxID is the longest run id, in bytes. A transport does not echo a
// longer one (the page cannot have sent it).
const MaxID = 64

// FieldError refuses a run request or stops a run, naming the message
// field or scenario key at fault: the error message's field. It is the lab
// package's, which Prepare returns, so one type names every field.
type FieldError = lab.FieldError

// A Planner checks run messages against a transport's pages and limits.
type Planner struct {
	// Lookup finds a page's lab by its name (Run.Lab).
	Lookup func(name string) (*lab.Lab, error)
	Limits Limits // every field set (WithDefaults)
	// NoReal, when set, refuses every real run with this message: the
	// transport has none.
	NoReal string
	// Params, when set, turns a run's decoded params into the values
	// Prepare takes, or refuses them (the server names the key of a
	// number that does not fit a float64).
	Params func(map[string]any) (map[string]any, error)
}

// A Plan is a checked run request.
type Plan struct {
	ID    string
	Mode  RunMode
	Page  *lab.Lab   // the page
	Block *lab.Block // the page's block
	Sub   *lab.Block // the block with the variants asked for
	Set   []lab.Setting
	Seed  uint64
	// Checked: a model run of the block as written, which checks its
	// expectations.
	Checked bool
	// Start is when the run began, for done's elapsed_ms (zero: when Model
	// begins).
	Start time.Time
}

// Plan checks a run message: its id, mode and page, its block, variants
// and params (lab.Prepare), and each variant's scenario against the
// limits of its mode. Every refusal it makes is a *FieldError.
func (pl *Planner) Plan(m *Run) (*Plan, error) {
	switch {
	case m.ID == "":
		return nil, &FieldError{Field: "id", Msg: msgf.Sprintf("a run needs an id (any string up to %d bytes)", MaxID)}
	case len(m.ID) > MaxID:
		return nil, &FieldError{Field: "id", Msg: msgf.Sprintf("id is %d bytes long; at most %d", len(m.ID), MaxID)}
	}
	mode := m.Mode
	if mode == "" {
		mode = ModeModel
	}
	if mode != ModeModel && mode != ModeReal {
		return nil, &FieldError{Field: "mode", Msg: msgf.Sprintf(`mode %q: want "model" or "real"`, lab.Clip(string(m.Mode), 32))}
	}
	if mode == ModeReal && pl.NoReal != "" {
		return nil, &FieldError{Field: "mode", Msg: pl.NoReal}
	}
	if m.Lab == "" {
		return nil, &FieldError{Field: "lab", Msg: `a run needs the page's name, e.g. "lab": "php-persistent-share"`}
	}
	page, err := pl.Lookup(m.Lab)
	if err != nil {
		return nil, &FieldError{Field: "lab", Msg: err.Error()}
	}
	params := m.Params
	if pl.Params != nil {
		if params, err = pl.Params(params); err != nil {
			return nil, err
		}
	}
	req, err := page.Prepare(m.Block, m.Variants, params)
	if err != nil {
		return nil, err
	}
	for i, sc := range req.Scenarios {
		if sc == nil {
			continue // a variant whose error the lesson expects
		}
		if err := checkLimits(sc, mode, pl.Limits); err != nil {
			if len(req.Sub.Variants) > 1 {
				err.Msg = msgf.Sprintf("variant %q: %s", req.Sub.Variants[i].Name, err.Msg)
			}
			return nil, err
		}
	}
	seed := uint64(1) // sim run's default, so the numbers match `sim run --json`
	if m.Seed != nil {
		seed = *m.Seed
	}
	return &Plan{ID: m.ID, Mode: mode, Page: page, Block: req.Block, Sub: req.Sub, Set: req.Set, Seed: seed,
		Checked: mode == ModeModel && req.Checked}, nil
}

// checkLimits bounds a run by a variant's effective scenario.
func checkLimits(s *sim.Scenario, mode RunMode, lim Limits) *FieldError {
	if mode == ModeModel {
		if s.Requests > lim.ModelRequests {
			return &FieldError{Field: "requests", Msg: msgf.Sprintf("requests: %d is more than a model run streams (at most %d)", s.Requests, lim.ModelRequests)}
		}
		if s.Requests == 0 && s.Load == sim.LoadOpen && s.Rate*s.Duration.Seconds() > float64(lim.ModelRequests) {
			return &FieldError{Field: "duration", Msg: msgf.Sprintf("duration: rate × duration = %.0f requests, more than a model run streams (at most %d); shorten duration or set requests", s.Rate*s.Duration.Seconds(), lim.ModelRequests)}
		}
		return nil
	}
	// One message for the keys over a real run's bound: "KEY: VALUE is too
	// many|long for a real run (at most BOUND)", one call of Sprintf (each
	// adds to the page's .wasm, which links this too).
	key, got, bound, too := "", "", "", "many"
	switch {
	case s.Requests > lim.RealRequests:
		key, got, bound = "requests", strconv.Itoa(s.Requests), strconv.Itoa(lim.RealRequests)
	case s.Duration > lim.RealDuration:
		key, got, bound, too = "duration", sim.FormatDuration(s.Duration), sim.FormatDuration(lim.RealDuration), "long"
	case s.Requests == 0 && s.Load == sim.LoadOpen && s.Rate*s.Duration.Seconds() > float64(lim.RealRequests):
		return &FieldError{Field: "rate", Msg: msgf.Sprintf("rate: rate × duration = %.0f requests, too many for a real run (at most %d)", s.Rate*s.Duration.Seconds(), lim.RealRequests)}
	case s.RTT > lim.RealRTT:
		key, got, bound, too = "rtt", sim.FormatDuration(s.RTT), sim.FormatDuration(lim.RealRTT), "long"
	case s.Concurrency > lim.RealConcurrency:
		key, got, bound = "concurrency", strconv.Itoa(s.Concurrency), strconv.Itoa(lim.RealConcurrency)
	default:
		return nil
	}
	return &FieldError{Field: key, Msg: key + ": " + got + " is too " + too + " for a real run (at most " + bound + ")"}
}

// Started is the run's started message: each variant's effective
// scenario, every key.
func (p *Plan) Started() *Started {
	m := &Started{Type: "started", ID: p.ID, Mode: p.Mode, Block: p.Block.ID, Title: p.Block.Title, Params: map[string]map[string]string{}}
	for _, v := range p.Sub.Variants {
		m.Variants = append(m.Variants, VariantName{Name: v.Name, Label: v.Label})
		s, _ := p.Sub.Scenario(v, p.Set)
		params := map[string]string{}
		for _, key := range sim.Keys() {
			params[key], _ = s.Get(key)
		}
		m.Params[v.Name] = params
	}
	return m
}

// Done is the run's done message for its result: each variant's summary
// or error (a real run adds its comparison), and checks.
func (p *Plan) Done(res *lab.BlockResult, checks []lab.Check) *Done {
	d := &Done{Type: "done", ID: p.ID, Variants: []DoneVariant{}, Checks: checks, ElapsedMS: float64(time.Since(p.Start).Microseconds()) / 1000}
	for _, v := range res.Variants {
		d.Variants = append(d.Variants, DoneVariant{Name: v.Name, Label: v.Label, Summary: v.Summary, Error: v.Error, Runtime: v.Runtime, Checks: v.Checks})
	}
	return d
}
