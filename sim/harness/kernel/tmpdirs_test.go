package kernel

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// deadPID is a PID no process can have: above the kernel's pid_max.
func deadPID(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Skip("no /proc/sys/kernel/pid_max:", err)
	}
	max, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return max + 1
}

func TestTempOwner(t *testing.T) {
	for name, want := range map[string]int{
		"connlab-lab-123-456":          123,
		"connlab-stack-7-0":            7,
		"connlab-php-4194305-aZ09xY":   4194305,
		"connlab-lab-123":              0, // before PIDs were in names: no owner known
		"connlab-site-123-456":         0, // not a real run's (a test's)
		"connlab-harness-test-1234567": 0,
		"connlab-lab-0123-4":           0,
		"connlab-lab--4":               0,
		"connlab-lab-12a-4":            0,
		"connlab-lab-12-":              0,
		"connlab-lab-12-4/..":          0,
		"connlab-lab-12-4.x":           0,
		"connlab-lab-99999999999-4":    0,
		"xconnlab-lab-12-4":            0,
	} {
		if got, ok := tempOwner(name); got != want || ok != (want > 0) {
			t.Errorf("tempOwner(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
}

// TestSweepTemp: the sweep removes our folders whose owner is gone, and
// only those: not a live owner's, nor a young one, nor another program's,
// nor a file or a symbolic link of our name, and nothing a link inside a
// removed folder points at.
func TestSweepTemp(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sweep reads Linux's /proc")
	}
	dir := t.TempDir()
	dead, live := strconv.Itoa(deadPID(t)), strconv.Itoa(procPID())
	outside := t.TempDir()
	keepFile := filepath.Join(outside, "keep")
	if err := os.WriteFile(keepFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	mk := func(name string, age time.Time) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(p, "sub", "nginx.conf"), []byte("x"), 0o644)
		if err := os.Symlink(outside, filepath.Join(p, "link")); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
	}
	gone := []string{"connlab-lab-" + dead + "-123", "connlab-php-" + dead + "-aB3xYz", "connlab-stack-" + dead + "-9"}
	for _, n := range gone {
		mk(n, old)
	}
	kept := []string{
		"connlab-lab-" + live + "-123",     // its owner runs
		"connlab-stack-1-5",                // so does init
		"connlab-lab-" + dead + "-777",     // too young to tell
		"connlab-site-" + dead + "-1",      // not a real run's kind
		"connlab-lab-4000000000",           // no owner in the name
		"connlab-lab-" + dead + "-file",    // a file, below
		"connlab-lab-" + dead + "-symlink", // a symbolic link, below
		"other-" + dead + "-1",
	}
	for _, n := range kept[:5] {
		age := old
		if strings.HasSuffix(n, "-777") {
			age = time.Now()
		}
		mk(n, age)
	}
	os.WriteFile(filepath.Join(dir, kept[5]), []byte("x"), 0o644)
	os.Chtimes(filepath.Join(dir, kept[5]), old, old)
	os.Symlink(outside, filepath.Join(dir, kept[6]))
	mk(kept[7], old)

	removed := sweepTemp(dir, time.Now())
	var want []string
	for _, n := range gone {
		want = append(want, filepath.Join(dir, n))
	}
	slices.Sort(removed)
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("sweep removed %q, want %q", removed, want)
	}
	for _, n := range gone {
		if _, err := os.Lstat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", n, err)
		}
	}
	for _, n := range kept {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s: removed (%v); want it kept", n, err)
		}
	}
	if _, err := os.Stat(keepFile); err != nil {
		t.Errorf("a file a removed folder's link pointed at: %v", err)
	}
	// A second sweep finds nothing more.
	if again := sweepTemp(dir, time.Now()); len(again) != 0 {
		t.Errorf("a second sweep removed %q", again)
	}
}

// TestMkdirTempNamed: a folder MkdirTemp makes carries this process's PID,
// so a sweep leaves it while the process runs.
func TestMkdirTempNamed(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	p, err := MkdirTemp("lab")
	if err != nil {
		t.Fatal(err)
	}
	pid, ok := tempOwner(filepath.Base(p))
	if !ok || pid != procPID() || (runtime.GOOS == "linux" && pid != os.Getpid()) {
		t.Errorf("MkdirTemp made %s: owner %d, %v; want this process, %d", p, pid, ok, os.Getpid())
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(p, old, old)
	if removed := sweepTemp(os.TempDir(), time.Now()); len(removed) != 0 {
		t.Errorf("the sweep removed a live process's folder: %q", removed)
	}
}
