package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/connlab/connlab/internal/testutil"
	"github.com/connlab/connlab/sim"
)

// startServe runs `sim serve args...` until the returned stop is called,
// which returns the exit status and the output.
func startServe(t *testing.T, args ...string) (base string, stop func() (int, string, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testutil.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}, append([]string{"serve"}, args...))
	}()
	addrRE := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := addrRE.FindStringSubmatch(out.String()); m != nil {
			base = "http://" + m[1]
			break
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("sim serve exited %d: %s%s", code, out.String(), errb.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("sim serve printed no address: %s%s", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := false
	stop = func() (int, string, string) {
		stopped = true
		cancel()
		select {
		case code := <-done:
			return code, out.String(), errb.String()
		case <-time.After(15 * time.Second):
			t.Fatal("sim serve did not stop on Ctrl-C")
			return 0, "", ""
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	return base, stop
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// sim serve serves the built site, /api/params as `sim params --json`
// prints it, and /ws runs whose numbers are the ones `sim run --json`
// prints; Ctrl-C stops it, leaving no goroutine behind.
func TestServe(t *testing.T) {
	public := t.TempDir()
	os.WriteFile(filepath.Join(public, "index.html"), []byte("<h1>connlab</h1>"), 0o644)
	os.WriteFile(filepath.Join(public, "404.html"), []byte("<h1>not here</h1>"), 0o644)
	before := runtime.NumGoroutine()
	base, stop := startServe(t, "--addr", "127.0.0.1:0", "--public", public, "--labs", "../../labs")

	if code, body, _ := get(t, base+"/"); code != 200 || body != "<h1>connlab</h1>" {
		t.Errorf("/: %d %q", code, body)
	}
	if code, body, _ := get(t, base+"/nowhere"); code != 404 || body != "<h1>not here</h1>" {
		t.Errorf("/nowhere: %d %q", code, body)
	}
	wantParams, _, _ := runSim(t, "params", "--json")
	if code, body, h := get(t, base+"/api/params"); code != 200 || body != wantParams || h.Get("Content-Type") != "application/json" {
		t.Errorf("/api/params: %d %s, differs from sim params --json", code, h.Get("Content-Type"))
	}
	// The pages ask which host served them; the built site says no server.
	if code, body, _ := get(t, base+"/api/server.json"); code != 200 || strings.TrimSpace(body) != `{"class":false,"real":true,"server":true}` {
		t.Errorf("/api/server.json: %d %s", code, body)
	}

	// The run's summaries are sim run --json's.
	out, _, code := runSim(t, "run", "--json", "--block", "workers", phpPoolsLab)
	if code != 0 {
		t.Fatalf("sim run exit %d", code)
	}
	var want LabOutput
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatal(err)
	}
	ws := "ws" + strings.TrimPrefix(base, "http") + "/ws"
	c, _, err := websocket.DefaultDialer.Dial(ws, http.Header{"Origin": {base}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"run","id":"1","lab":"php-persistent-pools","block":"workers","mode":"model","params":{}}`))
	var done struct {
		Type     string `json:"type"`
		Variants []struct {
			Name    string          `json:"name"`
			Summary json.RawMessage `json:"summary"`
		} `json:"variants"`
		Checks json.RawMessage `json:"checks"`
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for done.Type != "done" {
		_, data, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &done); err != nil {
			t.Fatal(err)
		}
		if done.Type == "error" {
			t.Fatalf("error: %s", data)
		}
	}
	wv := want.Blocks[0].Variants
	if len(done.Variants) != len(wv) {
		t.Fatalf("%d variants, want %d", len(done.Variants), len(wv))
	}
	for i, v := range wv {
		wantSum, _ := json.Marshal(v.Summary)
		if done.Variants[i].Name != v.Name || !bytes.Equal(done.Variants[i].Summary, wantSum) {
			t.Errorf("%s: summary\n got %s\nwant %s", v.Name, done.Variants[i].Summary, wantSum)
		}
	}
	wantChecks, _ := json.Marshal(want.Blocks[0].Checks)
	if !bytes.Equal(done.Checks, wantChecks) {
		t.Errorf("checks\n got %s\nwant %s", done.Checks, wantChecks)
	}

	code, stdout, stderr := stop()
	if code != 0 || !strings.Contains(stdout, "sim serve: stopped") {
		t.Errorf("Ctrl-C: exit %d, %q %q", code, stdout, stderr)
	}
	c.Close()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Without a built site, sim serve says how to build it and still runs
// labs.
func TestServeNoSite(t *testing.T) {
	base, stop := startServe(t, "--addr", "127.0.0.1:0", "--public", filepath.Join(t.TempDir(), "public"), "--labs", "../../labs")
	code, body, _ := get(t, base+"/")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "make site") {
		t.Errorf("/: %d %q", code, body)
	}
	if _, _, stderr := stop(); !strings.Contains(stderr, "make site") {
		t.Errorf("no warning on stderr: %q", stderr)
	}
}

// sim serve binds to loopback only unless told otherwise.
func TestServeAddr(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.0.2.1:80", "example.com:80", "nonsense"} {
		_, stderr, code := runSim(t, "serve", "--addr", addr)
		if code != 2 || !strings.Contains(stderr, "--addr") {
			t.Errorf("--addr %s: exit %d, %q", addr, code, stderr)
		}
	}
	for _, tc := range []struct {
		addr     string
		remote   bool
		loopback bool
		ok       bool
	}{
		{"127.0.0.1:8080", false, true, true},
		{"127.1.2.3:0", false, true, true},
		{"[::1]:8080", false, true, true},
		{"localhost:8080", false, true, true},
		{"192.0.2.1:80", true, false, true},
		{"192.0.2.1:80", false, false, false},
	} {
		loopback, err := checkAddr(tc.addr, tc.remote)
		if loopback != tc.loopback || (err == nil) != tc.ok {
			t.Errorf("checkAddr(%s, %v) = %v, %v", tc.addr, tc.remote, loopback, err)
		}
	}
}

// TestServeRealRun presses "Run real" through sim serve: the block runs on
// real loopback servers (the harness), streams measured events, and the
// done message sets each variant beside the model of the scenario that ran.
func TestServeRealRun(t *testing.T) {
	base, stop := startServe(t, "--addr", "127.0.0.1:0", "--public", t.TempDir(), "--labs", "../../labs")
	defer stop()
	ws := "ws" + strings.TrimPrefix(base, "http") + "/ws"
	c, _, err := websocket.DefaultDialer.Dial(ws, http.Header{"Origin": {base}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"run","id":"r","lab":"php-persistent-share","block":"across-requests","mode":"real","params":{}}`))
	type summary struct {
		NumConnects []int `json:"num_connects"`
		Connects    int   `json:"connects"`
		Reused      int   `json:"reused"`
	}
	var done struct {
		Type     string `json:"type"`
		Message  string `json:"message"`
		Variants []struct {
			Name    string   `json:"name"`
			Summary *summary `json:"summary"`
			Model   *summary `json:"model"`
			Compare []struct {
				Phase string `json:"phase"`
			} `json:"compare"`
			Overhead float64 `json:"harness_overhead_ms"`
		} `json:"variants"`
	}
	calls := 0
	c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for done.Type != "done" {
		_, data, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Type   string `json:"type"`
			Events []struct {
				Kind string `json:"kind"`
			} `json:"events"`
		}
		json.Unmarshal(data, &m)
		for _, e := range m.Events {
			if e.Kind == "call" {
				calls++
			}
		}
		if m.Type == "done" || m.Type == "error" {
			json.Unmarshal(data, &done)
			if m.Type == "error" {
				t.Fatalf("real run: %s", data)
			}
		}
	}
	if calls != 20 {
		t.Errorf("%d measured calls streamed, want 20 (2 variants × 10 requests)", calls)
	}
	if len(done.Variants) != 2 {
		t.Fatalf("%d variants", len(done.Variants))
	}
	for _, v := range done.Variants {
		if v.Summary == nil || v.Model == nil {
			t.Fatalf("%s: summary %v, model %v", v.Name, v.Summary, v.Model)
		}
		if fmt.Sprint(v.Summary.NumConnects) != fmt.Sprint(v.Model.NumConnects) {
			t.Errorf("%s: measured num_connects %v, model %v", v.Name, v.Summary.NumConnects, v.Model.NumConnects)
		}
		// curl's phases, and totals by kind where calls both open and reuse
		want := len(sim.CurlPhases())
		if v.Model.Connects > 0 && v.Model.Reused > 0 {
			want += 2
		}
		if len(v.Compare) != want {
			t.Errorf("%s: %d phase rows, want %d", v.Name, len(v.Compare), want)
		}
		if v.Overhead <= 0 || v.Overhead > 50 {
			t.Errorf("%s: harness overhead %v ms: not measured", v.Name, v.Overhead)
		}
	}
	if got := done.Variants[1].Summary.Connects; got != 1 {
		t.Errorf("persistent: %d connects measured, want 1", got)
	}
}

// sim serve mounts the exercises: /exercise/api answers seeded exercises;
// with --class the answers are hidden, the class's pages exist, and the
// join code and the teacher's page are printed.
func TestServeExercises(t *testing.T) {
	base, stop := startServe(t, "--addr", "127.0.0.1:0", "--public", t.TempDir(), "--labs", "../../labs")
	code, body, _ := get(t, base+"/exercise/api?lab=php-persistent-share&seed=3")
	var resp struct {
		Seed      uint64           `json:"seed"`
		Hidden    bool             `json:"hidden"`
		Exercises []map[string]any `json:"exercises"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &resp) != nil || resp.Seed != 3 || resp.Hidden || resp.Exercises[0]["answer"] == nil {
		t.Fatalf("%d %s", code, body)
	}
	if code, _, _ := get(t, base+"/class/info"); code != 404 {
		t.Errorf("class mode off, /class/info answers %d", code)
	}
	for path, want := range map[string]string{
		"/exercise/api?lab=nope":                            `no lab \"nope\"`,
		"/exercise/api?lab=php-persistent-share&seed=-1":    `"field":"seed"`,
		"/exercise/api?lab=php-persistent-share&lang=de":    `"field":"lang"`,
		"/exercise/api?lab=php-persistent-share&seed=1e400": `"field":"seed"`,
	} {
		if code, body, _ := get(t, base+path); code < 400 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	stop()

	base, stop = startServe(t, "--addr", "127.0.0.1:0", "--public", t.TempDir(), "--labs", "../../labs",
		"--class", "--class-token", "secret", "--class-code", "ab-cd-23")
	code, body, _ = get(t, base+"/exercise/api?lab=php-persistent-share")
	resp.Exercises = nil
	if code != 200 || json.Unmarshal([]byte(body), &resp) != nil || !resp.Hidden || resp.Exercises[0]["answer"] != nil || resp.Exercises[0]["explain"] != nil || resp.Exercises[0]["scenario"] != nil {
		t.Errorf("class mode leaks answers: %s", body)
	}
	if code, body, _ := get(t, base+"/class/info"); code != 200 || !strings.Contains(body, `"class":true`) {
		t.Errorf("/class/info: %d %s", code, body)
	}
	if code, _, _ := get(t, base+"/class/teacher?token=wrong"); code != 403 {
		t.Errorf("teacher page with a wrong token: %d", code)
	}
	if code, body, _ := get(t, base+"/class/teacher?token=secret"); code != 200 || !strings.Contains(body, `"secret"`) {
		t.Errorf("teacher page: %d", code)
	}
	if code, body, _ := get(t, base+"/class/?code=abcd23"); code != 200 || !strings.Contains(body, `data-state="ok"`) {
		t.Errorf("the students' link: %d %s", code, body)
	}
	_, printed, _ := stop()
	if !strings.Contains(printed, "/class/teacher?token=secret") || !strings.Contains(printed, "/class/?code=ABCD23 (join code ABCD23)") ||
		!regexp.MustCompile(`seed [1-9]\d* for everyone`).MatchString(printed) {
		t.Errorf("printed %q", printed)
	}
	_, stop = startServe(t, "--addr", "127.0.0.1:0", "--public", t.TempDir(), "--labs", "../../labs", "--class", "--class-seed", "0")
	if _, printed, _ := stop(); !strings.Contains(printed, "seed 0 for everyone") || !regexp.MustCompile(`join code [A-Z0-9]{6}\)`).MatchString(printed) {
		t.Errorf("--class-seed 0: %q", printed)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--class", "--class-seed", "-3"}, "--class-seed"},
		{[]string{"--class", "--class-code", "a<b"}, "--class-code"},
		{[]string{"--class", "--class-per-address", "0"}, "--class-per-address"},
		{[]string{"--class", "--class-max", "0"}, "--class-max"},
	} {
		_, errs, code := runSim(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--labs", "../../labs"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("sim serve %v: exit %d, %q", tc.args, code, errs)
		}
	}
}
