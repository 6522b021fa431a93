package phpwasm

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/connlab/connlab/sim/harness/kernel"
)

// TestNativeKilledSwept: a native driver's folder carries the driver's PID
// (connlab-php-PID-…), so that when the driver is killed with SIGKILL,
// which skips its exit handler and leaves the folder, the next real run's
// sweep (kernel.SweepTemp) removes it; while the driver runs, it stays.
func TestNativeKilledSwept(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the driver's folder, and the sweep's
	p := startNative(t)
	ch := p.ready.Info.Child
	t.Cleanup(func() { syscall.Kill(ch.PID, syscall.SIGKILL) })
	if want := "connlab-php-" + strconv.Itoa(p.cmd.Process.Pid) + "-"; filepath.Dir(ch.Dir) != tmp || !strings.HasPrefix(filepath.Base(ch.Dir), want) {
		t.Fatalf("php -S folder %s; want %s/%s…", ch.Dir, tmp, want)
	}
	old := time.Now().Add(-2 * time.Minute)
	os.Chtimes(ch.Dir, old, old)
	if removed := kernel.SweepTemp(); len(removed) != 0 {
		t.Fatalf("a sweep while the driver runs removed %q", removed)
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	syscall.Kill(ch.PID, syscall.SIGKILL) // php -S outlives a killed driver (a lab's PID namespace ends it)
	if _, err := os.Stat(ch.Dir); err != nil {
		t.Fatalf("the killed driver's folder: %v; want it left behind (the exit handler cannot run)", err)
	}
	os.Chtimes(ch.Dir, old, old)
	if removed := kernel.SweepTemp(); len(removed) != 1 || removed[0] != ch.Dir {
		t.Errorf("the sweep after the driver was killed removed %q; want %s", removed, ch.Dir)
	}
}
