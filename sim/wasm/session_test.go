//go:build !js

// The tests of this package run the model natively and compare it with
// sim serve and sim run; the .wasm itself is tested in a browser (site/).
// Under GOOS=js only the package is vetted (make vet).

package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim/class"
	"github.com/connlab/connlab/sim/cli"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/server"
	"github.com/connlab/connlab/sim/web"
)

// session collects a Session's replies.
type session struct {
	*Session
	out []json.RawMessage
}

func newSession() *session {
	s := &session{}
	s.Session = New(func(b []byte) { s.out = append(s.out, append(json.RawMessage(nil), b...)) }, nil)
	return s
}

func (s *session) handle(t *testing.T, v any) []json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	s.out = nil
	s.Handle(b)
	return s.out
}

func msgType(m json.RawMessage) string {
	var x struct{ Type string }
	json.Unmarshal(m, &x)
	return x.Type
}

// load gives the session a lab file of the repository as the page does:
// its data, as `sim lab --json` prints it.
func (s *session) load(t *testing.T, name, lang, file string) {
	t.Helper()
	s.loadFile(t, name, lang, filepath.Join("..", "..", file))
}

// labMessage is the page's lab message for a lab file.
func labMessage(t testing.TB, name, lang, file string) map[string]any {
	t.Helper()
	l, err := lab.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Data()
	if err != nil {
		t.Fatal(err)
	}
	text, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"type": "lab", "id": "s", "lab": name, "lang": lang, "text": string(text)}
}

func simRun(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	args = append([]string{"run", "--json"}, args...)
	if code := cli.Run(context.Background(), &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}, args); code > 1 {
		t.Fatalf("sim %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// summaries reads what a run gave per variant: the done message's summary
// and error, byte for byte, and its checks.
type result struct {
	summaries map[string]string
	checks    string
}

func doneOf(t *testing.T, out []json.RawMessage) result {
	t.Helper()
	r := result{summaries: map[string]string{}}
	for _, m := range out {
		switch msgType(m) {
		case "error":
			t.Fatalf("error: %s", m)
		case "done":
			var d struct {
				Variants []struct {
					Name    string
					Summary json.RawMessage
					Error   string
				}
				Checks json.RawMessage
			}
			json.Unmarshal(m, &d)
			for _, v := range d.Variants {
				r.summaries[v.Name] = string(v.Summary) + " " + v.Error
			}
			r.checks = string(d.Checks)
		}
	}
	if r.checks == "" {
		t.Fatalf("no done message in %d replies", len(out))
	}
	return r
}

func fromCLI(t *testing.T, v map[string]any, block string) result {
	t.Helper()
	r := result{summaries: map[string]string{}}
	for _, b := range v["blocks"].([]any) {
		bm := b.(map[string]any)
		if bm["id"] != block {
			continue
		}
		for _, vr := range bm["variants"].([]any) {
			vm := vr.(map[string]any)
			s := "null"
			if vm["summary"] != nil {
				raw, _ := json.Marshal(vm["summary"])
				s = string(raw)
			}
			e, _ := vm["error"].(string)
			r.summaries[vm["name"].(string)] = s + " " + e
		}
		raw, _ := json.Marshal(bm["checks"])
		r.checks = string(raw)
	}
	return r
}

// reencode puts a done message's summaries through the same decoding as
// the CLI's indented output, so both compare in one spelling, every number
// exactly.
func reencode(r result) result {
	out := result{summaries: map[string]string{}}
	for k, v := range r.summaries {
		js, e, _ := strings.Cut(v, " ")
		var x any
		json.Unmarshal([]byte(js), &x)
		raw, _ := json.Marshal(x)
		out.summaries[k] = string(raw) + " " + e
	}
	var x any
	json.Unmarshal([]byte(r.checks), &x)
	raw, _ := json.Marshal(x)
	out.checks = string(raw)
	return out
}

// Every block of every lab, as written (seed 1, checks included) and with a
// changed key and seed: the page's model gives sim run --json's numbers.
func TestRunsMatchSimRun(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "labs", "*.md"))
	more, _ := filepath.Glob(filepath.Join("..", "..", "content", "*.md"))
	blocks := 0
	for _, f := range append(files, more...) {
		if strings.HasSuffix(f, ".ko.md") {
			continue
		}
		if src, _ := os.ReadFile(f); !bytes.Contains(src, []byte("```sim")) {
			continue
		}
		rel, _ := filepath.Rel(filepath.Join("..", ".."), f)
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		v := simRun(t, f)
		if len(v["blocks"].([]any)) == 0 {
			continue
		}
		s := newSession()
		s.load(t, name, "en", filepath.ToSlash(rel))
		for i, b := range v["blocks"].([]any) {
			id := b.(map[string]any)["id"].(string)
			blocks++
			got := reencode(doneOf(t, s.handle(t, map[string]any{"type": "run", "id": "r", "lab": name, "block": id})))
			want := fromCLI(t, v, id)
			if got.checks != want.checks || len(got.summaries) != len(want.summaries) {
				t.Errorf("%s %s: checks %s, sim run has %s", name, id, got.checks, want.checks)
			}
			for k, w := range want.summaries {
				if got.summaries[k] != w {
					t.Errorf("%s %s %s: the page's model gives\n%s\nsim run gives\n%s", name, id, k, got.summaries[k], w)
				}
			}
			// Seed 3 and a changed key (on each lab's first block, to keep
			// the test short): no expectations (they describe the block as
			// written), the same numbers as sim run --set --seed.
			if i > 0 {
				continue
			}
			got = reencode(doneOf(t, s.handle(t, map[string]any{"type": "run", "id": "r", "lab": name, "block": id, "params": map[string]any{"rtt": "7ms"}, "seed": 3})))
			want = fromCLI(t, simRun(t, "--block", id, "--set", "rtt=7ms", "--seed", "3", f), id)
			if got.checks != "[]" || want.checks != "[]" {
				t.Errorf("%s %s with rtt=7ms: checks %s / %s, want none", name, id, got.checks, want.checks)
			}
			for k, w := range want.summaries {
				if got.summaries[k] != w {
					t.Errorf("%s %s %s with rtt=7ms seed 3: the page's model gives\n%s\nsim run gives\n%s", name, id, k, got.summaries[k], w)
				}
			}
		}
	}
	if blocks < 10 {
		t.Fatalf("only %d blocks found", blocks)
	}
}

// The model in the page has sim serve's limits (both take
// runsvc.DefaultLimits) but streams fewer events, enough to draw; its
// exercise seeds are class mode's.
func TestLimitsBesideServer(t *testing.T) {
	l := server.DefaultLimits
	if limits.ModelEvents != PageEvents || PageEvents > l.ModelEvents || PageEvents < 1000 {
		t.Errorf("the page streams %d events a variant (PageEvents %d), sim serve %d: want fewer, and enough to draw (1,000)", limits.ModelEvents, PageEvents, l.ModelEvents)
	}
	if MaxSeed != class.MaxSeed {
		t.Errorf("MaxSeed %d, class.MaxSeed %d", MaxSeed, class.MaxSeed)
	}
}

// Refusals name their field; a real run says it needs the local server;
// a run streams at most PageEvents events per variant, then truncated.
func TestRefusalsAndStream(t *testing.T) {
	s := newSession()
	s.load(t, "php-persistent-share", "en", "labs/php-persistent-share.md")
	for _, c := range []struct {
		msg   map[string]any
		field string
		says  string
	}{
		{map[string]any{"type": "run", "id": "a", "lab": "php-persistent-share", "block": "across-requests", "mode": "real"}, "mode", "make serve"},
		{map[string]any{"type": "run", "id": "a", "lab": "php-persistent-share", "block": "nope"}, "block", "no block"},
		{map[string]any{"type": "run", "id": "a", "lab": "other", "block": "x"}, "lab", "other"},
		{map[string]any{"type": "run", "id": "a", "lab": "php-persistent-share", "block": "across-requests", "params": map[string]any{"rtt": "fast"}}, "rtt", "rtt"},
		{map[string]any{"type": "run", "id": "a", "lab": "php-persistent-share", "block": "across-requests", "params": map[string]any{"requests": 300000}}, "requests", "200000"},
		{map[string]any{"type": "cancel", "id": "zz"}, "id", "zz"},
		{map[string]any{"type": "nope", "id": "a"}, "type", "nope"},
	} {
		out := s.handle(t, c.msg)
		var e runsvc.Error
		if len(out) != 1 || json.Unmarshal(out[0], &e) != nil || e.Type != "error" || e.Field != c.field || !strings.Contains(e.Message, c.says) {
			t.Errorf("%v: got %s, want an error on %q saying %q", c.msg, out, c.field, c.says)
		}
	}
	out := s.handle(t, map[string]any{"type": "run", "id": "big", "lab": "php-persistent-share", "block": "across-requests", "params": map[string]any{"requests": 20000}})
	events, truncated := 0, 0
	for _, m := range out {
		switch msgType(m) {
		case "events":
			var b struct{ Events []json.RawMessage }
			json.Unmarshal(m, &b)
			if len(b.Events) > limits.BatchEvents {
				t.Errorf("a batch of %d events", len(b.Events))
			}
			events += len(b.Events)
		case "truncated":
			truncated++
		}
	}
	if msgType(out[0]) != "started" || msgType(out[len(out)-1]) != "done" {
		t.Errorf("replies from %s to %s, want started … done", msgType(out[0]), msgType(out[len(out)-1]))
	}
	var started runsvc.Started
	json.Unmarshal(out[0], &started)
	if n := len(started.Variants); events != n*PageEvents || truncated != n {
		t.Errorf("%d events and %d truncated for %d variants, want %d per variant and one truncated each", events, truncated, n, PageEvents)
	}
}

// A cancel that arrives while a run computes (the page's Yield) stops it.
func TestCancel(t *testing.T) {
	cancelAtFirstYield(t, "php-persistent-share", `{"type":"run","id":"c","lab":"php-persistent-share","block":"across-requests","params":{"requests":200000}}`)
}

// cancelAtFirstYield loads lab (labs/LAB.md) into a session whose Yield
// sends a cancel the first time a run yields, runs run (id "c"), and
// checks that the run ended cancelled at that yield.
func cancelAtFirstYield(t *testing.T, lab, run string) {
	t.Helper()
	var s *Session
	var out []json.RawMessage
	yields := 0
	s = New(func(b []byte) { out = append(out, append(json.RawMessage(nil), b...)) }, func() {
		if yields++; yields == 1 {
			s.Handle([]byte(`{"type":"cancel","id":"c"}`))
		}
	})
	b, _ := json.Marshal(labMessage(t, lab, "en", filepath.Join("..", "..", "labs", lab+".md")))
	s.Handle(b)
	s.Handle([]byte(run))
	if len(out) == 0 {
		t.Fatal("no reply to the run")
	}
	last := out[len(out)-1]
	var e runsvc.Error
	json.Unmarshal(last, &e)
	if yields == 0 || e.Type != "error" || e.Message != "cancelled" {
		t.Errorf("after %d yields the last reply is %s; want the run cancelled at the first", yields, last)
	}
}

// A lab's exercises for a seed, in each language, are what GET
// /exercise/api answers.
func TestExercisesMatchAPI(t *testing.T) {
	root := filepath.Join("..", "..")
	wd, _ := os.Getwd()
	if err := os.Chdir(root); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	cat, err := class.LoadCatalog(web.NewIndex([]string{"labs"}, t.Logf))
	if err != nil {
		t.Fatal(err)
	}
	h := cat.APIHandler(nil)
	checked := 0
	for _, l := range cat.Labs {
		s := newSession()
		for _, lang := range web.Langs {
			file := "labs/" + l.Name + ".md"
			if lang != "en" {
				file = "labs/" + l.Name + "." + lang + ".md"
			}
			if _, err := os.Stat(file); err != nil {
				continue
			}
			s.loadFile(t, l.Name, lang, file)
			for _, seed := range []uint64{0, 7} {
				out := s.handle(t, map[string]any{"type": "exercises", "id": "x", "lab": l.Name, "lang": lang, "seed": seed})
				if len(out) != 1 || msgType(out[0]) != "exercises" {
					t.Fatalf("%s %s seed %d: %s", l.Name, lang, seed, out)
				}
				var got map[string]any
				json.Unmarshal(out[0], &got)
				delete(got, "type")
				delete(got, "id")
				rec := newRecorder()
				h.ServeHTTP(rec, mustRequest("/exercise/api?lab="+l.Name+"&lang="+lang+"&seed="+itoa(seed)))
				var want map[string]any
				json.Unmarshal(rec.body.Bytes(), &want)
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				if !bytes.Equal(g, w) {
					t.Errorf("%s %s seed %d: the page's model gives\n%s\n/exercise/api gives\n%s", l.Name, lang, seed, g, w)
				}
				checked++
			}
		}
	}
	if checked < 4 {
		t.Fatalf("only %d labs × languages × seeds checked", checked)
	}
}

func (s *session) loadFile(t *testing.T, name, lang, file string) {
	t.Helper()
	out := s.handle(t, labMessage(t, name, lang, file))
	if len(out) != 1 || msgType(out[0]) != "lab" {
		t.Fatalf("lab %s: %s", file, out)
	}
}

// The probe's message (workers and threads each within their limits, 10^8
// thread slots together) once held the page's worker for 42 s and took
// gigabytes: the worker answers it with little memory, and a cancel that
// arrives while it runs stops it.
func TestHugeThreads(t *testing.T) {
	s := newSession()
	s.load(t, "idle-timeouts", "en", "labs/idle-timeouts.md")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := s.handle(t, map[string]any{"type": "run", "id": "h", "lab": "idle-timeouts", "block": "race",
		"params": map[string]any{"requests": 1, "workers": 1000, "threads": 100000}})
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("1000 workers × 100000 threads allocated %d MB for one request", got>>20)
	}
	if len(out) == 0 || msgType(out[len(out)-1]) != "done" {
		t.Errorf("the run's %d replies do not end with done", len(out))
	}
	cancelAtFirstYield(t, "idle-timeouts", `{"type":"run","id":"c","lab":"idle-timeouts","block":"race","params":{"requests":200000,"workers":1000,"threads":100000}}`)
}
