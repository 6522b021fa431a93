package realclients

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nodeUpstream is upstream with its CA in a file for NODE_EXTRA_CA_CERTS;
// it skips the test without node.
func nodeUpstream(t *testing.T, rtt, serverTime time.Duration) (url, caFile string, up interface{ Stats() (int, int) }) {
	t.Helper()
	if _, err := FindNode(); err != nil {
		t.Skip(err)
	}
	url, ca, u := upstream(t, rtt, serverTime)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	return url, caFile, u
}

// TestNodeClients: Node 20's global https agent keeps its connection (keep-
// alive since Node 19): 20 calls one after the other open 1. An agent with
// keepAlive false opens one per call. fetch (undici 6) keeps connections
// too, but one after the other its calls alternate between 2: the next
// fetch starts before undici counts the last one's connection free (its
// response body was read), so its pool opens a second; at concurrency 10
// it opened 20 here (bounds: which lane finds which connection busy is
// the event loop's order).
func TestNodeClients(t *testing.T) {
	const calls = 20
	for _, c := range []struct {
		mode        NodeMode
		conc        int
		exact       int // connections opened; 0: bounds only
		atLeast, at int
	}{
		{mode: NodeAgent, conc: 1, exact: 1},
		{mode: NodeNoKeepAlive, conc: 1, exact: calls},
		{mode: NodeFetch, conc: 1, exact: 2},
		{mode: NodeAgent, conc: 10, exact: 10},
		{mode: NodeFetch, conc: 10, atLeast: 10, at: 20},
	} {
		url, caFile, up := nodeUpstream(t, time.Millisecond, time.Millisecond)
		r, err := RunNode(context.Background(), NodeConfig{URL: url, CAFile: caFile, Mode: c.mode, Concurrency: c.conc, Calls: calls})
		if err != nil {
			t.Fatal(err)
		}
		checkEvents(t, r.Events)
		accepted, requests := up.Stats()
		reused := 0
		for _, e := range r.Events {
			if e.Reused {
				reused++
			}
		}
		t.Logf("node %s (undici %s), %s, %d × %d calls: %d connections opened (server: %d, %d requests), %d calls reused one",
			r.Node, r.Undici, c.mode, c.conc, calls, r.Connects, accepted, requests, reused)
		if requests != c.conc*calls || len(r.Events) != c.conc*calls {
			t.Errorf("%s: %d events, %d requests; want %d", c.mode, len(r.Events), requests, c.conc*calls)
		}
		if accepted != r.Connects || r.Sockets != r.Connects || reused != c.conc*calls-r.Connects {
			t.Errorf("%s: %d connects, %d sockets, %d reused calls, server accepted %d", c.mode, r.Connects, r.Sockets, reused, accepted)
		}
		if c.exact != 0 && r.Connects != c.exact {
			t.Errorf("%s at concurrency %d: %d connections, want %d", c.mode, c.conc, r.Connects, c.exact)
		}
		if c.exact == 0 && (r.Connects < c.atLeast || r.Connects > c.at) {
			t.Errorf("%s at concurrency %d: %d connections, want %d to %d", c.mode, c.conc, r.Connects, c.atLeast, c.at)
		}
		// The server's X-Connlab-Conn says the same per call: request 1
		// on its connection exactly when the client saw a new one.
		for i, e := range r.Events {
			if first := strings.HasSuffix(r.ServerConns[i], "/1"); first != e.NewConn {
				t.Errorf("%s call %d/%d: new %v, the server says %q", c.mode, e.Worker, e.Call, e.NewConn, r.ServerConns[i])
			}
		}
	}
}

// TestNodeStops: a run cancelled midway ends with the node process gone
// (its process group killed).
func TestNodeStops(t *testing.T) {
	url, caFile, _ := nodeUpstream(t, 0, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := RunNode(ctx, NodeConfig{URL: url, CAFile: caFile, Mode: NodeAgent, Concurrency: 1, Calls: 1000})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want the deadline", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("RunNode returned %v after it was cancelled", d)
	}
	if r == nil || r.PID == 0 {
		t.Fatal("no PID")
	}
	if err := syscall.Kill(r.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("node %d: kill 0: %v, want ESRCH (gone)", r.PID, err)
	}
	if err := syscall.Kill(-r.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("node's group %d: kill 0: %v, want ESRCH (gone)", r.PID, err)
	}
}

// TestNodeLines: output that breaks the protocol is refused with the line.
func TestNodeLines(t *testing.T) {
	const v = `{"node":"v20.0.0"}` + "\n"
	const call = `{"call":1,"lane":1,"round":1,"start_ms":1,"first_byte_ms":2,"end_ms":3,"reused":false,"sock":1,"port":5}` + "\n"
	const done = `{"done":true,"sockets":1,"connects":1}` + "\n"
	for _, c := range []struct{ out, want string }{
		{v + call + done, ""},
		{"", "no output"},
		{call + done, "line 1"},
		{v + "{oops\n" + done, "line 2"},
		{v + `{"call":1}` + "\n" + done, "line 2"},
		{v + call + call + done, "line 3"},
		{v + call + done + call, "line 4"},
		{v + call, "without the done line"},
		{v + done, "0 call lines"},
	} {
		r := &NodeRun{}
		err := r.read(strings.NewReader(c.out), 1)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.out, err, c.want)
		}
	}
}
