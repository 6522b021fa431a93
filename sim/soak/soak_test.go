//go:build linux

package soak

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/connlab/connlab/internal/testutil"
)

func TestMain(m *testing.M) {
	code := func() int {
		if os.Getenv("CONNLAB_SOAK") != "1" {
			return m.Run() // the test skips itself
		}
		defer testutil.RemoveSimBinary()
		// sim serve runs a sim built without the race detector (what a
		// user runs); CONNLAB_SIM_BIN names a prebuilt one.
		if _, err := testutil.SimBinary(); err != nil {
			fmt.Fprintf(os.Stderr, "soak: %v\n", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// counts reads an environment override of a count.
func count(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n >= 0 {
		return n
	}
	return def
}

// TestSoak runs 1,000 model runs and 40 real validations ("Run real",
// through the harness) through one `sim serve`, some cancelled and some
// left by their page mid-run, and checks that the server comes back to
// rest: its memory within a generous bound, its open files, goroutines,
// child processes, network namespaces and temporary folders as before.
// Forty real runs go through every kind of real run twice (realRun and
// the cancellations repeat every 20), so a resource left by any kind is
// left twice over, beyond the bounds below. CONNLAB_SOAK_MODEL and
// CONNLAB_SOAK_REAL change the counts (make soak: the long soak).
func TestSoak(t *testing.T) {
	if os.Getenv("CONNLAB_SOAK") != "1" {
		t.Skip("the soak test runs with CONNLAB_SOAK=1 (.ci/run sets it)")
	}
	models, reals := count("CONNLAB_SOAK_MODEL", 1000), count("CONNLAB_SOAK_REAL", 40)
	// Orphans of the server's processes are reparented to this test, so a
	// process left behind is still found among its descendants.
	const prSetChildSubreaper = 36 // linux/prctl.h
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Logf("PR_SET_CHILD_SUBREAPER: %v (orphans may escape the count)", errno)
	}
	srv := startServe(t)
	began := time.Now()

	// Warm up what a first run makes once (certificates, caches), then
	// take the resting state.
	ws := srv.dial(t)
	for i := range 5 {
		srv.run(t, ws, fmt.Sprint("warm", i), modelRun(i), false)
	}
	srv.run(t, ws, "warm-real", realRun(0), false)
	ws.Close()
	before := srv.rest(t)
	t.Logf("at rest before: %s", before)

	// Model runs: four pages at once; every 50th run is cancelled once
	// started, every 100th page leaves in the middle of a run.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, err := srv.dialErr()
			if err != nil {
				errs <- err
				return
			}
			defer func() { ws.Close() }()
			for i := p; i < models; i += 4 {
				switch {
				case i%100 == 99:
					req := modelRun(i)
					req["id"] = fmt.Sprint("m", i)
					req["params"] = map[string]any{"requests": 100000}
					if err := ws.WriteJSON(req); err != nil {
						errs <- err
						return
					}
					ws.Close() // the page leaves with its run in flight
					if ws, err = srv.dialErr(); err != nil {
						errs <- err
						return
					}
				default:
					if err := srv.runErr(ws, fmt.Sprint("m", i), modelRun(i), i%50 == 49); err != nil {
						errs <- fmt.Errorf("model run %d: %w", i, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d model runs in %s", models, time.Since(start).Round(time.Millisecond))

	// Real validations, one at a time (the server queues them anyway):
	// every tenth, and every other one on nginx or redis-server, is
	// cancelled once its first events arrive (their servers' folders must
	// go too).
	start = time.Now()
	ws = srv.dial(t)
	for i := range reals {
		cancel := i%10 == 9 || i%20 == 4 || i%20 == 8
		if err := srv.runErr(ws, fmt.Sprint("r", i), realRun(i), cancel); err != nil {
			t.Fatalf("real run %d: %v", i, err)
		}
	}
	ws.Close()
	t.Logf("%d real runs in %s", reals, time.Since(start).Round(time.Millisecond))

	after := srv.rest(t)
	t.Logf("at rest after: %s (the whole soak took %s)", after, time.Since(began).Round(time.Second))
	if after.rssMB > before.rssMB+100 {
		t.Errorf("resident memory grew from %d MB to %d MB", before.rssMB, after.rssMB)
	}
	if after.fds > before.fds+2 {
		t.Errorf("open files: %d before, %d after: %v", before.fds, after.fds, after.fdNames)
	}
	if after.goroutines > before.goroutines+2 {
		t.Errorf("goroutines: %d before, %d after", before.goroutines, after.goroutines)
	}
	if len(after.children) > 0 {
		t.Errorf("processes left: %v", after.children)
	}
	if len(after.netns) > 0 {
		t.Errorf("network namespaces held by processes left: %v", after.netns)
	}
	if fmt.Sprint(after.tmp) != fmt.Sprint(before.tmp) {
		t.Errorf("temporary folders: %v before, %v after", before.tmp, after.tmp)
	}
}

// modelRun is the i-th model run: a few blocks in turn, small enough that
// a thousand take seconds.
func modelRun(i int) map[string]any {
	blocks := []struct {
		lab, block string
		params     map[string]any
	}{
		{"php-persistent-share", "across-requests", nil},
		{"php-persistent-pools", "workers", map[string]any{"requests": 200}},
		{"connection-pool", "pool", map[string]any{"duration": "5s"}},
		{"idle-timeouts", "race", map[string]any{"requests": 500}},
		{"nginx-keepalive", "with", map[string]any{"duration": "2s"}},
	}
	b := blocks[i%len(blocks)]
	m := map[string]any{"type": "run", "lab": b.lab, "block": b.block, "mode": "model", "seed": i + 1}
	if b.params != nil {
		m["params"] = b.params
	}
	return m
}

// realRun is the i-th real validation: the PHP lab's first block, small,
// and every fifth run a block on the real nginx or redis-server when
// they are installed (the harness falls back to its own stand-ins).
func realRun(i int) map[string]any {
	switch i % 10 {
	case 4:
		return map[string]any{"type": "run", "lab": "nginx-keepalive", "block": "with", "mode": "real",
			"params": map[string]any{"duration": "1s", "concurrency": 2}}
	case 8:
		return map[string]any{"type": "run", "lab": "connection-pool", "block": "pool", "mode": "real",
			"params": map[string]any{"duration": "1s", "concurrency": 2}}
	}
	return map[string]any{"type": "run", "lab": "php-persistent-share", "block": "across-requests", "mode": "real",
		"params": map[string]any{"requests": 3, "rtt": "1ms", "dns": "0s"}}
}

type server struct {
	*testutil.Serve
	base string
	cmd  *exec.Cmd
	tmp  string // its TMPDIR
}

// startServe starts sim serve with an empty site and a TMPDIR of its own,
// whose entries the soak counts (testutil.StartServe stops it).
func startServe(t *testing.T) *server {
	t.Helper()
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	public := filepath.Join(dir, "public")
	os.MkdirAll(tmp, 0o755)
	os.MkdirAll(public, 0o755)
	labs, _ := filepath.Abs("../../labs")
	srv := testutil.StartServe(t, "", []string{"TMPDIR=" + tmp}, "--public", public, "--labs", labs)
	return &server{Serve: srv, base: srv.Base, cmd: srv.Cmd, tmp: tmp}
}

func (s *server) dialErr() (*websocket.Conn, error) {
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.base, "http")+"/ws", http.Header{"Origin": {s.base}})
	return ws, err
}

func (s *server) dial(t *testing.T) *websocket.Conn {
	t.Helper()
	ws, err := s.dialErr()
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func (s *server) run(t *testing.T, ws *websocket.Conn, id string, req map[string]any, cancel bool) {
	t.Helper()
	if err := s.runErr(ws, id, req, cancel); err != nil {
		t.Fatal(err)
	}
}

// runErr sends a run and reads to its end: done, or with cancel, the
// "cancelled" error after the first events (or done, if it ended first).
func (s *server) runErr(ws *websocket.Conn, id string, req map[string]any, cancel bool) error {
	req["id"] = id
	if err := ws.WriteJSON(req); err != nil {
		return err
	}
	cancelled := false
	ws.SetReadDeadline(time.Now().Add(3 * time.Minute))
	for {
		var m struct {
			Type     string `json:"type"`
			ID       string `json:"id"`
			Message  string `json:"message"`
			Variants []struct {
				Summary *struct {
					Requests int `json:"requests"`
				} `json:"summary"`
				Error string `json:"error"`
			} `json:"variants"`
		}
		if err := ws.ReadJSON(&m); err != nil {
			return err
		}
		if m.ID != id {
			continue
		}
		switch m.Type {
		case "events", "started":
			if cancel && !cancelled && m.Type == "events" {
				cancelled = true
				if err := ws.WriteJSON(map[string]string{"type": "cancel", "id": id}); err != nil {
					return err
				}
			}
		case "error":
			if cancelled && m.Message == "cancelled" {
				return nil
			}
			return fmt.Errorf("error: %s", m.Message)
		case "done":
			if len(m.Variants) == 0 {
				return fmt.Errorf("done without variants")
			}
			for _, v := range m.Variants {
				if v.Summary == nil && v.Error == "" {
					return fmt.Errorf("a variant without a summary")
				}
			}
			return nil
		}
	}
}

// state is what the server holds at rest.
type state struct {
	rssMB, fds, goroutines int
	fdNames                []string
	children               []string // descendants of this test: pid and command
	netns                  []string // their network namespaces other than ours
	tmp                    []string // entries of the server's TMPDIR
}

func (st state) String() string {
	return fmt.Sprintf("RSS %d MB, %d open files, %d goroutines, %d child processes, %d namespaces, %d temporary entries",
		st.rssMB, st.fds, st.goroutines, len(st.children), len(st.netns), len(st.tmp))
}

// rest waits (up to a minute) for the server to have no run and no socket,
// and for its goroutines and child processes to settle, then measures.
func (s *server) rest(t *testing.T) state {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var st state
	for {
		var status struct {
			Clients    int `json:"clients"`
			Runs       int `json:"runs"`
			Goroutines int `json:"goroutines"`
		}
		resp, err := http.Get(s.base + "/api/status")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&status)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		st = s.measure(t)
		st.goroutines = status.Goroutines
		prev := st.goroutines
		if status.Clients == 0 && status.Runs == 0 && len(st.children) == 0 {
			// Goroutines of closed connections take a moment to end.
			time.Sleep(time.Second)
			if resp, err := http.Get(s.base + "/api/status"); err == nil {
				json.NewDecoder(resp.Body).Decode(&status)
				resp.Body.Close()
				if status.Goroutines <= prev {
					st.goroutines = status.Goroutines
					return st
				}
			}
		}
		if time.Now().After(deadline) {
			t.Logf("not at rest after a minute: %+v, %s", status, st)
			return st
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *server) measure(t *testing.T) state {
	t.Helper()
	pid := s.cmd.Process.Pid
	var st state
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.Atoi(f[1])
				st.rssMB = kb / 1024
			}
		}
	}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	st.fds = len(fds)
	for _, fd := range fds {
		if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil {
			st.fdNames = append(st.fdNames, target)
		}
	}
	sort.Strings(st.fdNames)
	// Descendants of this test other than the server itself.
	parent := map[int]int{}
	comm := map[int]string{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		n, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		rest := string(b)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			comm[n] = rest[strings.IndexByte(rest, '(')+1 : i]
			if f := strings.Fields(rest[i+1:]); len(f) >= 2 {
				parent[n], _ = strconv.Atoi(f[1])
			}
		}
	}
	self := os.Getpid()
	ours, _ := os.Readlink("/proc/self/ns/net")
	for n := range parent {
		if n == pid || n == self {
			continue
		}
		for a := parent[n]; a > 1; a = parent[a] {
			if a == self {
				st.children = append(st.children, fmt.Sprintf("%d %s", n, comm[n]))
				if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", n)); err == nil && ns != ours {
					st.netns = append(st.netns, ns)
				}
				break
			}
		}
	}
	sort.Strings(st.children)
	entries, _ := os.ReadDir(s.tmp)
	for _, e := range entries {
		st.tmp = append(st.tmp, e.Name())
	}
	return st
}
