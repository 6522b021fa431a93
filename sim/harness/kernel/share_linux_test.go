package kernel

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// spinUntil waits until process pid has used at least d of CPU (however
// busy the machine is, it gets there) and returns what it had used.
func spinUntil(t *testing.T, pid int, d time.Duration) time.Duration {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if p, ok := readProc(strconv.Itoa(pid)); ok && p.own >= d {
			return p.own
		}
	}
	t.Fatalf("process %d did not use %v of CPU in a minute", pid, d)
	return 0
}

// TestShareRunAndOthers: a busy process below this one counts as the
// run's, and a busy process that is not (an orphan, now init's) as other
// programs'; both whatever else the machine is doing.
func TestShareRunAndOthers(t *testing.T) {
	if _, ok := ReadShare(); !ok {
		t.Skip("no /proc")
	}
	// A child of this process.
	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	c0 := spinUntil(t, child.Process.Pid, 0)
	before, _ := ReadShare()
	c1 := spinUntil(t, child.Process.Pid, c0+300*time.Millisecond)
	after, _ := ReadShare()
	child.Process.Kill()
	child.Wait()
	if u := after.Sub(before); u.Run < c1-c0-20*time.Millisecond {
		t.Errorf("a busy child used %v, the run's share counted %v of CPU", c1-c0, u.Run)
	}

	// An orphan: its shell parent exits at once.
	out, err := exec.Command("sh", "-c", "(while :; do :; done) >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("orphan's pid %q", out)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	o0 := spinUntil(t, pid, 0)
	before, _ = ReadShare()
	o1 := spinUntil(t, pid, o0+300*time.Millisecond)
	after, _ = ReadShare()
	syscall.Kill(pid, syscall.SIGKILL)
	u := after.Sub(before)
	if u.Others < o1-o0-20*time.Millisecond {
		t.Errorf("an orphan used %v, other programs' share counted %v (run %v)", o1-o0, u.Others, u.Run)
	}
	if !u.Busy() {
		t.Errorf("an orphan busy all the window: not busy (%s)", u)
	}
	t.Logf("orphan %v; %s", o1-o0, u)
}

// TestShareQuiet: a window in which only this process works is not busy
// however much it works, and counts its work as the run's.
func TestShareQuiet(t *testing.T) {
	if _, ok := ReadShare(); !ok {
		t.Skip("no /proc")
	}
	var u ShareUse
	busy := BusyDuring(func() {
		before, _ := ReadShare()
		for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		}
		after, _ := ReadShare()
		u = after.Sub(before)
	})
	if u.Run < 100*time.Millisecond {
		t.Errorf("200 ms of spinning counted %v as the run's", u.Run)
	}
	t.Logf("%s (busy: %q)", u, busy)
}

// TestShareExtra: an extra PID's time counts as the run's, not other
// programs'; a PID that is gone is left out.
func TestShareExtra(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	parent := os.Getppid()
	with, _ := ReadShare(parent)
	without, _ := ReadShare()
	if with.Procs != without.Procs+1 {
		t.Errorf("with the parent: %d processes, without %d", with.Procs, without.Procs)
	}
	for k := range with.others {
		if k.pid == parent || k.pid == os.Getpid() {
			t.Errorf("process %d counted as another program's", k.pid)
		}
	}
	gone, _ := ReadShare(1 << 30)
	if gone.Procs != without.Procs {
		t.Errorf("a PID that is gone counted: %d processes", gone.Procs)
	}
}

// TestShareStartedWithin: a process that started within a window counts
// whole; a PID reused by a later process is not that process's.
func TestShareStartedWithin(t *testing.T) {
	before := Share{At: time.Now(), others: map[procKey]time.Duration{{10, 1}: time.Second, {11, 5}: 2 * time.Second}}
	after := Share{At: before.At.Add(time.Second), others: map[procKey]time.Duration{
		{10, 1}:  time.Second + 300*time.Millisecond, // ran 300 ms
		{11, 99}: 200 * time.Millisecond,             // PID 11 again, a new process: counts whole
		{12, 50}: 100 * time.Millisecond,             // new
	}}
	u := after.Sub(before)
	if u.Others != 600*time.Millisecond || u.OtherProcs != 3 {
		t.Errorf("others %v in %d processes, want 600ms in 3", u.Others, u.OtherProcs)
	}
}

func TestParseProc(t *testing.T) {
	// A command name with a space and a parenthesis; flags 4194560 (no
	// PF_KTHREAD); utime 150, stime 50, cutime 7, cstime 3 ticks; start 100.
	line := []byte("4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 7 3 20 0 1 0 100 1000 10 18446744073709551615")
	p, ok := parseProc(line)
	if !ok || p.own != 2*time.Second || p.cpu != 2100*time.Millisecond || p.start != 100 || p.kthread {
		t.Errorf("%+v %v", p, ok)
	}
	kthread := []byte("2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 3 0 0 20 0 1 0 2 0 0 18446744073709551615")
	if p, ok := parseProc(kthread); !ok || !p.kthread {
		t.Errorf("kthreadd: %+v %v, want a kernel thread", p, ok)
	}
	if _, ok := parseProc(line[:40]); ok {
		t.Error("a short line read")
	}
}
