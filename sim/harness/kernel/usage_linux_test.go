package kernel

import (
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestRunDelay: more threads that want a CPU than there are CPUs wait in
// the run queue, and ReadUsage counts the wait.
func TestRunDelay(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("no schedstat on this system")
	}
	u0, ok := ReadUsage()
	if !ok {
		t.Skip("no usage on this system")
	}
	// As many Ps, so as many threads (which outlive the goroutines and
	// keep their counts).
	n := runtime.NumCPU() + 2
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	var wg sync.WaitGroup
	end := time.Now().Add(300 * time.Millisecond)
	for range n {
		wg.Go(func() {
			for time.Now().Before(end) {
			}
		})
	}
	wg.Wait()
	u1, _ := ReadUsage()
	d := u1.Sub(u0)
	t.Logf("%d busy threads on %d CPUs for 300 ms: %v of CPU, %v waiting for one", n, runtime.NumCPU(), d.CPU, d.RunDelay)
	if d.RunDelay < 100*time.Millisecond {
		t.Errorf("run delay %v: %d threads on %d CPUs must have waited", d.RunDelay, n, runtime.NumCPU())
	}
}

func TestParseSteal(t *testing.T) {
	stat := "cpu  29555 18 11158 126878 317 0 164 250 0 0\ncpu0 14143 8 5548 64194 17 0 88 0 0 0\n"
	if got := parseSteal([]byte(stat)); got != 2500*time.Millisecond {
		t.Errorf("steal of %q: %v, want 2.5s", stat, got)
	}
	if got := parseSteal([]byte("intr 1 2 3\n")); got != 0 {
		t.Errorf("steal of another line: %v, want 0", got)
	}
}
