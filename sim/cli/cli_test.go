package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const phpLab = "../../labs/php-persistent-share.md"

// phpPoolsLab is the PHP lab's second part: workers, idle, option sets.
const phpPoolsLab = "../../labs/php-persistent-pools.md"

func runSim(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}, args)
	return out.String(), errb.String(), code
}

// TestRunJSONContract checks the object sim run --json promises to
// scripts (README's table of commands; sim schema describes its fields).
func TestRunJSONContract(t *testing.T) {
	out, errs, code := runSim(t, "run", "--json", phpLab)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["lab"] == "" {
		t.Error("no lab title")
	}
	blocks := doc["blocks"].([]any)
	if len(blocks) != 3 {
		t.Fatalf("%d blocks", len(blocks))
	}
	b := blocks[0].(map[string]any)
	if b["id"] != "across-requests" {
		t.Errorf("first block %v", b["id"])
	}
	v := b["variants"].([]any)[1].(map[string]any)
	if v["name"] != "persistent" {
		t.Errorf("variant %v", v["name"])
	}
	s := v["summary"].(map[string]any)
	for _, k := range []string{"requests", "connects", "errors", "time_wait_peak", "throughput_rps"} {
		if _, ok := s[k].(float64); !ok {
			t.Errorf("summary.%s missing", k)
		}
	}
	for _, p := range []string{"namelookup_ms", "connect_ms", "appconnect_ms", "starttransfer_ms", "total_ms"} {
		st, ok := s[p].(map[string]any)
		if !ok {
			t.Errorf("summary.%s missing", p)
			continue
		}
		for _, k := range []string{"p50", "p90", "p99", "mean"} {
			if _, ok := st[k].(float64); !ok {
				t.Errorf("summary.%s.%s missing", p, k)
			}
		}
	}
	if got := s["total_ms"].(map[string]any)["p50"].(float64); got != 14 {
		t.Errorf("persistent p50 %v, want 14", got)
	}
	// Same seed, same bytes.
	again, _, _ := runSim(t, "run", "--json", phpLab)
	if again != out {
		t.Error("two runs with the same seed differ")
	}
}

func TestRunTable(t *testing.T) {
	out, errs, code := runSim(t, "run", "--block", "across-requests", phpLab)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"■ across-requests", "share", "persistent", "curl_share_init_persistent()", "92.85", "ok   share.total_ms.p50 ≈ 93 ±10%"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "■ idle") {
		t.Error("--block ran other blocks")
	}
}

func TestRunSet(t *testing.T) {
	out, _, code := runSim(t, "run", "--block", "idle", "--set", "pause=60s", "--json", phpPoolsLab)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var doc LabOutput
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Blocks[0].Variants[0].Summary.NumConnects; len(got) != 4 || got[2] != 0 {
		t.Errorf("pause=60s: num_connects %v, want no reconnect", got)
	}
	if len(doc.Blocks[0].Checks) != 0 {
		t.Error("expectations checked against a changed scenario")
	}
	out, _, _ = runSim(t, "run", "--block", "idle", "--set", "pause=60s", phpPoolsLab)
	if !strings.Contains(out, "expectations not checked") {
		t.Error("table does not say the expectations were skipped")
	}
}

func TestRunEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ev.ndjson")
	if _, errs, code := runSim(t, "run", "--block", "workers", "--events", path, phpPoolsLab); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kinds := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("bad line %s: %v", sc.Text(), err)
		}
		if e["block"] != "workers" || e["variant"] == "" {
			t.Fatalf("line without block/variant: %s", sc.Text())
		}
		kinds[e["kind"].(string)]++
	}
	// 3 variants × 12 requests; share and recycled close connections.
	if kinds["call"] != 36 || kinds["request"] != 36 || kinds["open"] != 24 || kinds["time_wait"] == 0 {
		t.Errorf("event kinds %v", kinds)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.md")
	os.WriteFile(bad, []byte("```sim {id=\"x\"}\nrtt = \"-1ms\"\n```\n"), 0o644)
	failing := filepath.Join(dir, "failing.md")
	os.WriteFile(failing, []byte("```sim {id=\"x\"}\nrequests = 2\nexpect = [\"connects == 7\"]\n```\n"), 0o644)
	typo := filepath.Join(dir, "typo.md") // once, sim run died out of memory
	os.WriteFile(typo, []byte("```sim {id=\"x\"}\nrequests = 2\nexpect = [\"base.num_connects == [1, é]\"]\n```\n"), 0o644)
	huge := filepath.Join(dir, "huge.md")
	os.WriteFile(huge, []byte(strings.Repeat("- ", 100)+"a\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", bad}, 2, "bad.md:2: block \"x\": rtt: -1ms is out of range"},
		{[]string{"run", failing}, 1, "1 expectation(s) not met"},
		{[]string{"run", typo}, 2, `typo.md:3: block "x": expect "base.num_connects == [1, é]": unexpected "é]"`},
		{[]string{"exercise", typo}, 2, "typo.md:3:"},
		{[]string{"run", huge}, 2, "huge.md:1: nested about 150 deep"},
		{[]string{"run", "--block", "nope", phpLab}, 2, `no block with id "nope"`},
		{[]string{"run", "--set", "rtt=fast", phpLab}, 2, "--set rtt: want a duration"},
		{[]string{"run", filepath.Join(dir, "missing.md")}, 2, "no such file"},
		{[]string{"run"}, 2, "want exactly one FILE"},
		{[]string{"run", "--bogus", phpLab}, 2, "flag provided but not defined"},
		{[]string{"frobnicate"}, 2, "unknown command"},
	} {
		out, errs, code := runSim(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("sim %v: exit %d, output %q; want exit %d with %q", c.args, code, out+errs, c.code, c.want)
		}
	}
	// A failing check still prints the results it checked.
	out, _, _ := runSim(t, "run", failing)
	if !strings.Contains(out, "FAIL connects == 7") {
		t.Errorf("failing check not shown: %s", out)
	}
}

func TestHelp(t *testing.T) {
	out, _, code := runSim(t, "--help")
	if code != 0 || !strings.Contains(out, "run") || !strings.Contains(out, "params") {
		t.Errorf("help: %d %s", code, out)
	}
	for _, c := range commands() {
		out, _, code := runSim(t, c.name, "--help")
		if code != 0 || !strings.Contains(out, "usage: sim "+c.name) || !strings.Contains(out, "example:") {
			t.Errorf("sim %s --help: exit %d\n%s", c.name, code, out)
		}
	}
}

func TestParams(t *testing.T) {
	out, _, code := runSim(t, "params", "--json")
	var ps []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &ps) != nil || len(ps) < 40 {
		t.Fatalf("params --json: %d, %d params", code, len(ps))
	}
	out, _, _ = runSim(t, "params")
	if !strings.Contains(out, "keepalive_timeout") || !strings.Contains(out, "75s") {
		t.Error("params table lacks keepalive_timeout 75s")
	}
}

func TestScenarioFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "one.toml")
	os.WriteFile(path, []byte("title = \"one\"\nrequests = 3\nreuse = \"process\"\nexpect = [\"connects == 1\"]\n"), 0o644)
	out, errs, code := runSim(t, "run", path)
	if code != 0 || !strings.Contains(out, "■ one") || !strings.Contains(out, "ok   connects == 1") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
}
