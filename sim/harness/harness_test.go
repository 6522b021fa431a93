package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connlab/connlab/internal/testutil"
	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/roles"
	"github.com/connlab/connlab/sim/lab"
)

// simBin is a sim binary built without the race detector, for the lab and
// worker processes of timing tests: under -race, crypto and the harness's
// own goroutines run several times slower, which is not what a user
// measures. CONNLAB_SIM_BIN names a prebuilt one; if building fails the
// test binary itself is re-executed (and the output says so).
var simBin string

func TestMain(m *testing.M) {
	if code, ok := roles.Main(os.Args[1:]); ok {
		os.Exit(code) // a lab or worker process of a run that re-executes this binary
	}
	bin, err := testutil.SimBinary()
	if err != nil {
		fmt.Fprintf(os.Stderr, "harness tests: building a sim binary without -race failed, re-executing the test binary instead: %v\n", err)
	} else {
		simBin = bin
	}
	code := m.Run()
	testutil.RemoveSimBinary()
	os.Exit(code)
}

const labsDir = "../../labs"

func readLab(t testing.TB, name string) *lab.Lab {
	t.Helper()
	l, err := lab.ReadFile(filepath.Join(labsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// writeLab writes a one-block lab and returns the block.
func writeLab(t testing.TB, body string) *lab.Block {
	t.Helper()
	p := filepath.Join(t.TempDir(), "test.md")
	if err := os.WriteFile(p, []byte("```sim {id=\"t\"}\n"+body+"```\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := lab.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return l.Blocks[0]
}

func TestPlan(t *testing.T) {
	ctx := context.Background()
	opt := Options{Seed: 1, MaxDuration: 3 * time.Second}
	pe := readLab(t, "port-exhaustion.md")
	b, _ := pe.Block("exhaust")
	p, err := NewPlan(ctx, b, opt)
	if err != nil {
		t.Fatal(err)
	}
	r600 := p.Variants[0].Scenario
	if r600.Rate != DefaultMaxRate || r600.PortRange.Lo != scaledPortLow || r600.PortRange.Size() >= 28232 || !p.Variants[0].Ports {
		t.Errorf("rate-600 not scaled: rate %g, ports %s", r600.Rate, r600.PortRange)
	}
	// The range runs out after about 2 s at the scaled rate.
	if got := float64(r600.PortRange.Size()) / r600.Rate; got < 1.9 || got > 2.1 {
		t.Errorf("scaled range lasts %.2f s", got)
	}
	if r600.Duration != 0 || r600.Requests == 0 || r600.Requests > DefaultMaxRequests {
		t.Errorf("length: requests %d, duration %v", r600.Requests, r600.Duration)
	}
	if p.Variants[0].KernelTWReuse != 0 {
		t.Error("tw_reuse 0 not kept")
	}
	tw, _ := pe.Block("tw-reuse")
	p, _ = NewPlan(ctx, tw, opt)
	for _, vp := range p.Variants {
		want := vp.Original.TWReuse
		if vp.Name == "loopback-only-remote" {
			want = 0 // tcp_tw_reuse = 2 towards another host
		}
		if vp.KernelTWReuse != want {
			t.Errorf("%s: kernel tcp_tw_reuse %d, want %d", vp.Name, vp.KernelTWReuse, want)
		}
	}
	php := readLab(t, "php-persistent-pools.md")
	idle, _ := php.Block("idle")
	p, _ = NewPlan(ctx, idle, opt)
	// The PHP lab runs on the php setup, whose timers are divided by 10
	// (curl takes whole seconds).
	if s := p.Variants[0].Scenario; s.KeepaliveTimeout != 7500*time.Millisecond || s.Pause != 8*time.Second || s.DNSCacheTimeout != 6*time.Second {
		t.Errorf("idle timers: %+v", s)
	}
	if p.Setup != SetupPHP || !strings.Contains(strings.Join(p.Variants[0].Scaling, " "), "keepalive_timeout 75s→7.5s") {
		t.Errorf("setup %s, scaling %q", p.Setup, p.Variants[0].Scaling)
	}
	sets, _ := php.Block("option-sets")
	p, _ = NewPlan(ctx, sets, opt)
	for _, vp := range p.Variants {
		if (vp.Name == "cookie") != strings.Contains(vp.Rejected, "CURL_LOCK_DATA_COOKIE") {
			t.Errorf("%s: rejected %q", vp.Name, vp.Rejected)
		}
	}
	pool := readLab(t, "connection-pool.md")
	nb, _ := pool.Block("no-pool")
	p, _ = NewPlan(ctx, nb, opt)
	if p.Setup != SetupRedis || p.Variants[0].Scenario.SetupRTTs != 1 {
		t.Errorf("connection-pool: setup %s, setup_rtts %d", p.Setup, p.Variants[0].Scenario.SetupRTTs)
	}
	ngx := readLab(t, "nginx-keepalive.md")
	wb, _ := ngx.Block("with")
	p, _ = NewPlan(ctx, wb, opt)
	if p.Setup != SetupProxy || !p.Variants[0].Timing {
		t.Errorf("nginx with: setup %s, timing %v", p.Setup, p.Variants[0].Timing)
	}
	// The nginx lab's first block sets its setup: nothing in it says proxy.
	wo, _ := ngx.Block("without")
	p, _ = NewPlan(ctx, wo, opt)
	if p.Setup != SetupProxy || p.Variants[0].Setup != SetupProxy {
		t.Errorf("nginx without: setup %s", p.Setup)
	}
	// The setup key is a variant's: auto derives it from the block.
	mixed := writeLab(t, "requests = 2\ntls = \"none\"\n[[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nsetup = \"redis\"\n[[variant]]\nname = \"c\"\nreuse = \"upstream-keepalive\"\n")
	p, err = NewPlan(ctx, mixed, opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{p.Variants[0].Setup, p.Variants[1].Setup, p.Variants[2].Setup}; !slices.Equal(got, []string{SetupProxy, SetupRedis, SetupProxy}) || p.Setup != "proxy, redis" {
		t.Errorf("mixed: setups %v, plan %q", got, p.Setup)
	}
	if _, err := NewPlan(ctx, mixed, Options{Set: []lab.Setting{{Key: "setup", Value: "apache"}}}); err == nil || !strings.Contains(err.Error(), "setup") {
		t.Errorf("an unknown setup: %v", err)
	}
	race, _ := readLab(t, "idle-timeouts.md").Block("race")
	p, _ = NewPlan(ctx, race, opt)
	if s := p.Variants[0].Scenario; math.Abs(s.Rate-0.0133*DefaultCompress) > 1e-9 || s.KeepaliveTimeout != 750*time.Millisecond {
		t.Errorf("race: rate %g, keepalive %v", s.Rate, s.KeepaliveTimeout)
	}
	e := writeLab(t, "tls = \"1.3\"\nearly_data = true\nreuse = \"process\"\nrequests = 3\n")
	p, _ = NewPlan(ctx, e, opt)
	if !strings.Contains(p.Variants[0].Skip, "0-RTT") {
		t.Errorf("early_data: skip %q", p.Variants[0].Skip)
	}
	if _, err := NewPlan(ctx, e, Options{Variants: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "no variant") {
		t.Errorf("unknown variant: %v", err)
	}
	if _, err := NewPlan(ctx, e, Options{Set: []lab.Setting{{Key: "rtt", Value: "-1ms"}}}); err == nil {
		t.Error("a bad override was accepted")
	}
}

// TestRunBlockEvents runs a small block for real with the race-enabled
// test binary as its lab and worker processes, and checks the contract:
// the model's shape, the event kinds, the sink's calls.
func TestRunBlockEvents(t *testing.T) {
	b := writeLab(t, `requests = 3
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
[[variant]]
name = "recycled"
reuse = "process"
max_requests = 1
`)
	kinds := map[string]map[sim.Kind]int{}
	opened := map[string]map[int]int{} // variant → connection id → opens
	res, err := RunBlock(context.Background(), b, Options{Seed: 1, Executable: simBin, Sink: func(block, variant string, e *sim.Event) {
		if block != "t" {
			t.Errorf("block %q", block)
		}
		if e.Kind == sim.KindOpen {
			if opened[variant] == nil {
				opened[variant] = map[int]int{}
			}
			opened[variant][e.Conn]++
		}
		if e.Kind == sim.KindCall && e.Worker != 1 {
			t.Errorf("%s: call on worker %d, want 1", variant, e.Worker)
		}
		if kinds[variant] == nil {
			kinds[variant] = map[sim.Kind]int{}
		}
		kinds[variant][e.Kind]++
	}})
	if err != nil {
		t.Fatal(err)
	}
	model, err := b.RunVariants(context.Background(), lab.RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != model.ID || len(res.Variants) != len(model.Variants) {
		t.Fatalf("shape: %+v", res)
	}
	for i, v := range res.Variants {
		if v.Name != model.Variants[i].Name || v.Summary == nil || v.Scenario == nil {
			t.Fatalf("variant %d: %+v", i, v)
		}
		s := v.Summary
		if s.Requests != 3 || s.Calls != 3 || s.Errors != 0 {
			t.Errorf("%s: %+v", v.Name, s)
		}
		if !slices.Equal(s.NumConnects, model.Variants[i].Summary.NumConnects) {
			t.Errorf("%s: num_connects %v, model %v", v.Name, s.NumConnects, model.Variants[i].Summary.NumConnects)
		}
		k := kinds[v.Name]
		if k[sim.KindCall] != 3 || k[sim.KindRequest] != 3 || k[sim.KindOpen] != s.Connects || k[sim.KindClose] == 0 {
			t.Errorf("%s: events %v", v.Name, k)
		}
	}
	// Each worker process numbers its connections from 1: the run gives
	// every connection its own id, replacements included (pm.max_requests
	// = 1 puts every request on a new process).
	for v, ids := range opened {
		for id, n := range ids {
			if n != 1 {
				t.Errorf("%s: connection %d opened %d times", v, id, n)
			}
		}
	}
	if len(opened["recycled"]) != 3 {
		t.Errorf("recycled: %d connection ids, want 3", len(opened["recycled"]))
	}
	if kinds["request"][sim.KindTimeWait] != 3 {
		t.Errorf("request-scoped connections: %d time_wait events, want 3", kinds["request"][sim.KindTimeWait])
	}
}

// testOptions bound the real runs of the tests: shorter than sim
// validate's defaults, with the binary built without -race.
func testOptions() Options {
	return Options{Seed: 1, MaxDuration: 2 * time.Second, MaxRequests: 400, Executable: simBin}
}

// validate runs one block and reports every row, failing the test if a
// variant is outside tolerance after two more attempts.
func validate(t *testing.T, b *lab.Block, opt Options) *BlockValidation {
	t.Helper()
	return validateWith(t, b, opt, true)
}

// validateWith fails on counts, and on phases if phases is set.
func validateWith(t *testing.T, b *lab.Block, opt Options, phases bool) *BlockValidation {
	t.Helper()
	bv, err := Validate(context.Background(), b, opt, DefaultTolerance, 2)
	if err != nil {
		t.Fatal(err)
	}
	judgeValidation(t, b, bv, phases, nil)
	return bv
}

// judgeValidation logs bv's variants and fails as validateWith says. When
// timed is not nil, it says why a variant's counts may have missed by
// timing alone ("" when they may not): then they are reported, not
// asserted.
func judgeValidation(t *testing.T, b *lab.Block, bv *BlockValidation, phases bool, timed func(*VariantComparison) string) {
	t.Helper()
	for _, v := range bv.Variants {
		var rows []string
		for _, p := range v.Phases {
			row := fmt.Sprintf("%s %.3f/%.3f", p.Phase, p.ModelMS, p.MeasuredMS)
			if !p.OK {
				row += fmt.Sprintf(" (measured p90 %.3f)", p.MeasuredP90MS)
			}
			rows = append(rows, row)
		}
		for _, c := range v.Counts {
			if !c.OK {
				rows = append(rows, fmt.Sprintf("%s %v/%v", c.Name, c.Model, c.Measured))
			}
		}
		start := ""
		if u := v.HarnessStart; u != nil {
			start = fmt.Sprintf(" start=%.1fms/%d", u.CPUMS, u.Faults)
		}
		t.Logf("%s/%s ok=%v attempts=%d overhead=%.3fms lag=%.3fms/%d wlag=%.3fms/%d%s %s %s", b.ID, v.Name, v.OK, v.Attempts, v.HarnessOverheadMS, v.HarnessLagMS, v.LateReads, v.HarnessWriteLagMS, v.LateWrites, start, v.Skipped, strings.Join(rows, "; "))
		for _, e := range v.Earlier {
			t.Logf("%s/%s %s", b.ID, v.Name, e)
		}
		if !v.OK {
			t.Logf("%s/%s: the machine after the run: %s", b.ID, v.Name, machineState())
		}
		// v.OK is false on a known disagreement too: then the phases
		// decide.
		phasesOK := true
		for _, p := range v.Phases {
			phasesOK = phasesOK && p.OK
		}
		countsOK, known := true, false
		for _, c := range v.Counts {
			if !c.OK {
				if why := knownDisagreement(b.ID, v.Name, c.Name); why != "" {
					t.Logf("%s/%s: %s %v/%v: a known disagreement, reported, not asserted: %s", b.ID, v.Name, c.Name, c.Model, c.Measured, why)
					known = true
					continue
				}
			}
			countsOK = countsOK && c.OK
		}
		ok := v.OK || (known && countsOK && phasesOK)
		// The verdict decides, as sim validate's does: what missed on a
		// machine measured busy, where a busy machine slows a run down,
		// is inconclusive and reported; anything else that missed fails.
		switch {
		case !ok && v.Verdict == VerdictInconclusive && !strictTiming():
			t.Logf("%s/%s: inconclusive, not asserted (CONNLAB_STRICT_TIMING=1 asserts anyway): %s", b.ID, v.Name, v.Inconclusive)
		case !countsOK && timed != nil && timed(v) != "":
			t.Logf("%s/%s: counts differ from the model's: %s; not asserted: %s", b.ID, v.Name, v.Why, timed(v))
		case !countsOK:
			t.Errorf("%s/%s: counts differ from the model's: %s", b.ID, v.Name, v.Why)
		case !ok && phases:
			t.Errorf("%s/%s outside tolerance %s (model/measured ms): %s%s", b.ID, v.Name, DefaultTolerance, v.Why, v.Inconclusive)
		case !ok:
			t.Logf("%s/%s: phases outside tolerance (reported, not asserted here)", b.ID, v.Name)
		}
	}
}

// knownDisagreements are the counts where the real run is known to differ
// from the model and the mechanism is not yet found: each is reported (the
// test log shows both numbers) instead of failing, and is an open finding,
// not a tolerance. Keyed "block/variant/count".
var knownDisagreements = map[string]string{
	// A pool of 4 that fails at once when full, Poisson arrivals at 600/s
	// and 5 ms of server time: the real run refuses more calls than the
	// model (23 against 14 on an idle 2-CPU machine, 29 against 26 at 5 ms
	// of RTT): the real calls hold their connections a little longer
	// (wake-up and write latency the model does not price), which matters
	// most when the pool is full. Not seen on 2026-12-01: 14 against 14 in
	// seven runs of eight (16 once), at load 1.7-5.
	"full/error/errors": "the real pool is full more often than the model's (calls hold connections a little longer)",
}

func knownDisagreement(block, variant, count string) string {
	return knownDisagreements[block+"/"+variant+"/"+count]
}

// TestTare: the harness's own overhead of a reused call is measured once
// per RTT, and is small next to the round trip.
func TestTare(t *testing.T) {
	if testing.Short() {
		t.Skip("real runs")
	}
	opt := testOptions()
	var d time.Duration
	var err error
	busy := busyDuring(func() { d, err = Tare(context.Background(), 7*time.Millisecond, opt) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("harness overhead of a reused call at 7 ms RTT: %s", d)
	switch {
	case d > 2*time.Millisecond && busy == "":
		t.Errorf("harness overhead %s on an idle machine (%s): the harness is slow", d, loadAvg())
	case d > 2*time.Millisecond:
		t.Logf("harness overhead %s; not asserted: %s", d, busy)
	}
	start := time.Now()
	again, err := Tare(context.Background(), 7*time.Millisecond, opt)
	if err != nil || again != d || time.Since(start) > 50*time.Millisecond {
		t.Errorf("second measurement %s, %v, after %s: want the first, kept", again, err, time.Since(start))
	}
}

// slow skips a real-server test that takes minutes unless CONNLAB_SLOW=1
// (.ci/run sets it: CI runs every one; make test alone stays near 20
// minutes on 2 cores).
func slow(t *testing.T) {
	t.Helper()
	if os.Getenv("CONNLAB_SLOW") == "" {
		t.Skip("a slow real-server test: CONNLAB_SLOW=1 runs it (CI does)")
	}
}

// isPHPBlock reports whether b runs on PHP (TestPHPLab validates those
// blocks whole, with their real_expect statements).
func isPHPBlock(t *testing.T, b *lab.Block) bool {
	t.Helper()
	p, err := NewPlan(context.Background(), b, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, vp := range p.Variants {
		if vp.Setup == SetupPHP || vp.Setup == SetupPHPNative {
			return true
		}
	}
	return false
}

// TestValidateLabs runs every block of every lab at the lab's own
// parameters, model against real. Counts must be equal. Phases must be
// within tolerance where the block's RTT is in the validated range (5 ms to
// 100 ms); below it (the Redis and nginx labs' 0.1 ms on loopback, the
// port-exhaustion lab's 1 ms) Validate shows them without holding them
// (MinJudgedRTT).
func TestValidateLabs(t *testing.T) {
	if testing.Short() {
		t.Skip("real runs of every lab take about a minute")
	}
	eachBlock(t, func(t *testing.T, file string, b *lab.Block) {
		if isStackBlock(t, b) {
			t.Skip("a block with tiers runs on the real stack: TestValidateStackLabs")
		}
		if isPHPBlock(t, b) {
			t.Skip("a PHP block: TestPHPLab validates it whole")
		}
		opt := testOptions()
		if strings.Contains(file, "port-exhaustion") {
			opt.MaxDuration = 3 * time.Second // the range runs out after 2 s
		}
		validate(t, b, opt)
	})
}

// isStackBlock reports whether b runs on the real stack (it has tiers).
func isStackBlock(t *testing.T, b *lab.Block) bool {
	t.Helper()
	p, err := NewPlan(context.Background(), b, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	return p.isStack()
}

// TestValidateRTTs runs every block at both ends of the validated RTT range,
// where phases must be within tolerance too.
func TestValidateRTTs(t *testing.T) {
	if testing.Short() {
		t.Skip("real runs")
	}
	slow(t)
	for _, rtt := range []string{"5ms", "100ms"} {
		t.Run(rtt, func(t *testing.T) {
			eachBlock(t, func(t *testing.T, file string, b *lab.Block) {
				if isStackBlock(t, b) {
					t.Skip("the real stack's round trip is loopback's: no RTT to set")
				}
				opt := testOptions()
				opt.MaxDuration, opt.MaxRequests = 1500*time.Millisecond, 200
				if strings.Contains(file, "port-exhaustion") {
					opt.MaxDuration = 3 * time.Second
				}
				if atOwnRTT(t, b, rtt) {
					t.Skipf("every variant's own RTT is %s: TestValidateLabs validates it there", rtt)
				}
				opt.Set = []lab.Setting{{Key: "rtt", Value: rtt}}
				validate(t, b, enoughCalls(t, b, opt))
			})
		})
	}
}

// atOwnRTT reports whether every variant of b already has rtt as written,
// so that TestValidateLabs measures it at that RTT (idle-timeouts' race
// block, at 100 ms).
func atOwnRTT(t *testing.T, b *lab.Block, rtt string) bool {
	t.Helper()
	want, err := time.ParseDuration(rtt)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range b.Variants {
		s, err := b.Scenario(v, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.RTT != want {
			return false
		}
	}
	return true
}

// minCutRequests is how many requests a variant that the time limit cuts
// short keeps at least in TestValidateRTTs. A phase is compared by its
// median, and a median of one or two calls is one call: one late wake-up
// of the harness decides it. (idle-timeouts' race block, a request every
// 0.75 s compressed, kept 2 in 1.5 s, so "total, new conn" and "total,
// reused" were one call each.)
const minCutRequests = 10

// enoughCalls doubles opt.MaxDuration, up to 12 s, until every variant of
// b that the limit cuts short keeps minCutRequests requests. Variants the
// lab itself makes short (requests = 2) stay as they are, and so does a
// block whose pauses leave it short even at 12 s (a longer run would buy
// no median).
func enoughCalls(t *testing.T, b *lab.Block, opt Options) Options {
	t.Helper()
	short := func(o Options) bool {
		p, err := NewPlan(context.Background(), b, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, vp := range p.Variants {
			n, orig := vp.Scenario.Requests, vp.Original.Requests
			if vp.Rejected == "" && n < minCutRequests && (orig == 0 || orig > n) && n < o.MaxRequests {
				return true
			}
		}
		return false
	}
	if !short(opt) {
		return opt
	}
	for o := opt; o.MaxDuration < 12*time.Second; {
		o.MaxDuration = min(2*o.MaxDuration, 12*time.Second)
		if !short(o) {
			t.Logf("at most %s a variant, so that a variant cut short keeps %d requests or more", o.MaxDuration, minCutRequests)
			return o
		}
	}
	return opt
}

// eachBlock runs f for every block of every lab (translations hold the
// same blocks).
func eachBlock(t *testing.T, f func(t *testing.T, file string, b *lab.Block)) {
	files, _ := filepath.Glob(filepath.Join(labsDir, "*.md"))
	for _, file := range files {
		if strings.HasSuffix(file, ".ko.md") {
			continue
		}
		for _, b := range readLab(t, filepath.Base(file)).Blocks {
			t.Run(strings.TrimSuffix(filepath.Base(file), ".md")+"/"+b.ID, func(t *testing.T) { f(t, file, b) })
		}
	}
}

// TestValidateRealPrograms runs the nginx and Redis labs with nginx and
// redis-server, when installed (CI installs both); the nginx lab also at
// 5 ms of RTT, where its phases are held too (nginx dials the upstream
// itself, so the handshake's round trip must be charged on its first bytes).
func TestValidateRealPrograms(t *testing.T) {
	if testing.Short() {
		t.Skip("real runs")
	}
	for _, c := range []struct{ prog, file, real, rtt string }{
		{"nginx", "nginx-keepalive.md", "nginx", ""},
		{"nginx", "nginx-keepalive.md", "nginx", "5ms"},
		{"redis-server", "connection-pool.md", "redis", ""},
	} {
		name := c.prog
		if c.rtt != "" {
			name += "/rtt=" + c.rtt
		}
		t.Run(name, func(t *testing.T) {
			if _, err := exec.LookPath(c.prog); err != nil {
				t.Skipf("%s is not installed: the embedded stand-in covers this lab in TestValidateLabs", c.prog)
			}
			for _, b := range readLab(t, c.file).Blocks {
				if isStackBlock(t, b) {
					continue // always the real programs: TestValidateStackLabs
				}
				opt := testOptions()
				opt.Real = []string{c.real}
				if c.rtt != "" {
					opt.MaxDuration, opt.MaxRequests = 1500*time.Millisecond, 200
					opt.Set = []lab.Setting{{Key: "rtt", Value: c.rtt}}
				}
				bv := validate(t, b, opt)
				for _, v := range bv.Variants {
					if !strings.Contains(strings.Join(v.Components, " "), c.prog[:5]) {
						t.Errorf("%s/%s did not use %s: %q", b.ID, v.Name, c.prog, v.Components)
					}
				}
			}
		})
	}
}

// TestRaceForced makes the keep-alive race happen on every second request:
// the client sends just as the server's idle timer fires. curl (GET) sends
// again on a new connection; a POST fails. Model and kernel agree.
func TestRaceForced(t *testing.T) {
	if testing.Short() {
		t.Skip("real runs")
	}
	// The server starts its timer when it sends the response, RTT/2 before
	// the client has it: a think time of keepalive - RTT/2 sends the next
	// request as the server closes.
	b := writeLab(t, `requests = 6
pause_every = 1
pause = "29s"
keepalive_timeout = "30s"
reuse = "pool"
rtt = "20ms"
dns = "0s"
tls = "none"
server_time = "1ms"
[[variant]]
name = "curl"
[[variant]]
name = "post"
retry_on_race = false
[[variant]]
name = "early"
pause = "27s"
`)
	// 30 s ÷ 100 = 300 ms; the pause of 290 ms ends RTT/2 = 10 ms after
	// the server's timer started, as it fires: the request arrives 10 ms
	// after the server closed. A pause of 270 ms gets there 10 ms before.
	//
	// Which side of the close a request lands on hangs on those 10 ms: a
	// harness that other programs keep from the CPUs for longer moves it
	// across, and the counts follow (early: 3 races in 6 requests at a
	// load of 9.5 on 2 CPUs, the harness 30 ms behind). Validate tries a
	// variant three times; a count that missed in the last attempt while
	// the machine was measured busy, or while the harness fell behind its
	// own emulated network by the margin, is reported, not asserted.
	const margin = 10 * time.Millisecond
	var bv *BlockValidation
	var err error
	busy := busyDuring(func() { bv, err = Validate(context.Background(), b, testOptions(), DefaultTolerance, 2) })
	if err != nil {
		t.Fatal(err)
	}
	timed := func(v *VariantComparison) string {
		late := time.Duration(max(v.HarnessLagMS, v.HarnessWriteLagMS) * float64(time.Millisecond))
		switch {
		case busy != "":
			return busy
		case late >= margin && !strictTiming():
			return fmt.Sprintf("the harness fell behind its own emulated network by %v, the race's margin is %v", late, margin)
		}
		return ""
	}
	judgeValidation(t, b, bv, true, timed)
	for _, v := range bv.Variants {
		if v.Measured == nil {
			t.Fatalf("%s not run", v.Name)
		}
		m := v.Measured
		// What a busy machine can move (whether a race happened) and what
		// it cannot (what a race does: curl retries, a POST fails).
		var miss string
		switch v.Name {
		case "curl":
			if m.Errors != 0 {
				t.Errorf("curl: races %d errors %d, want no errors", m.Races, m.Errors)
			}
			if m.Races == 0 {
				miss = fmt.Sprintf("curl: races %d, want races", m.Races)
			}
		case "post":
			if m.Errors != m.Races {
				t.Errorf("post: races %d errors %d, want each race an error", m.Races, m.Errors)
			}
			if m.Errors == 0 {
				miss = fmt.Sprintf("post: races %d errors %d, want races", m.Races, m.Errors)
			}
		case "early":
			if m.Races != 0 || m.Connects != 1 {
				miss = fmt.Sprintf("early: races %d connects %d, want the connection reused", m.Races, m.Connects)
			}
		}
		switch why := timed(v); {
		case miss == "":
		case why != "":
			t.Logf("%s; not asserted: %s", miss, why)
		default:
			t.Errorf("%s", miss)
		}
	}
}

// childPIDs lists this process's children.
func childPIDs(t *testing.T) []string {
	t.Helper()
	return childrenOf(strconv.Itoa(os.Getpid()))
}

// childrenOf returns the PIDs of the processes that pid's threads started.
func childrenOf(pid string) []string {
	var kids []string
	tasks, _ := filepath.Glob("/proc/" + pid + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		kids = append(kids, strings.Fields(string(b))...)
	}
	return kids
}

// descendantSlacks returns the timer slack of every descendant of pid, by
// "command (pid)".
func descendantSlacks(pid int) map[string]string {
	out := map[string]string{}
	var walk func(pid string)
	walk = func(pid string) {
		for _, kid := range childrenOf(pid) {
			comm, _ := os.ReadFile("/proc/" + kid + "/comm")
			if ns, err := os.ReadFile("/proc/" + kid + "/timerslack_ns"); err == nil {
				out[strings.TrimSpace(string(comm))+" ("+kid+")"] = strings.TrimSpace(string(ns))
			}
			walk(kid)
		}
	}
	walk(strconv.Itoa(pid))
	return out
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// TestSafety runs 100 validations, then cancels one mid-run: goroutines,
// open files and child processes come back to where they were.
func TestSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("100 real runs")
	}
	b := writeLab(t, `requests = 2
rtt = "1ms"
dns = "1ms"
tls = "none"
server_time = "0.5ms"
reuse = "process"
`)
	opt := testOptions()
	ctx := context.Background()
	// One run first, so lazily started runtime goroutines and the
	// certificates exist before the baseline is taken.
	if _, err := Validate(ctx, b, opt, Tolerance{Pct: 1000, Abs: time.Second}, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	g0, f0 := runtime.NumGoroutine(), openFDs(t)
	for i := range 100 {
		bv, err := Validate(ctx, b, opt, Tolerance{Pct: 1000, Abs: time.Second}, 0)
		if err != nil {
			t.Fatalf("validation %d: %v", i, err)
		}
		if v := bv.Variants[0]; v.Measured == nil || v.Measured.Requests != 2 {
			t.Fatalf("validation %d: %+v", i, v)
		}
	}
	// Ctrl-C in the middle of a run.
	long := writeLab(t, "requests = 50\nrtt = \"50ms\"\ntls = \"1.3\"\nreuse = \"request\"\n")
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(700*time.Millisecond, cancel)
	if _, err := RunBlock(cctx, long, opt); err != context.Canceled {
		t.Errorf("cancelled run: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		g, f, kids := runtime.NumGoroutine(), openFDs(t), childPIDs(t)
		if g <= g0+2 && f <= f0 && len(kids) == 0 {
			t.Logf("after 100 validations and a cancelled run: %d goroutines (%d before), %d open files (%d before), no children", g, g0, f, f0)
			break
		}
		if time.Now().After(deadline) {
			var buf bytes.Buffer
			pprofGoroutines(&buf)
			t.Fatalf("leak: %d goroutines (%d before), %d files (%d before), children %v\n%s", g, g0, f, f0, kids, buf.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func pprofGoroutines(w io.Writer) {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	w.Write(buf[:n])
}

// strictTiming: CONNLAB_STRICT_TIMING=1 asserts a timing however busy the
// machine was.
func strictTiming() bool { return os.Getenv("CONNLAB_STRICT_TIMING") == "1" }

// busyDuring runs f and says whether other programs kept the machine busy
// meanwhile, as a real run's verdict judges it (busyShare: their share of
// the CPUs less this process's and its children's), and how busy ("" when
// not, or with CONNLAB_STRICT_TIMING=1).
func busyDuring(f func()) string {
	busy := kernel.BusyDuring(f)
	if strictTiming() {
		return ""
	}
	return busy
}

// loadAvg is the machine's load averages, for a log line.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load unknown"
	}
	return fmt.Sprintf("load %s %s %s on %d CPUs", f[0], f[1], f[2], runtime.NumCPU())
}

// machineState describes what a timing failure may owe to the machine: its
// load, its CPUs and Go's share of them, a CPU limit on this cgroup, and
// the share of CPU time the hypervisor took for others since boot (steal).
func machineState() string {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	limit := read("/sys/fs/cgroup/cpu.max") // cgroup v2: "max 100000" when unlimited
	if limit == "" {
		limit = read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us") + " " + read("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
	}
	steal := "unknown"
	if f := strings.Fields(strings.SplitN(read("/proc/stat"), "\n", 2)[0]); len(f) > 8 && f[0] == "cpu" {
		var total, st float64
		for i, v := range f[1:] {
			x, _ := strconv.ParseFloat(v, 64)
			if i < 8 { // user … steal; guest time is counted in user already
				total += x
			}
			if i == 7 {
				st = x
			}
		}
		if total > 0 {
			steal = fmt.Sprintf("%.2f%%", 100*st/total)
		}
	}
	return fmt.Sprintf("load average %s; %d CPUs, GOMAXPROCS %d; cgroup CPU limit %q; steal since boot %s; timer slack %sns",
		read("/proc/loadavg"), runtime.NumCPU(), runtime.GOMAXPROCS(0), limit, steal, read("/proc/self/timerslack_ns"))
}

// TestCancelRemovesTempDirs cancels real runs that use redis-server and
// nginx (when installed) once their first call is measured: the folders
// those programs were given (configuration, logs) and the lab process's own
// must be gone afterwards, and so must every child process, however the
// lab process ended. While it ran, every process of the run had a timer
// slack of 1 ns (netem.TightenTimerSlack).
func TestCancelRemovesTempDirs(t *testing.T) {
	if testing.Short() {
		t.Skip("real runs")
	}
	for _, c := range []struct{ prog, file, block, real string }{
		{"redis-server", "connection-pool.md", "no-pool", "redis"},
		{"nginx", "nginx-keepalive.md", "without", "nginx"},
	} {
		t.Run(c.prog, func(t *testing.T) {
			if _, err := exec.LookPath(c.prog); err != nil {
				t.Skipf("%s is not installed", c.prog)
			}
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp) // this process's and the lab process's temporary folder
			b, _ := readLab(t, c.file).Block(c.block)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opt := testOptions()
			opt.Real = []string{c.real}
			if p, err := NewPlan(ctx, b, opt); err != nil || p.Setup != map[string]string{"redis": SetupRedis, "nginx": SetupProxy}[c.real] {
				t.Fatalf("%s/%s runs on %v (%v)", c.file, c.block, p, err)
			}
			var once sync.Once
			var slacks map[string]string
			opt.Sink = func(_, _ string, e *sim.Event) {
				// nginx's calls come from its log after the run: its
				// requests are the load generator's.
				if e.Kind == sim.KindCall || e.Kind == sim.KindRequest {
					once.Do(func() { slacks = descendantSlacks(os.Getpid()) })
					cancel() // the servers are up and serving
				}
			}
			if _, err := RunBlock(ctx, b, opt); err != context.Canceled {
				t.Fatalf("cancelled run: %v", err)
			}
			// The lab process lowered its timer slack, and its children
			// (the program among them) inherited it.
			progs := 0
			for who, ns := range slacks {
				if ns != "1" {
					t.Errorf("%s ran with a timer slack of %s ns, want 1", who, ns)
				}
				if strings.HasPrefix(who, c.prog) {
					progs++
				}
			}
			if progs == 0 {
				t.Errorf("no %s among the run's processes %v", c.prog, slacks)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				left, _ := filepath.Glob(filepath.Join(tmp, "connlab-*"))
				kids := childPIDs(t)
				if len(left) == 0 && len(kids) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after a cancelled run with %s: left in the temp dir %q, child processes %v", c.prog, left, kids)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
