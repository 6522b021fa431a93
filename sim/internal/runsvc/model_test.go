package runsvc

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/lab"
)

// ErrorOf names the field of a FieldError or a scenario key's error
// wherever it is in the error's tree, says "cancelled" for a cancel, and
// shows any other error as the page does.
func TestErrorOf(t *testing.T) {
	for _, c := range []struct {
		err          error
		field, words string
	}{
		{fmt.Errorf("x: %w", &FieldError{Field: "rtt", Msg: "too long"}), "rtt", "too long"},
		{errors.Join(errors.New("other"), &FieldError{Field: "seed", Msg: "bad"}), "seed", "bad"},
		{fmt.Errorf("stopped: %w", ErrCancelled), "", "cancelled"},
		{fmt.Errorf("variant: %w", &sim.ParamError{Key: "tier.app[2]", Msg: "no"}), "tier.app", "variant: tier.app[2]: no"},
		{errors.New("plain"), "", "plain"},
	} {
		e := ErrorOf("r", c.err)
		if e.Type != "error" || e.ID != "r" || e.Field != c.field || e.Message != c.words {
			t.Errorf("%v: got %+v, want field %q, message %q", c.err, e, c.field, c.words)
		}
	}
}

// A Planner refuses a run request naming its field, in the order the
// transports have always checked them, and fills in the mode and seed.
func TestPlan(t *testing.T) {
	page, err := lab.ReadFile(filepath.Join("..", "..", "..", "labs", "php-persistent-share.md"))
	if err != nil {
		t.Fatal(err)
	}
	pl := &Planner{Limits: DefaultLimits, NoReal: "no real runs here", Lookup: func(name string) (*lab.Lab, error) {
		if name != "share" {
			return nil, fmt.Errorf("no page %q", name)
		}
		return page, nil
	}}
	seven := uint64(7)
	for _, c := range []struct {
		m            Run
		field, words string
	}{
		{Run{Lab: "share", Block: "across-requests"}, "id", "needs an id (any string up to 64 bytes)"},
		{Run{ID: strings.Repeat("i", 65), Lab: "share"}, "id", "65 bytes long; at most 64"},
		{Run{ID: "a", Mode: "fast", Lab: "nope"}, "mode", `want "model" or "real"`},
		{Run{ID: "a", Mode: "real", Lab: "nope"}, "mode", "no real runs here"},
		{Run{ID: "a"}, "lab", "needs the page's name"},
		{Run{ID: "a", Lab: "nope"}, "lab", `no page "nope"`},
		{Run{ID: "a", Lab: "share", Block: "nope"}, "block", `no block with id "nope"`},
		{Run{ID: "a", Lab: "share", Block: "across-requests", Params: map[string]any{"requests": 300000.0}}, "requests", `variant "share": requests: 300000 is more than a model run streams (at most 200000)`},
	} {
		_, err := pl.Plan(&c.m)
		e := ErrorOf(c.m.ID, err)
		if e.Field != c.field || !strings.Contains(e.Message, c.words) {
			t.Errorf("%+v: got %+v, want field %q saying %q", c.m, e, c.field, c.words)
		}
	}
	p, err := pl.Plan(&Run{ID: "a", Lab: "share", Block: "across-requests"})
	if err != nil || p.Mode != "model" || p.Seed != 1 || !p.Checked || len(p.Sub.Variants) != 2 {
		t.Errorf("the block as written: %+v, %v", p, err)
	}
	p, err = pl.Plan(&Run{ID: "a", Lab: "share", Block: "across-requests", Variants: []string{"persistent"}, Seed: &seven, Params: map[string]any{"rtt": "7ms"}})
	if err != nil || p.Seed != 7 || p.Checked || len(p.Sub.Variants) != 1 || len(p.Set) != 1 {
		t.Errorf("a variant, a key and a seed: %+v, %v", p, err)
	}
	if s := p.Started(); s.Mode != "model" || s.Params["persistent"]["rtt"] != "7ms" || len(s.Variants) != 1 {
		t.Errorf("started: %+v", s)
	}
}

// A real run's limits name the key and say the bound, in the words
// PROTOCOL.md's limits have always had.
func TestRealLimits(t *testing.T) {
	lim := DefaultLimits
	for _, c := range []struct {
		set   func(*sim.Scenario)
		field string
		msg   string
	}{
		{func(s *sim.Scenario) { s.Requests = 3000 }, "requests", "requests: 3000 is too many for a real run (at most 2000)"},
		{func(s *sim.Scenario) { s.Requests, s.Duration = 0, 10*time.Minute }, "duration", "duration: 600s is too long for a real run (at most 120s)"},
		{func(s *sim.Scenario) { s.Requests, s.Load, s.Rate, s.Duration = 0, sim.LoadOpen, 100, time.Minute }, "rate", "rate: rate × duration = 6000 requests, too many for a real run (at most 2000)"},
		{func(s *sim.Scenario) { s.RTT = 2 * time.Second }, "rtt", "rtt: 2s is too long for a real run (at most 1s)"},
		{func(s *sim.Scenario) { s.Concurrency = 500 }, "concurrency", "concurrency: 500 is too many for a real run (at most 200)"},
	} {
		s := sim.Default()
		c.set(&s)
		err := checkLimits(&s, "real", lim)
		if err == nil || err.Field != c.field || err.Msg != c.msg {
			t.Errorf("got %v, want %s: %s", err, c.field, c.msg)
		}
	}
	s := sim.Default()
	if err := checkLimits(&s, "real", lim); err != nil {
		t.Errorf("the default scenario: %v", err)
	}
}
