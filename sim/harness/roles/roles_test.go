package roles

import (
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/kernel"
)

// TestSetupsMatchScenarioKey: every value of the scenario's setup key but
// auto has a setup here, and every setup here is a value of the key.
func TestSetupsMatchScenarioKey(t *testing.T) {
	p, ok := sim.LookupParam("setup")
	if !ok {
		t.Fatal("no setup key in sim.Scenario")
	}
	var want []sim.Setup
	for _, v := range p.Enum {
		if v != string(sim.SetupAuto) {
			want = append(want, sim.Setup(v))
		}
	}
	slices.Sort(want)
	if got := Setups(); !slices.Equal(got, want) {
		t.Errorf("setups %v, the setup key's values %v (without auto)", got, want)
	}
	if p.Default != "auto" || !p.Fixed {
		t.Errorf("setup key: default %q, fixed %v; want auto, shown as fixed text", p.Default, p.Fixed)
	}
	for _, name := range Setups() {
		if !strings.Contains(SetupHelp(), "  "+string(name)+": ") {
			t.Errorf("SetupHelp has no line for %s", name)
		}
	}
}

// TestMainArgs: Main plays a role only for its own subcommand.
func TestMainArgs(t *testing.T) {
	for _, args := range [][]string{nil, {}, {"run", "x.md"}, {"lab"}, {"--" + Command}} {
		if code, ok := Main(args); ok {
			t.Errorf("Main(%q) played a role (exit %d)", args, code)
		}
	}
	if code, ok := Main([]string{Command, "juggler"}); !ok || code != 2 {
		t.Errorf("an unknown role: exit %d, handled %v; want 2, true", code, ok)
	}
}

// TestWarmHeap: with the collector off, as in a lab process, a run's first
// allocations touch pages the process has not used, a page fault each;
// after settle has warmed the heap they reuse warmed pages.
func TestWarmHeap(t *testing.T) {
	if _, ok := kernel.ReadUsage(); !ok {
		t.Skip("no page fault counts on this system")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const n = 8 << 20
	faults := func() int64 {
		u0, _ := kernel.ReadUsage()
		var keep [][]byte
		for range n / (16 << 10) {
			b := make([]byte, 16<<10)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		runtime.KeepAlive(keep)
		u1, _ := kernel.ReadUsage()
		return u1.Sub(u0).Faults
	}
	debug.FreeOSMemory() // free pages go back to the kernel: the next touch faults
	cold := faults()
	debug.FreeOSMemory()
	settle(2 * n)
	warm := faults()
	t.Logf("%d MB in 16 KB objects: %d page faults cold, %d after settle(%d MB)", n>>20, cold, warm, 2*n>>20)
	if pages := int64(n / 4096); cold < pages/2 {
		t.Fatalf("cold allocations took %d page faults, fewer than half their %d pages: the test measures nothing", cold, pages)
	}
	if warm > cold/4 {
		t.Errorf("after settle the allocations took %d page faults, cold %d: the warmed heap was not reused", warm, cold)
	}
}

// TestQuietSpell: the pause a handshake is measured after follows how long
// a worker waits between calls, and none below minQuiet.
func TestQuietSpell(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		s    sim.Scenario
		want time.Duration
	}{
		{"open, one worker, 1.33 req/s", sim.Scenario{Load: sim.LoadOpen, Rate: 1.33, Workers: 1}, maxQuiet},
		{"open, 4 workers, 100 req/s", sim.Scenario{Load: sim.LoadOpen, Rate: 100, Workers: 4}, 40 * ms},
		{"open, 600 req/s", sim.Scenario{Load: sim.LoadOpen, Rate: 600, Workers: 1}, 0},
		{"closed, no think time", sim.Scenario{Load: sim.LoadClosed, Concurrency: 8, Workers: 1}, 0},
		{"closed, 8 users thinking 80 ms, 1 worker", sim.Scenario{Load: sim.LoadClosed, Concurrency: 8, Workers: 1, ThinkTime: 80 * ms}, 0},
		{"closed, 2 users thinking 80 ms, 1 worker", sim.Scenario{Load: sim.LoadClosed, Concurrency: 2, Workers: 1, ThinkTime: 80 * ms}, 40 * ms},
		{"closed, a pause of 800 ms", sim.Scenario{Load: sim.LoadClosed, Concurrency: 1, Workers: 1, PauseEvery: 2, Pause: 800 * ms}, maxQuiet},
	} {
		if got := quietSpell(&c.s); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
