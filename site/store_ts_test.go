package site

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/connlab/connlab/sim"
)

// TestStoreTimeWait: the widgets' store (store.ts) pairs each TIME_WAIT
// socket with its end as the model does, including sockets taken over
// before they expire: a client's port that connect() takes back
// (tcp_tw_reuse) and a server's socket that a new SYN from the same port
// takes over. Those end out of order, so the store finds them by port.
func TestStoreTimeWait(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the store is not checked")
	}
	for _, closer := range []string{"client", "server"} {
		t.Run("closer "+closer, func(t *testing.T) { storeTimeWait(t, node, closer) })
	}
}

// storeTimeWait checks the store against a run of connections closed
// first by closer, in a port range small enough that connect() lands on
// ports still in TIME_WAIT.
func storeTimeWait(t *testing.T, node, closer string) {
	s := sim.Default()
	for k, v := range map[string]any{
		"load": "closed", "concurrency": 4, "requests": 6000, "think_time": "5ms", "tls": "none", "dns": "0s",
		"rtt": "1ms", "workers": 4, "reuse": "none", "closer": closer, "server_time": "0.5ms",
		"port_range": "40000-40999", "tw_reuse": 1,
	} {
		if err := s.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	// The model's TIME_WAIT sockets: side (0 client, 1 server), port,
	// start and end in ms (-1: still there at the end), each end matched
	// to its start by side and port.
	var events []byte
	open := map[[2]int]int{} // side, port → index in want
	var want [][4]float64
	taken := [2]int{}
	_, err := sim.Run(context.Background(), s, sim.Options{Seed: 1, Sink: func(e *sim.Event) {
		events = e.AppendJSON(events)
		events = append(events, '\n')
		ms := float64(e.At) / 1e6
		sd := 0
		if e.By == sim.SideServer {
			sd = 1
		}
		key := [2]int{sd, e.LocalPort}
		switch e.Kind {
		case sim.KindTimeWait:
			open[key] = len(want)
			want = append(want, [4]float64{float64(sd), float64(e.LocalPort), ms, -1})
		case sim.KindTimeWaitEnd:
			if e.Reason != "" {
				taken[sd]++
			}
			if i, ok := open[key]; ok {
				want[i][3] = ms
				delete(open, key)
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if side := map[string]int{"client": 0, "server": 1}[closer]; taken[side] == 0 {
		t.Fatalf("no %s TIME_WAIT socket was taken over: the scenario does not test what it should", closer)
	}
	dir := t.TempDir()
	evFile := filepath.Join(dir, "events.ndjson")
	if err := os.WriteFile(evFile, events, 0o644); err != nil {
		t.Fatal(err)
	}
	entry := `
import { readFileSync } from "fs";
import { VariantData } from "./sim/store";
const v = new VariantData("v", "v");
for (const line of readFileSync(process.argv[2], "utf8").split("\n")) if (line) v.add(JSON.parse(line));
// The connections' rows that entered TIME_WAIT, on either side.
const out: number[][] = [];
for (const s of v.socks) if (s.tw >= 0) out.push([s.twBy === "server" ? 1 : 0, s.port, s.tw, s.twEnd]);
console.log(JSON.stringify(out));
`
	stdout := runTypeScript(t, node, entry, evFile)
	var got [][4]float64
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("node printed %.200s: %v", stdout, err)
	}
	cmp := func(a, b [4]float64) int {
		for i := range a {
			if a[i] != b[i] {
				if a[i] < b[i] {
					return -1
				}
				return 1
			}
		}
		return 0
	}
	slices.SortFunc(got, cmp)
	slices.SortFunc(want, cmp)
	if len(got) != len(want) {
		t.Fatalf("the store holds %d TIME_WAIT sockets, the model had %d", len(got), len(want))
	}
	bad := 0
	for i := range want {
		if got[i] != want[i] {
			if bad < 5 {
				t.Errorf("TIME_WAIT socket (side, port, start, end): store %v, model %v", got[i], want[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d TIME_WAIT sockets differ (taken over: %d client, %d server)", bad, len(want), taken[0], taken[1])
	}
}
