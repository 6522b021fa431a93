// Package wasm is the model as a lab page runs it when no sim server
// answers (a static host): sim/cmd/simwasm builds it for GOOS=js
// GOARCH=wasm, and the page's worker passes it the messages it would send
// to /ws. It answers model runs with the messages of
// sim/server/PROTOCOL.md (started, events, stats, truncated, done, error),
// from the same lab and sim code as `sim serve` and `sim run`, and the run
// service it shares with `sim serve` (runsvc: the messages, the checks and
// limits, the batches, a model run's course), so the same run gives the
// same bytes; and a lab's exercises for a seed, as GET /exercise/api
// answers them.
//
// The page gives it each lab as data (`sim lab --json`, lab.FromData), not
// as Markdown, so the .wasm needs no Markdown or TOML reader (the lab
// package's nolabparse build), and it writes and reads JSON with jsonlite
// rather than encoding/json: together a third of its size. It is plain Go,
// tested natively.
package wasm

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim/internal/jsonlite"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
)

// PageEvents is how many events of a variant the page's model sends; the
// rest only count. Its other limits are sim serve's (runsvc.DefaultLimits),
// so a run the page can do without a server is one the server would do,
// and the reverse; but it streams fewer events than the server's
// ModelEvents: the page draws a run's first calls and sockets from them,
// and its numbers come from the summary either way; encoding, passing and
// parsing 20,000 events took most of a large re-run's time.
const PageEvents = 5_000

// limits are the page's model's: sim serve's, but PageEvents.
var limits = func() runsvc.Limits {
	l := runsvc.DefaultLimits
	l.ModelEvents = PageEvents
	return l
}()

// noReal is why the page's model refuses real runs.
const noReal = "real runs measure real servers on your machine: they need the local server (make serve)"

// YieldEvery is how long a run computes before it lets the host deliver
// messages (a cancel, another page event): the browser's event loop only
// runs while every goroutine waits.
const YieldEvery = 50 * time.Millisecond

// A Session answers one page's messages. Post receives each reply (one
// JSON object), valid only during the call: the session reuses its bytes
// (copy what you keep). Yield, if set, is called now and then during a run and
// should block briefly so the host's event loop runs.
type Session struct {
	Post  func([]byte)
	Yield func()

	planner *runsvc.Planner

	mu    sync.Mutex
	labs  map[string]*lab.Lab // "name lang" → lab
	runs  map[string]context.CancelCauseFunc
	turn  chan struct{} // one run or exercise computation at a time
	cache *lab.AnswerCache
}

// New returns a session that posts replies to post (see Session.Post).
func New(post func([]byte), yield func()) *Session {
	s := &Session{Post: post, Yield: yield, labs: map[string]*lab.Lab{}, runs: map[string]context.CancelCauseFunc{}, turn: make(chan struct{}, 1)}
	s.planner = &runsvc.Planner{Lookup: func(name string) (*lab.Lab, error) { return s.lookup(name, "en") }, Limits: limits, NoReal: noReal}
	return s
}

func (s *Session) fail(id, field, msg string) {
	b, _ := jsonlite.Marshal(runsvc.Error{Type: "error", ID: id, Field: field, Message: msg})
	s.Post(b)
}

func (s *Session) send(v any) {
	b, err := jsonlite.Marshal(v)
	if err != nil {
		s.fail("", "", "internal error: "+err.Error())
		return
	}
	s.Post(b)
}

// Handle acts on one message. A run or an exercises request computes
// before Handle returns; call it on its own goroutine so a cancel can
// arrive meanwhile.
//
// The page sends the run and cancel messages of PROTOCOL.md (a cancel is
// decoded as a run, whose fields include its own), and lab and exercises
// (runsvc.LabLoad, runsvc.ExercisesReq), which only the page's model takes.
func (s *Session) Handle(data []byte) {
	x, err := jsonlite.Decode(data)
	obj, ok := x.(map[string]any)
	if err == nil && !ok {
		err = errors.New("want one JSON object per message")
	}
	var m runsvc.Run
	var into any = &m
	var lm runsvc.LabLoad
	var em runsvc.ExercisesReq
	switch obj["type"] {
	case "lab":
		into = &lm
	case "exercises":
		into = &em
	}
	if err == nil {
		err = jsonlite.Assign(into, x, jsonlite.Options{DisallowUnknown: true})
	}
	if err != nil {
		id, _ := obj["id"].(string)
		s.fail(id, "", "malformed message: "+err.Error())
		return
	}
	switch {
	case lm.Type == "lab":
		s.loadLab(&lm)
	case em.Type == "exercises":
		s.exercises(&em)
	case m.Type == "run":
		s.run(&m)
	case m.Type == "cancel":
		s.mu.Lock()
		cancel := s.runs[m.ID]
		s.mu.Unlock()
		if cancel == nil {
			s.fail(m.ID, "id", msgf.Sprintf("no run with id %q in flight", m.ID))
			return
		}
		cancel(runsvc.ErrCancelled)
	default:
		s.fail(m.ID, "type", msgf.Sprintf(`unknown message type %q: want "run", "cancel", "lab" or "exercises"`, m.Type))
	}
}

func labKey(name, lang string) string {
	if lang == "" {
		lang = "en"
	}
	return name + " " + lang
}

// loadLab reads a page's lab from its data and keeps it under its page name
// and language. An error names the file and line, as sim run would.
func (s *Session) loadLab(m *runsvc.LabLoad) {
	if m.Lab == "" {
		s.fail(m.ID, "lab", "a lab message needs the page's name (lab)")
		return
	}
	var d lab.Data
	if err := jsonlite.Unmarshal([]byte(m.Text), &d, jsonlite.Options{DisallowUnknown: true}); err != nil {
		s.fail(m.ID, "text", "the lab's data: "+err.Error())
		return
	}
	l, err := lab.FromData(&d)
	if err != nil {
		s.fail(m.ID, "text", err.Error())
		return
	}
	s.mu.Lock()
	s.labs[labKey(m.Lab, m.Lang)] = l
	s.mu.Unlock()
	s.send(runsvc.LabLoaded{Type: "lab", ID: m.ID, Lab: m.Lab, Lang: m.Lang, Blocks: len(l.Blocks)})
}

func (s *Session) lookup(name, lang string) (*lab.Lab, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.labs[labKey(name, lang)]; l != nil {
		return l, nil
	}
	if l := s.labs[labKey(name, "en")]; l != nil {
		return l, nil
	}
	return nil, msgf.Errorf("no page %q loaded", name)
}

// take waits for the session's turn; false if ctx ends first.
func (s *Session) take(ctx context.Context) bool {
	select {
	case s.turn <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Session) release() { <-s.turn }
