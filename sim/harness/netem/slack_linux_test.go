package netem

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// setAllSlacks sets every thread's timer slack, as an environment would.
func setAllSlacks(t *testing.T, ns string) {
	t.Helper()
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, tid := range tids {
		if err := os.WriteFile("/proc/"+tid.Name()+"/timerslack_ns", []byte(ns), 0); err != nil && !os.IsNotExist(err) {
			t.Skipf("cannot set another thread's timer slack here: %v", err)
		}
	}
}

// burstLateness is the latest of 25 waits that fall due together, as the
// gated first writes of a burst of new connections do.
func burstLateness() time.Duration {
	time.Sleep(20 * time.Millisecond) // the process idle, as between waves
	at := time.Now().Add(4900 * time.Microsecond)
	var mu sync.Mutex
	var worst time.Duration
	var wg sync.WaitGroup
	for range 25 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			SleepUntil(at)
			late := time.Since(at)
			mu.Lock()
			worst = max(worst, late)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return worst
}

// TestTightenTimerSlack: under a large inherited timer slack (50 ms), a
// burst of waits woke up tens of milliseconds late; TightenTimerSlack must
// set every thread's slack to 1 ns, threads and child processes started
// later included, and the burst must then be on time. The bound (10 ms) is
// far above an idle machine's lateness and far below the slack's; two busy
// loops beside the test have made a burst 19 ms late (onTimeBursts).
func TestTightenTimerSlack(t *testing.T) {
	const env = 50 * time.Millisecond
	setAllSlacks(t, "50000000")
	t.Cleanup(func() {
		setAllSlacks(t, "50000") // the kernel's default, for the package's other tests
		margin.Store(0)
	})
	var before []time.Duration
	for range 3 {
		before = append(before, burstLateness())
	}
	t.Logf("with %v of timer slack, the bursts' latest waits: %v", env, before)

	found, err := TightenTimerSlack()
	if err != nil {
		t.Fatal(err)
	}
	if found != env {
		t.Errorf("TightenTimerSlack found %v, want %v", found, env)
	}
	// New threads: goroutines locked to their threads while others start.
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			<-release
		}()
	}
	time.Sleep(10 * time.Millisecond)
	slacks, err := threadSlacks()
	close(release)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slacks {
		if s != 1 {
			t.Errorf("thread slacks after TightenTimerSlack: %v, want all 1ns", slacks)
			break
		}
	}
	out, err := exec.Command("cat", "/proc/self/timerslack_ns").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "1" {
		t.Errorf("a child process's timer slack: %s ns, want 1", got)
	}
	onTimeBursts(t, "after TightenTimerSlack")
}

// onTimeBursts: three bursts of waits, each on time (its latest wait at
// most 10 ms late). A burst whose threads other programs kept from the
// CPUs can be later: a late burst decides only on a quiet machine, and on
// a busy one is tried again (decide).
func onTimeBursts(t *testing.T, what string) {
	t.Helper()
	for i := range 3 {
		decide(t, 1, 3, func() string {
			if late := burstLateness(); late > 10*time.Millisecond {
				return fmt.Sprintf("burst %d: the latest wait was %v late %s", i, late, what)
			}
			return ""
		})
	}
}

// threadSlacks returns the timer slack of each of this process's threads.
func threadSlacks() ([]time.Duration, error) {
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for _, tid := range tids {
		if ns, err := readSlack("/proc/" + tid.Name() + "/timerslack_ns"); err == nil {
			out = append(out, ns)
		}
	}
	return out, nil
}

// TestSlackLeftHandsOverEarly: where the slack cannot be lowered (no
// CAP_SYS_NICE), TightenTimerSlack lengthens SleepUntil's precise stretch
// by it instead, so that a burst under 50 ms of slack is on time all the
// same: waits shorter than the slack never use Go's timers.
func TestSlackLeftHandsOverEarly(t *testing.T) {
	setAllSlacks(t, "50000000")
	t.Cleanup(func() {
		setAllSlacks(t, "50000")
		margin.Store(0)
	})
	setCoarseMargin(50 * time.Millisecond) // what a refused TightenTimerSlack sets
	if got := handOver(); got != coarseMargin+50*time.Millisecond {
		t.Fatalf("hand-over %v, want %v", got, coarseMargin+50*time.Millisecond)
	}
	onTimeBursts(t, "under 50ms of slack")
}
