package kernel

import (
	"bytes"
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
		if used, ok := procCPU(strconv.Itoa(pid), false); ok && used >= d {
			return used
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
		t.Skip("no /proc/stat")
	}
	// A child of this process.
	child := exec.Command("sh", "-c", "while :; do :; done")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	before, _ := ReadShare()
	c0, _ := procCPU(strconv.Itoa(child.Process.Pid), false)
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
	before, _ = ReadShare()
	o0, _ := procCPU(strconv.Itoa(pid), false)
	o1 := spinUntil(t, pid, o0+300*time.Millisecond)
	after, _ = ReadShare()
	syscall.Kill(pid, syscall.SIGKILL)
	u := after.Sub(before)
	if u.Others() < o1-o0-40*time.Millisecond {
		t.Errorf("an orphan used %v, other programs' share counted %v (machine %v, run %v)", o1-o0, u.Others(), u.Machine, u.Run)
	}
	t.Logf("orphan %v; window %v: machine %v, run %v (%d processes), others %.2f CPUs", o1-o0, u.Wall, u.Machine, u.Run, u.Procs, u.OthersCPUs())
}

// TestShareExtra: an extra PID's time counts as the run's; a PID that is
// gone is left out.
func TestShareExtra(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	with, _ := ReadShare(os.Getppid())
	without, _ := ReadShare()
	if with.Procs != without.Procs+1 {
		t.Errorf("with the parent: %d processes, without %d", with.Procs, without.Procs)
	}
	gone, _ := ReadShare(1 << 30)
	if gone.Procs != without.Procs {
		t.Errorf("a PID that is gone counted: %d processes", gone.Procs)
	}
}

func TestParseProcCPU(t *testing.T) {
	// A command name with a space and a parenthesis; utime 150, stime 50,
	// cutime 7, cstime 3 ticks.
	line := []byte("4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 7 3 20 0 1 0 100 1000 10 18446744073709551615")
	if d, ok := parseProcCPU(line, false); !ok || d != 2*time.Second {
		t.Errorf("own: %v %v, want 2s", d, ok)
	}
	if d, ok := parseProcCPU(line, true); !ok || d != 2100*time.Millisecond {
		t.Errorf("with children: %v %v, want 2.1s", d, ok)
	}
	if _, ok := parseProcCPU(bytes.TrimSuffix(line[:40], nil), false); ok {
		t.Error("a short line read")
	}
}

func TestParseMachine(t *testing.T) {
	stat := []byte("cpu  29555 18 11158 126878 317 0 164 250 0 0\ncpu0 14143 8 5548 64194 17 0 88 0 0 0\n")
	busy, steal, ok := parseMachine(stat)
	if !ok || busy != (29555+18+11158+250)*10*time.Millisecond || steal != 2500*time.Millisecond {
		t.Errorf("busy %v steal %v %v", busy, steal, ok)
	}
}
