//go:build linux

package stack

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	ChildMain() // RunIsolated re-executes this test binary
	os.Exit(m.Run())
}

// TestNginxConf: without keepalive nginx 1.22 speaks HTTP/1.0 with
// Connection: close; with it, the three lines the fix needs are there.
func TestNginxConf(t *testing.T) {
	off, err := NginxConf(Config{}, "/d")
	if err != nil {
		t.Fatal(err)
	}
	on, err := NginxConf(Config{Keepalive: 16, NginxWorkers: 3}, "/d")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"keepalive 16;", "proxy_http_version 1.1;", `proxy_set_header Connection "";`, "worker_processes 3;"} {
		if !strings.Contains(on, w) {
			t.Errorf("keepalive config lacks %q:\n%s", w, on)
		}
		if w != "worker_processes 3;" && strings.Contains(off, w) {
			t.Errorf("config without keepalive has %q", w)
		}
	}
	for _, w := range []string{"server 127.0.0.1:5000;", "listen 127.0.0.1:8080;", "pid /d/nginx.pid;", "worker_processes 2;", "stub_status"} {
		if !strings.Contains(off, w) {
			t.Errorf("config lacks %q:\n%s", w, off)
		}
	}
}

// TestConfigErrors: bad configurations are refused before anything starts.
func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{AppServer: "uwsgi"}, {Redis: "cluster"}, {Keepalive: -1}} {
		if _, err := Start(c); err == nil {
			t.Errorf("Start(%+v) started", c)
		}
	}
}

func TestParseSiege(t *testing.T) {
	out := `
{	"transactions":			        2730,
	"availability":			      100.00,
	"elapsed_time":			        2.98,
	"data_transferred":		        0.02,
	"response_time":		        0.03,
	"transaction_rate":		      916.11,
	"throughput":			        0.01,
	"concurrency":			       24.79,
	"successful_transactions":	        2730,
	"failed_transactions":		           0,
	"longest_transaction":		        0.12,
	"shortest_transaction":		        0.00
}
`
	m, err := parseSiege("** SIEGE 4.0.7\n" + out)
	if err != nil {
		t.Fatal(err)
	}
	if m["transactions"] != 2730 || m["transaction_rate"] != 916.11 || m["elapsed_time"] != 2.98 {
		t.Errorf("parsed %v", m)
	}
	if _, err := parseSiege("siege aborted"); err == nil {
		t.Error("no summary, no error")
	}
}

// TestParseDiag reads a struct inet_diag_msg as the kernel writes it.
func TestParseDiag(t *testing.T) {
	b := make([]byte, 72)
	b[0], b[1] = syscall.AF_INET, stTimeWait
	binary.BigEndian.PutUint16(b[4:], 40000)
	binary.BigEndian.PutUint16(b[6:], 5000)
	copy(b[8:], []byte{127, 0, 0, 1})
	copy(b[24:], []byte{127, 0, 0, 2})
	s, ok := parseDiagMsg(b)
	if !ok || s.state != stTimeWait || s.lport != 40000 || s.rport != 5000 || s.raddr != [4]byte{127, 0, 0, 2} {
		t.Errorf("parsed %+v", s)
	}
	if _, ok := parseDiagMsg(b[:40]); ok {
		t.Error("a short message parsed")
	}
}

// TestAppCompiles: the app is valid Python for Debian's interpreter.
func TestAppCompiles(t *testing.T) {
	py := Config{}.Defaults().Python
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s is not installed", py)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "app.py")
	if err := os.WriteFile(f, appPy, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-m", "py_compile", f).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// TestRunIsolated runs the real stack for a second, without reuse, and
// checks the counts against each other: every request opens a Redis
// connection that the app closes (TIME_WAIT on the app's side), and one
// connection into the app, closed by one side or both. Nothing it started
// is left: its temporary directory is gone.
func TestRunIsolated(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real stack")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a private network namespace")
	}
	if miss := Missing(Config{}, false); len(miss) > 0 {
		t.Skipf("install %s", strings.Join(miss, ", "))
	}
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "connlab-stack-*"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := RunIsolated(ctx, Spec{
		Name:     "test",
		Config:   Config{AppServer: Gunicorn, Redis: RedisNew},
		Load:     Load{Kind: LoadGo, Concurrency: 4, KeepAlive: true},
		Warmup:   300 * time.Millisecond,
		Duration: time.Second, Calibrate: 600 * time.Millisecond, Slice: 200 * time.Millisecond,
		TWReuse: 0, PortRange: "10000 65535",
	})
	if err != nil {
		t.Fatal(err)
	}
	// The calibration window, interleaved with the measured one, counts
	// the same way; the CPU's speed and the measurement's own CPU time are
	// read for both.
	cal := res.Calibration
	if cal == nil || cal.Requests < 20 || cal.DurationS != 0.6 || res.DurationS != 1 {
		t.Fatalf("calibration window %+v", cal)
	}
	for _, w := range []*Result{res, cal} {
		if w.ProbeUS <= 0 || w.HarnessCPUMS <= 0 || w.BackgroundCPU < 0 || w.MachineCPUMS <= 0 {
			t.Errorf("probe %.1f µs, harness %.1f ms, background %.2f, machine %.0f ms", w.ProbeUS, w.HarnessCPUMS, w.BackgroundCPU, w.MachineCPUMS)
		}
		if rd := w.Hops[2]; rd.Connects < int64(w.Requests)-16 || rd.Connects > int64(w.Requests)+16 {
			t.Errorf("window of %.1f s: %d requests, %d Redis connections", w.DurationS, w.Requests, rd.Connects)
		}
	}
	n := int64(res.Requests)
	if n < 50 || res.Errors != 0 {
		t.Fatalf("%d requests, %d errors", n, res.Errors)
	}
	hop := map[string]HopResult{}
	for _, h := range res.Hops {
		hop[h.Name] = h
	}
	near := func(a, b int64) bool { return a >= b-16 && a <= b+16 } // the slices' edges
	if rd := hop["redis"]; !near(rd.Connects, n) || !near(int64(rd.TimeWaitClient), n) || rd.TimeWaitServer != 0 {
		t.Errorf("redis hop %+v for %d requests", rd, n)
	}
	app := hop["app"]
	closed := int64(app.TimeWaitClient + app.TimeWaitServer - app.TimeWaitBoth)
	if !near(app.Connects, n) || !near(closed, n) {
		t.Errorf("app hop %+v for %d requests", app, n)
	}
	if ng := hop["nginx"]; ng.Connects != 0 || ng.OpenEnd != 4 {
		t.Errorf("nginx hop %+v: the users keep their connections", ng)
	}
	if res.CPUPerRequestMS["app"] <= 0 || res.Utilisation["app"] <= 0 {
		t.Errorf("CPU %v", res.CPUPerRequestMS)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "connlab-stack-*"))
	if len(after) > len(before) {
		t.Errorf("left behind: %v", after)
	}
}

// TestRunIsolatedCancel: a run cancelled half way stops at once and leaves
// no process: its namespace dies with it.
func TestRunIsolatedCancel(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 || len(Missing(Config{}, false)) > 0 {
		t.Skip("needs root and the stack's packages")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := RunIsolated(ctx, Spec{Name: "cancel", Config: Config{Dir: dir}, Load: Load{Kind: LoadGo, Concurrency: 2, KeepAlive: true},
		Duration: time.Minute, TWReuse: -1})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("err %v, ctx %v", err, ctx.Err())
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v to stop", d)
	}
	// Every program of the stack runs in the directory (nginx's workers
	// inherit it from their master).
	time.Sleep(100 * time.Millisecond)
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && strings.HasPrefix(cwd, dir) {
			cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
			t.Errorf("left running: %s (%s)", filepath.Dir(p), strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
}

// TestSliceLayout: the calibration slices are spread evenly among the
// measured ones, one then two; without slices the calibration comes first.
func TestSliceLayout(t *testing.T) {
	d, l := sliceLayout(Load{Calibrate: 2500 * time.Millisecond, Duration: 5 * time.Second, Slice: 500 * time.Millisecond})
	want := []int{1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}
	if !slices.Equal(l, want) || len(d) != len(want) || d[0] != 500*time.Millisecond {
		t.Errorf("labels %v, lengths %v", l, d)
	}
	d, l = sliceLayout(Load{Calibrate: time.Second, Duration: 3 * time.Second})
	if !slices.Equal(l, []int{1, 0}) || !slices.Equal(d, []time.Duration{time.Second, 3 * time.Second}) {
		t.Errorf("no slices: %v %v", l, d)
	}
	d, l = sliceLayout(Load{Duration: 3 * time.Second})
	if !slices.Equal(l, []int{0}) || d[0] != 3*time.Second {
		t.Errorf("no calibration: %v %v", l, d)
	}
}
