package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
)

// smallLab is a block that runs for real in well under a second.
const smallLab = "```sim {id=\"t\"}\n" + `title = "three calls"
requests = 3
rtt = "2ms"
dns = "1ms"
tls = "1.3"
server_time = "1ms"
[[variant]]
name = "request"
reuse = "request"
[[variant]]
name = "process"
reuse = "process"
` + "```\n"

func writeSmallLab(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "small.md")
	if err := os.WriteFile(p, []byte(smallLab), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestValidateJSON checks the shape of sim validate --json. The tolerance is
// wide: this test is about the shape, and its real runs execute under the
// race detector (harness's own tests check the tolerance).
func TestValidateJSON(t *testing.T) {
	out, errs, code := runSim(t, "validate", "--json", "--tolerance", "1000%,1s", writeSmallLab(t))
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	var doc struct {
		Lab       string `json:"lab"`
		Tolerance string `json:"tolerance"`
		OK        bool   `json:"ok"`
		Blocks    []struct {
			ID       string `json:"id"`
			Setup    string `json:"setup"`
			Variants []struct {
				Name   string `json:"name"`
				OK     bool   `json:"ok"`
				Phases []struct {
					Phase      string   `json:"phase"`
					ModelMS    *float64 `json:"model_ms"`
					MeasuredMS *float64 `json:"measured_ms"`
					ErrorPct   *float64 `json:"error_pct"`
					OK         bool     `json:"ok"`
				} `json:"phases"`
				Counts     map[string]map[string]any `json:"counts"`
				Components []string                  `json:"components"`
			} `json:"variants"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !doc.OK || doc.Tolerance == "" || len(doc.Blocks) != 1 || doc.Blocks[0].ID != "t" || doc.Blocks[0].Setup != "http" {
		t.Fatalf("document: %+v", doc)
	}
	vs := doc.Blocks[0].Variants
	if len(vs) != 2 || vs[0].Name != "request" || vs[1].Name != "process" {
		t.Fatalf("variants: %+v", vs)
	}
	for _, v := range vs {
		// process reuses its connection: its totals are also compared by kind.
		n := len(sim.CurlPhases())
		rows := map[string]int{"request": n, "process": n + 2}[v.Name]
		if len(v.Phases) != rows || v.Phases[0].Phase != "namelookup" || v.Phases[n-1].Phase != "total" ||
			rows == n+2 && (v.Phases[n].Phase != "total, new conn" || v.Phases[n+1].Phase != "total, reused") {
			t.Errorf("%s: phases %+v", v.Name, v.Phases)
		}
		for _, p := range v.Phases {
			if p.ModelMS == nil || p.MeasuredMS == nil || p.ErrorPct == nil || !p.OK {
				t.Errorf("%s/%s: %+v", v.Name, p.Phase, p)
			}
		}
		c := v.Counts["connects"]
		if c == nil || c["model"] != c["measured"] || c["ok"] != true {
			t.Errorf("%s: connects %v", v.Name, c)
		}
		if len(v.Components) == 0 {
			t.Errorf("%s: no components named", v.Name)
		}
	}
	if got := vs[1].Counts["connects"]["measured"]; got != 1.0 {
		t.Errorf("persistent handle: %v connects, want 1", got)
	}
}

func TestValidateTable(t *testing.T) {
	out, errs, code := runSim(t, "validate", "--tolerance", "1000%,1s", "--variant", "process", writeSmallLab(t))
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	for _, want := range []string{"■ t: three calls", "[setup: http]", "process", "scaled: long timers ÷100", "real: Go crypto/tls TLS 1.3 upstream",
		"model ms", "measured p50", "starttransfer", "counts (model = measured unless shown): requests 3", "verdict: all 1 variants"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "  request\n") {
		t.Error("--variant ran another variant")
	}
}

// TestValidateOutside: a model told that a TLS handshake costs 50 ms of
// CPU (Go's crypto/tls takes a few) disagrees with the real run, and the
// exit status says so. (With no tolerance alone the real run may still
// agree: the model is often within the harness's own overhead.) The RTT is
// set within the validated range: below it phases are only shown. Run
// again once, the output says what the first attempt missed.
func TestValidateOutside(t *testing.T) {
	out, errs, code := runSim(t, "validate", "--tolerance", "0%,0s", "--retries", "1", "--variant", "request", "--set", "handshake_cpu=50ms", "--set", "rtt=5ms", writeSmallLab(t))
	if code != 1 || !strings.Contains(out, "OUTSIDE TOLERANCE (attempt 2)") || !strings.Contains(out, "verdict: 1 of 1 variants outside tolerance: t/request") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
	// On Linux the line says what the lab process used at the run's start.
	harness := `( \(harness lag [0-9.]+ ms, [0-9]+ late reads\))?`
	if runtime.GOOS == "linux" {
		harness = ` \(in the run's first 50ms the lab process used [0-9.]+ ms of CPU and took [0-9]+ page faults( \([0-9]+ from disk\))?, its threads waited [0-9.]+ ms for a CPU, the host took [0-9]+ ms \(steal\)(; harness lag [0-9.]+ ms, [0-9]+ late reads)?(; write lag [0-9.]+ ms, [0-9]+ late writes)?\)`
	}
	if !regexp.MustCompile(`\n    attempt 1` + harness + `: .*appconnect [0-9.]+ ms, model [0-9.]+ ± [0-9.]+;`).MatchString(out) {
		t.Errorf("no line for the first attempt:\n%s", out)
	}
}

// TestValidateBelowRange: below 5 ms of RTT the same disagreement is shown
// and not held (the host's own costs are as large as the round trip), and
// the output says why; counts are still compared.
func TestValidateBelowRange(t *testing.T) {
	out, errs, code := runSim(t, "validate", "--tolerance", "0%,0s", "--retries", "0", "--variant", "request", "--set", "handshake_cpu=50ms", "--set", "rtt=1ms", writeSmallLab(t))
	if code != 0 || !strings.Contains(out, "RTT below the validated range") || !strings.Contains(out, "counts (model = measured unless shown): requests 3") {
		t.Errorf("exit %d:\n%s%s", code, out, errs)
	}
}

func TestValidateErrors(t *testing.T) {
	lab := writeSmallLab(t)
	bad := filepath.Join(t.TempDir(), "bad.md")
	os.WriteFile(bad, []byte("```sim {id=\"x\"}\nrtt = \"-1ms\"\n```\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--real", "apache", lab}, "--real: want nginx and/or redis, or none"},
		{[]string{"validate", "--tolerance", "five", lab}, "--tolerance"},
		{[]string{"validate", "--block", "nope", lab}, `no block with id "nope"`},
		{[]string{"validate", "--variant", "nope", lab}, `no variant "nope"`},
		{[]string{"validate", "--set", "rtt=fast", lab}, "--set rtt"},
		{[]string{"validate", "--max-rate", "0", lab}, "--max-rate"},
		{[]string{"validate", "--compress", "0.5", lab}, "--compress"},
		{[]string{"validate", bad}, "bad.md:2: block \"x\": rtt: -1ms is out of range"},
		{[]string{"validate"}, "want exactly one FILE"},
	} {
		out, errs, code := runSim(t, c.args...)
		if code != 2 || !strings.Contains(out+errs, c.want) {
			t.Errorf("sim %v: exit %d, %q; want exit 2 with %q", c.args, code, out+errs, c.want)
		}
	}
}

func TestValidateHelp(t *testing.T) {
	out, _, code := runSim(t, "validate", "--help")
	for _, want := range []string{"usage: sim validate", "Counts (num_connects", "compressed by --compress", "nginx-keepalive", "Not run for real: 0-RTT"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("help lacks %q (exit %d)", want, code)
		}
	}
}

// TestValidateInterrupted: Ctrl-C during a real run stops it, with the
// interrupted exit status.
func TestValidateInterrupted(t *testing.T) {
	p := filepath.Join(t.TempDir(), "long.md")
	os.WriteFile(p, []byte("```sim {id=\"l\"}\nrequests = 100\nrtt = \"40ms\"\ntls = \"1.2\"\nreuse = \"request\"\n```\n"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(800*time.Millisecond, cancel)
	var out, errb bytes.Buffer
	start := time.Now()
	code := Run(ctx, &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}, []string{"validate", p})
	if code != 130 || !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("exit %d: %s%s", code, out.String(), errb.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to stop", d)
	}
}

// TestParseReal: the real programs are sim validate's default where
// installed; none asks for the stand-ins.
func TestParseReal(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{{"nginx,redis", []string{"nginx", "redis"}}, {"redis", []string{"redis"}}, {"none", nil}, {" none ", nil}, {" nginx, ", []string{"nginx"}}} {
		got, err := parseReal(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("parseReal(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"none,nginx", "", " , "} {
		if _, err := parseReal(bad); err == nil {
			t.Errorf("parseReal(%q): want an error", bad)
		}
	}
}
