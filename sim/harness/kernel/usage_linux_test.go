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
	if !d.HasRunDelay {
		t.Fatal("the kernel has schedstat, but the run delay is not known")
	}
	t.Logf("%d busy threads on %d CPUs for 300 ms: %v of CPU, %v waiting for one", n, runtime.NumCPU(), d.CPU, d.RunDelay)
	if d.RunDelay < 100*time.Millisecond {
		t.Errorf("run delay %v: %d threads on %d CPUs must have waited", d.RunDelay, n, runtime.NumCPU())
	}
}

func TestParseSteal(t *testing.T) {
	stat := "cpu  29555 18 11158 126878 317 0 164 250 0 0\ncpu0 14143 8 5548 64194 17 0 88 0 0 0\n"
	if got, ok := parseSteal([]byte(stat)); got != 2500*time.Millisecond || !ok {
		t.Errorf("steal of %q: %v %v, want 2.5s", stat, got, ok)
	}
	for _, s := range []string{"intr 1 2 3\n", "cpu  1 2 3 4 5 6 7\n", "cpu  1 2 3 4 5 6 7 x\n"} {
		if got, ok := parseSteal([]byte(s)); ok {
			t.Errorf("steal of %q: %v, want not known", s, got)
		}
	}
}

// TestStealReads: /proc/stat is read from one open file, again and again,
// and what it gives goes forward.
func TestStealReads(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc/stat")
	}
	first, ok := steal()
	if !ok {
		t.Fatal("/proc/stat gives no steal")
	}
	fd := statFD.fd
	for range 3 {
		d, ok := steal()
		if !ok || d < first {
			t.Fatalf("steal %v (%v) after %v", d, ok, first)
		}
	}
	if statFD.fd != fd {
		t.Errorf("/proc/stat opened again (fd %d, then %d)", fd, statFD.fd)
	}
}

// TestSubUnknown: a figure one of two readings lacks is not known in
// their difference, not a difference from 0.
func TestSubUnknown(t *testing.T) {
	a := Usage{RunDelay: time.Second, Steal: time.Second, HasRunDelay: true, HasSteal: true}
	b := Usage{RunDelay: 3 * time.Second, Steal: 2 * time.Second, HasRunDelay: true}
	d := b.Sub(a)
	if !d.HasRunDelay || d.RunDelay != 2*time.Second || d.HasSteal || d.Steal != 0 {
		t.Errorf("%+v", d)
	}
}

// BenchmarkReadUsage: a reading at a run's time 0 (lab process); its
// /proc files stay open between readings.
func BenchmarkReadUsage(b *testing.B) {
	for b.Loop() {
		if _, ok := ReadUsage(); !ok {
			b.Fatal("no usage")
		}
	}
}
