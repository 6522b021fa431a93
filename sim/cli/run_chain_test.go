package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const chainLab = "+++\ntitle = \"Stack\"\n+++\n\n```sim {id=\"stack\"}\n" + `load = "closed"
concurrency = 4
requests = 400
tls = "none"
dns = "0s"
rtt = "0.05ms"
expect = ["hop.redis.time_wait_client == requests"]

[[tier]]
name = "nginx"
threads = 0
reuse = "none"

[[tier]]
name = "app"
threads = 4
server_time = "0.3ms"
reuse = "request"
calls_per_request = 2

[[tier]]
name = "redis"
threads = 0
server_time = "0.01ms"
keepalive_timeout = "0s"
` + "```\n"

// TestRunChain: sim run prints a chain's hops and tiers, and its JSON and
// events carry them.
func TestRunChain(t *testing.T) {
	f := filepath.Join(t.TempDir(), "stack.md")
	if err := os.WriteFile(f, []byte(chainLab), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runSim(t, "run", f)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, w := range []string{"load → nginx: connects / reused", "app → redis: TIME_WAIT app / redis (both)", "400 / 0 (0)", "app: utilisation"} {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
	out, errs, code = runSim(t, "run", "--json", f)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Blocks []struct {
			Variants []struct {
				Summary struct {
					Chain []string                  `json:"chain"`
					Hop   map[string]map[string]any `json:"hop"`
					Tier  map[string]map[string]any `json:"tier"`
				} `json:"summary"`
			} `json:"variants"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Blocks[0].Variants[0].Summary
	if strings.Join(s.Chain, ",") != "nginx,app,redis" || s.Hop["app"]["connects"] != 400.0 || s.Tier["redis"]["requests"] != 800.0 {
		t.Errorf("summary %+v", s)
	}
	ev := filepath.Join(t.TempDir(), "ev.ndjson")
	if _, errs, code := runSim(t, "run", "--events", ev, f); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	b, _ := os.ReadFile(ev)
	if n := strings.Count(string(b), `"kind":"call","at_ms":`); n != 400*4 {
		t.Errorf("%d call events, want 1600 (400 requests × 4 calls over 3 hops)", n)
	}
	if !strings.Contains(string(b), `"hop":3`) {
		t.Error("events lack their hop")
	}
}
