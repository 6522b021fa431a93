// Package wasm is the model as a lab page runs it when no sim server
// answers (a static host): sim/cmd/simwasm builds it for GOOS=js
// GOARCH=wasm, and the page's worker passes it the messages it would send
// to /ws. It answers model runs with the messages of
// sim/server/PROTOCOL.md (started, events, stats, truncated, done, error),
// from the same lab and sim code as `sim serve` and `sim run`, so the same
// run gives the same bytes; and a lab's exercises for a seed, as GET
// /exercise/api answers them.
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

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/jsonlite"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
)

// Limits of a model run: the model-mode limits of sim serve
// (server.DefaultLimits; a test holds them equal), so a run the page can do
// without a server is one the server would do, and the reverse. The page's
// model streams fewer events than the server (PageEvents, not the server's
// ModelEvents): the page draws a run's first calls and sockets from them,
// and its numbers come from the summary either way; encoding, passing and
// parsing 20,000 events took most of a large re-run's time.
const (
	ModelRequests = 200_000 // requests of one variant
	PageEvents    = 5_000   // events sent per variant; the rest only count
	BatchEvents   = 512     // events per `events` message
)

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

	mu    sync.Mutex
	labs  map[string]*lab.Lab // "name lang" → lab
	runs  map[string]context.CancelCauseFunc
	turn  chan struct{} // one run or exercise computation at a time
	cache *lab.AnswerCache
}

// New returns a session that posts replies to post (see Session.Post).
func New(post func([]byte), yield func()) *Session {
	return &Session{Post: post, Yield: yield, labs: map[string]*lab.Lab{}, runs: map[string]context.CancelCauseFunc{}, turn: make(chan struct{}, 1)}
}

// inMsg is any message the page sends: the run and cancel messages of
// PROTOCOL.md, and lab and exercises, which only the page's model takes.
type inMsg struct {
	Type     string         `json:"type"`
	ID       string         `json:"id"`
	Lab      string         `json:"lab"`
	Block    string         `json:"block"`
	Mode     string         `json:"mode"`
	Params   map[string]any `json:"params"`
	Variants []string       `json:"variants"`
	Seed     *uint64        `json:"seed"`
	// lab: a page's lab as data (the JSON text of `sim lab --json`) in a
	// language.
	Lang string `json:"lang"`
	Text string `json:"text"`
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
func (s *Session) Handle(data []byte) {
	var m inMsg
	x, err := jsonlite.Decode(data)
	if err == nil {
		if _, ok := x.(map[string]any); !ok {
			err = errors.New("want one JSON object per message")
		}
	}
	if err == nil {
		err = jsonlite.Assign(&m, x, jsonlite.Options{DisallowUnknown: true})
	}
	if err != nil {
		id := ""
		if obj, ok := x.(map[string]any); ok {
			id, _ = obj["id"].(string)
		}
		s.fail(id, "", "malformed message: "+err.Error())
		return
	}
	switch m.Type {
	case "lab":
		s.loadLab(&m)
	case "run":
		s.run(&m)
	case "cancel":
		s.mu.Lock()
		cancel := s.runs[m.ID]
		s.mu.Unlock()
		if cancel == nil {
			s.fail(m.ID, "id", msgf.Sprintf("no run with id %q in flight", m.ID))
			return
		}
		cancel(errCancelled)
	case "exercises":
		s.exercises(&m)
	default:
		s.fail(m.ID, "type", msgf.Sprintf(`unknown message type %q: want "run", "cancel", "lab" or "exercises"`, m.Type))
	}
}

var errCancelled = errors.New("cancelled")

func labKey(name, lang string) string {
	if lang == "" {
		lang = "en"
	}
	return name + " " + lang
}

// loadLab reads a page's lab from its data and keeps it under its page name
// and language. An error names the file and line, as sim run would.
func (s *Session) loadLab(m *inMsg) {
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

// fieldError is a refusal that names the message field or scenario key at
// fault, as the server's error messages do.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.msg }

// prepare checks a run request the way sim serve does for a model run.
func (s *Session) prepare(m *inMsg) (*runReq, error) {
	switch {
	case m.ID == "":
		return nil, &fieldError{"id", "a run needs an id (any string up to 64 bytes)"}
	case len(m.ID) > 64:
		return nil, &fieldError{"id", msgf.Sprintf("id is %d bytes long; at most 64", len(m.ID))}
	}
	switch m.Mode {
	case "", "model":
	case "real":
		return nil, &fieldError{"mode", "real runs measure real servers on your machine: they need the local server (make serve)"}
	default:
		return nil, &fieldError{"mode", msgf.Sprintf(`mode %q: want "model" or "real"`, m.Mode)}
	}
	if m.Lab == "" {
		return nil, &fieldError{"lab", `a run needs the page's name, e.g. "lab": "php-persistent-share"`}
	}
	page, err := s.lookup(m.Lab, "en")
	if err != nil {
		return nil, &fieldError{"lab", err.Error()}
	}
	req, err := page.Prepare(m.Block, m.Variants, m.Params)
	if fe, ok := as[*lab.FieldError](err); ok {
		return nil, &fieldError{fe.Field, fe.Msg}
	} else if err != nil {
		return nil, err
	}
	sub := req.Sub
	for i, sc := range req.Scenarios {
		if sc == nil {
			continue // a variant whose error the lesson expects
		}
		if err := checkLimits(sc); err != nil {
			if len(sub.Variants) > 1 {
				err.msg = msgf.Sprintf("variant %q: %s", sub.Variants[i].Name, err.msg)
			}
			return nil, err
		}
	}
	seed := uint64(1) // sim run's default, so the numbers match `sim run --json`
	if m.Seed != nil {
		seed = *m.Seed
	}
	return &runReq{id: m.ID, page: page, block: req.Block, sub: sub, set: req.Set, seed: seed, checked: req.Checked}, nil
}

// as finds the first error of type T in err's chain, as errors.As does
// (for chains of single errors), without errors.As's reflection, which
// would add to the .wasm.
func as[T error](err error) (T, bool) {
	for ; err != nil; err = errors.Unwrap(err) {
		if t, ok := err.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

func checkLimits(sc *sim.Scenario) *fieldError {
	if sc.Requests > ModelRequests {
		return &fieldError{"requests", msgf.Sprintf("requests: %d is more than a model run streams (at most %d)", sc.Requests, ModelRequests)}
	}
	if sc.Requests == 0 && sc.Load == "open" && sc.Rate*sc.Duration.Seconds() > float64(ModelRequests) {
		return &fieldError{"duration", msgf.Sprintf("duration: rate × duration = %.0f requests, more than a model run streams (at most %d); shorten duration or set requests", sc.Rate*sc.Duration.Seconds(), ModelRequests)}
	}
	return nil
}
