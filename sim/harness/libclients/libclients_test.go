package libclients

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/connlab/connlab/internal/testutil"
	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/servers"
)

// interpreters are the Pythons with requests to run: python3 on PATH and
// Debian's /usr/bin/python3 when it is another one (they may carry
// urllib3 2.x from pip and Debian's 1.26). None: the test is skipped.
func interpreters(t *testing.T) []string {
	t.Helper()
	var pys []string
	seen := map[string]bool{}
	var missing []string
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if err := Check(py); err != nil {
			missing = append(missing, err.Error())
			continue
		}
		out, err := exec.Command(py, "-c", "import os, sys; print(os.path.realpath(sys.executable))").Output()
		if err != nil {
			t.Fatalf("%s: %v", py, err)
		}
		if exe := strings.TrimSpace(string(out)); !seen[exe] {
			seen[exe] = true
			pys = append(pys, py)
		}
	}
	if len(pys) == 0 {
		t.Skipf("no Python with requests: %s", strings.Join(missing, "; "))
	}
	return pys
}

// upstream starts the harness's HTTPS upstream on loopback (the one sim
// upstream serves: TLS 1.3, keep-alive as nginx, server_time 2 ms) with
// rtt injected, and returns it, its URL and its CA file.
func upstream(t *testing.T, rtt time.Duration) (*servers.Servers, string, string, sim.Scenario) {
	t.Helper()
	s := sim.Default()
	s.RTT = rtt
	srv, err := servers.StartServers("127.0.0.1:0", "127.0.0.1:0", s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, srv.CAPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return srv, fmt.Sprintf("https://%s/", srv.Upstream.Addr()), ca, s
}

// gone fails t unless process pid has exited and been reaped.
func gone(t *testing.T, pid int) {
	t.Helper()
	if pid == 0 {
		t.Fatal("no PID")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("python (pid %d) is still there: kill(0) = %v", pid, err)
	}
}

func run(t *testing.T, s Spec) Result {
	t.Helper()
	res, err := RunPython(context.Background(), s)
	gone(t, res.PID)
	if err != nil {
		t.Fatal(err)
	}
	if n := res.Errors(); n != 0 {
		for _, e := range res.Events {
			if e.Error != "" {
				t.Fatalf("%d calls failed; first: call %d: %s", n, e.Call, e.Error)
			}
		}
	}
	return res
}

func conns(res *Result) map[int]bool {
	m := map[int]bool{}
	for _, e := range res.Events {
		m[e.Conn] = true
	}
	return m
}

// TestOneThread: at concurrency 1, requests.get() opens a connection per
// call; one Session opens one for all.
func TestOneThread(t *testing.T) {
	for _, py := range interpreters(t) {
		t.Run(py, func(t *testing.T) {
			for _, tc := range []struct {
				mode Mode
				want int
			}{{ModeGet, 20}, {ModeSession, 1}} {
				srv, url, ca, _ := upstream(t, 0)
				res := run(t, Spec{Python: py, URL: url, CAFile: ca, Mode: tc.mode, Threads: 1, Calls: 20})
				acc, reqs := srv.Upstream.Stats()
				t.Logf("%s, %s: 20 calls opened %d connections (upstream accepted %d, served %d), %d pool-full warnings",
					res.Versions, tc.mode, res.Opened(), acc, reqs, res.PoolFull)
				if res.Opened() != tc.want || res.Connects != tc.want || len(conns(&res)) != tc.want || acc != tc.want {
					t.Errorf("%s: opened %d, connects %d, %d connection ids, upstream accepted %d; want %d",
						tc.mode, res.Opened(), res.Connects, len(conns(&res)), acc, tc.want)
				}
				if reqs != 20 || res.PoolFull != 0 {
					t.Errorf("%s: upstream served %d requests, %d pool-full warnings; want 20, 0", tc.mode, reqs, res.PoolFull)
				}
				for i, e := range res.Events {
					if e.Call != i+1 || e.Worker != 1 || e.LocalPort == 0 || e.Conn == 0 {
						t.Fatalf("%s: event %d: %+v", tc.mode, i, e)
					}
					if tc.mode == ModeSession && (e.NewConn != (i == 0) || e.Reused == (i == 0) || e.LocalPort != res.Events[0].LocalPort) {
						t.Errorf("session: call %d: new_conn %v reused %v port %d", e.Call, e.NewConn, e.Reused, e.LocalPort)
					}
					if e.NewConn && (e.Handshake != sim.HandshakeFull || e.AppConnect < e.Connect || e.StartTransfer < e.AppConnect) {
						t.Errorf("%s: call %d: a new connection's phases: %+v", tc.mode, e.Call, e)
					}
				}
			}
		})
	}
}

// TestSharedSession: 20 threads share a Session, each calling again as
// soon as its call ends. With the default pool (pool_maxsize 10) more than
// 10 connections open and urllib3 discards the extra ones ("Connection
// pool is full"); with pool_maxsize 20, no more than 20 open and none is
// discarded. (Measured: the discards come as the load falls at the end,
// not during the run; TestBursts shows the churn.)
func TestSharedSession(t *testing.T) {
	// 20 ms of RTT makes each call long enough that the 20 threads are in
	// flight together (Python's GIL otherwise lets some calls end before
	// others start).
	const threads, calls = 20, 200
	for _, py := range interpreters(t) {
		t.Run(py, func(t *testing.T) {
			for _, tc := range []struct {
				mode    Mode
				maxsize int
			}{{ModeSession, 10}, {ModeSessionPool, 20}} {
				srv, url, ca, _ := upstream(t, 20*time.Millisecond)
				res := run(t, Spec{Python: py, URL: url, CAFile: ca, Mode: tc.mode, PoolMaxsize: tc.maxsize, Threads: threads, Calls: calls})
				acc, reqs := srv.Upstream.Stats()
				t.Logf("%s, %s pool_maxsize %d, %d threads, %d calls: opened %d connections (upstream accepted %d), %d pool-full warnings, %d of them for a connection last used in the last %d calls",
					res.Versions, tc.mode, tc.maxsize, threads, calls, res.Connects, acc, res.PoolFull, lastUsedAtEnd(&res, threads), threads)
				// Exact: what the library decides.
				if res.Opened() != res.Connects || acc != res.Connects || reqs != calls {
					t.Errorf("opened %d, connects %d, upstream accepted %d and served %d", res.Opened(), res.Connects, acc, reqs)
				}
				if len(res.Discarded) != res.PoolFull {
					t.Errorf("%d discarded ids for %d warnings", len(res.Discarded), res.PoolFull)
				}
				// Every connection ends in the pool or discarded, and the
				// pool keeps at most pool_maxsize.
				if kept := res.Connects - res.PoolFull; kept < 1 || kept > tc.maxsize {
					t.Errorf("%d connections opened, %d discarded: %d kept, want 1 to %d", res.Connects, res.PoolFull, kept, tc.maxsize)
				}
				if tc.maxsize >= threads {
					// No more connections than threads, and room for all.
					if res.Connects > threads || res.PoolFull != 0 {
						t.Errorf("pool_maxsize %d: %d connections, %d warnings; want ≤ %d, 0", tc.maxsize, res.Connects, res.PoolFull, threads)
					}
					continue
				}
				// Bounded: how many calls overlap is the machine's timing.
				if res.Connects <= tc.maxsize || res.PoolFull < 1 {
					t.Errorf("pool_maxsize %d, %d threads: %d connections, %d warnings; want > %d, ≥ 1", tc.maxsize, threads, res.Connects, res.PoolFull, tc.maxsize)
				}
			}
		})
	}
}

// lastUsedAtEnd counts the discarded connections whose last call was
// among the run's last n.
func lastUsedAtEnd(res *Result, n int) int {
	last := map[int]int{}
	for i, e := range res.Events {
		last[e.Conn] = i
	}
	k := 0
	for _, c := range res.Discarded {
		if last[c] >= len(res.Events)-n {
			k++
		}
	}
	return k
}

// TestBursts: 20 threads share a Session and call in bursts (all at
// once, then none). With the default pool each burst after the first
// finds only pool_maxsize connections kept, opens the rest again, and
// discards them after: the churn. With pool_maxsize 20 the first burst's
// connections serve them all.
func TestBursts(t *testing.T) {
	const threads, bursts = 20, 5
	for _, py := range interpreters(t) {
		t.Run(py, func(t *testing.T) {
			for _, tc := range []struct {
				mode    Mode
				maxsize int
			}{{ModeSession, 10}, {ModeSessionPool, 20}} {
				srv, url, ca, _ := upstream(t, 20*time.Millisecond)
				res := run(t, Spec{Python: py, URL: url, CAFile: ca, Mode: tc.mode, PoolMaxsize: tc.maxsize,
					Threads: threads, Calls: threads * bursts, Bursts: true})
				acc, _ := srv.Upstream.Stats()
				t.Logf("%s, %s pool_maxsize %d, %d bursts of %d calls: opened %d connections (upstream accepted %d), %d pool-full warnings",
					res.Versions, tc.mode, tc.maxsize, bursts, threads, res.Connects, acc, res.PoolFull)
				if acc != res.Connects || res.Opened() != res.Connects || len(res.Discarded) != res.PoolFull {
					t.Errorf("connects %d, opened %d, upstream accepted %d, %d discarded ids for %d warnings",
						res.Connects, res.Opened(), acc, len(res.Discarded), res.PoolFull)
				}
				if kept := res.Connects - res.PoolFull; kept < 1 || kept > tc.maxsize {
					t.Errorf("%d connections opened, %d discarded: %d kept, want 1 to %d", res.Connects, res.PoolFull, kept, tc.maxsize)
				}
				if tc.maxsize >= threads {
					if res.Connects > threads || res.PoolFull != 0 {
						t.Errorf("pool_maxsize %d: %d connections, %d warnings; want ≤ %d, 0", tc.maxsize, res.Connects, res.PoolFull, threads)
					}
					continue
				}
				// If every burst has all its calls in flight at once, each
				// opens threads-maxsize again (60 and 50 here); how many
				// overlap is the machine's timing, so: more than one burst's.
				if res.Connects <= threads || res.PoolFull <= threads-tc.maxsize {
					t.Errorf("pool_maxsize %d: %d connections, %d warnings; want > %d, > %d (churn after the first burst)",
						tc.maxsize, res.Connects, res.PoolFull, threads, threads-tc.maxsize)
				}
			}
		})
	}
}

// TestOverhead measures what Python and requests add to a reused call:
// the median reused call at rtt 0 minus the server's work, and minus a Go
// net/http client's median on the same server (the server's and
// loopback's own cost).
func TestOverhead(t *testing.T) {
	const calls = 200
	for _, py := range interpreters(t) {
		t.Run(py, func(t *testing.T) {
			_, url, ca, s := upstream(t, 0)
			res := run(t, Spec{Python: py, URL: url, CAFile: ca, Mode: ModeSession, Threads: 1, Calls: calls})
			var reused []float64
			for _, e := range res.Events {
				if e.Reused {
					reused = append(reused, sim.MS(e.Total))
				}
			}
			if len(reused) != calls-1 {
				t.Fatalf("%d reused calls, want %d", len(reused), calls-1)
			}
			goMed := goReusedMedian(t, url, ca, calls)
			med := testutil.Median(reused)
			server := sim.MS(s.ServerTime)
			t.Logf("%s: reused call median %.3f ms; minus server_time %.3f ms: %.3f ms; a Go net/http client's median %.3f ms: Python/requests adds %.3f ms",
				res.Versions, med, server, med-server, goMed, med-goMed)
			if med < server {
				t.Errorf("median reused call %.3f ms is shorter than the server's work %.3f ms", med, server)
			}
		})
	}
}

// goReusedMedian is the median time of a Go net/http client's reused
// calls to url, in ms.
func goReusedMedian(t *testing.T, url, caFile string, calls int) float64 {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var ms []float64
	for i := range calls {
		t0 := time.Now()
		r, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if i > 0 {
			ms = append(ms, sim.MS(time.Since(t0)))
		}
	}
	return testutil.Median(ms)
}

// TestEventShape: the program's call lines are sim.Event's JSON, key for
// key (AppendJSON of what ParseEvent read).
func TestEventShape(t *testing.T) {
	py := interpreters(t)[0]
	_, url, ca, _ := upstream(t, 0)
	out, err := exec.Command(py, "-c", requestsClient, "--url", url, "--ca", ca, "--mode", "session", "--calls", "2").Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	n := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m["kind"] == nil {
			continue
		}
		n++
		e, err := ParseEvent(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		var back map[string]any
		if err := json.Unmarshal(e.AppendJSON(nil), &back); err != nil {
			t.Fatal(err)
		}
		if got, want := slices.Sorted(maps.Keys(m)), slices.Sorted(maps.Keys(back)); !slices.Equal(got, want) {
			t.Errorf("keys %v, sim.Event's %v", got, want)
		}
		for k, v := range back {
			if fmt.Sprint(v) != fmt.Sprint(m[k]) {
				t.Errorf("%s: %v, sim.Event's %v", k, m[k], v)
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d events in %s", n, out)
	}
}

// TestStopped: a run ends, and the Python process with it, when its
// context is cancelled and when its time is up.
func TestStopped(t *testing.T) {
	py := interpreters(t)[0]
	_, url, ca, _ := upstream(t, 200*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := Spec{Python: py, URL: url, CAFile: ca, Mode: ModeSession, Threads: 4, Calls: 10_000,
		OnEvent: func(sim.Event) { cancel() }}
	t0 := time.Now()
	res, err := RunPython(ctx, spec)
	gone(t, res.PID)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err %v", err)
	}
	if d := time.Since(t0); d > 10*time.Second || len(res.Events) == 0 || len(res.Events) > 8 {
		t.Errorf("cancelled after the first event: returned after %s with %d events", d, len(res.Events))
	}

	spec.OnEvent = nil
	spec.Timeout = 500 * time.Millisecond
	res, err = RunPython(context.Background(), spec)
	gone(t, res.PID)
	if err == nil || !strings.Contains(err.Error(), "within 500ms") {
		t.Fatalf("timed out: err %v", err)
	}
}

// fakePython writes a shell script that ignores its arguments and prints
// out, as a stand-in interpreter.
func fakePython(t *testing.T, out string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python3")
	script := "#!/bin/sh\ncat <<'EOF'\n" + out + "EOF\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProtocolErrors: output that breaks the protocol is an error naming
// the line.
func TestProtocolErrors(t *testing.T) {
	const versions = `{"versions":{"python":"3","requests":"2","urllib3":"1"}}` + "\n"
	const ev = `{"kind":"call","at_ms":2,"call":1,"worker":1,"conn":1,"new_conn":true,"reused":false,"num_connects":1,"start_ms":1,"total_ms":1,"error":""}` + "\n"
	const summary = `{"summary":{"calls":1,"connects":1,"pool_full":0,"discarded":[]}}` + "\n"
	for _, tc := range []struct{ name, out, want string }{
		{"ok", versions + ev + summary, ""},
		{"not JSON", versions + "Traceback\n", "python line 2: invalid character"},
		{"unknown key", versions + strings.Replace(ev, `"error"`, `"oops"`, 1), `python line 2: json: unknown field "oops"`},
		{"other kind", versions + strings.Replace(ev, `"call",`, `"open",`, 1), `python line 2: kind "open"`},
		{"num_connects", versions + strings.Replace(ev, `"num_connects":1`, `"num_connects":0`, 1), "python line 2: num_connects 0"},
		{"no versions", ev + summary, "python line 1: an event before the versions"},
		{"too many", versions + ev + ev + ev + summary, "python line 4: more lines"},
		{"no summary", versions + ev, "reported 0 calls and printed 1 events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunPython(context.Background(), Spec{Python: fakePython(t, tc.out), URL: "https://127.0.0.1:1/", Mode: ModeGet, Threads: 1, Calls: 1})
			gone(t, res.PID)
			if tc.want == "" {
				if err != nil || len(res.Events) != 1 || !res.Events[0].NewConn {
					t.Fatalf("err %v, events %+v", err, res.Events)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestSpecChecks: a run goes to loopback only, within its limits; a
// missing interpreter names the Debian package.
func TestSpecChecks(t *testing.T) {
	ok := Spec{URL: "https://127.0.0.1:1/", Mode: ModeGet, Threads: 1, Calls: 1}
	for _, tc := range []struct {
		change func(*Spec)
		want   string
	}{
		{func(s *Spec) { s.URL = "https://example.com/" }, "only loopback"},
		{func(s *Spec) { s.URL = "ftp://127.0.0.1/" }, "not http or https"},
		{func(s *Spec) { s.Mode = "pool" }, `mode "pool"`},
		{func(s *Spec) { s.Mode = ModeSessionPool }, "pool_maxsize 0"},
		{func(s *Spec) { s.Threads = 0 }, "threads 0"},
		{func(s *Spec) { s.Threads, s.Calls, s.Bursts = 2, 3, true }, "not a multiple"},
		{func(s *Spec) { s.Calls = MaxCalls + 1 }, "calls 100001"},
		{func(s *Spec) { s.Python = "/nonexistent/python3" }, "apt-get install python3-requests"},
	} {
		s := ok
		tc.change(&s)
		if _, err := RunPython(context.Background(), s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", s, err, tc.want)
		}
	}
}
