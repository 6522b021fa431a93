package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sweepLab is a block whose real run lasts about ten seconds (100 calls a
// round trip of 100 ms apart), and one that is over at once.
const (
	sweepLongLab  = "```sim {id=\"long\"}\nworkers = 1\nrequests = 100\nrtt = \"100ms\"\ndns = \"0s\"\ntls = \"none\"\nserver_time = \"1ms\"\nreuse = \"process\"\n```\n"
	sweepShortLab = "```sim {id=\"short\"}\nworkers = 1\nrequests = 4\nrtt = \"5ms\"\ndns = \"0s\"\ntls = \"none\"\nserver_time = \"1ms\"\nreuse = \"process\"\n```\n"
)

// connlabDirs lists the connlab folders in dir.
func connlabDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "connlab-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestKilledRealRunSwept: sim validate killed with SIGKILL during a real
// run leaves its lab process's folder behind (nothing of it runs any
// more); the next real run removes it as it starts, once it is a minute
// old (its mtime is set back here), and leaves none of its own.
func TestKilledRealRunSwept(t *testing.T) {
	sim := simBinary(t)
	tmp := t.TempDir() // TMPDIR of both runs: this test's folders only
	long, short := filepath.Join(tmp, "long.md"), filepath.Join(tmp, "short.md")
	os.WriteFile(long, []byte(sweepLongLab), 0o644)
	os.WriteFile(short, []byte(sweepShortLab), 0o644)
	env := append(os.Environ(), "TMPDIR="+tmp)

	var out bytes.Buffer
	cmd := exec.Command(sim, "validate", "--real", "none", long)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var left []string
	for deadline := time.Now().Add(time.Minute); len(left) == 0; time.Sleep(20 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("sim validate ended before its real run made a folder: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			t.Fatalf("no connlab folder in TMPDIR within a minute: %s", out.String())
		}
		left = connlabDirs(t, tmp)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
	// The lab process dies with its parent (Pdeathsig): wait until nothing
	// of the run is left, so the folder is an orphan for good.
	for deadline := time.Now().Add(time.Minute); len(processesOf(tmp)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("processes of the killed run still running: %v", processesOf(tmp))
		}
	}
	left = connlabDirs(t, tmp)
	if len(left) == 0 {
		t.Fatal("the killed run left no folder: nothing to sweep (its deferred removal cannot have run)")
	}
	t.Logf("the killed run left %v", left)
	old := time.Now().Add(-2 * time.Minute)
	for _, name := range left {
		if err := os.Chtimes(filepath.Join(tmp, name), old, old); err != nil {
			t.Fatal(err)
		}
	}

	// The next run's verdict is not what this test holds (a busy machine
	// would make it inconclusive, exit 2): a wide tolerance keeps it out.
	next := exec.Command(sim, "validate", "--real", "none", "--tolerance", "1000%,1s", short)
	next.Env = env
	if b, err := next.CombinedOutput(); err != nil {
		t.Fatalf("the next real run: %v\n%s", err, b)
	}
	if now := connlabDirs(t, tmp); len(now) != 0 {
		t.Errorf("after the next real run TMPDIR still holds %v; want the killed run's folders swept", now)
	}
}

// processesOf lists the processes whose command line or environment
// mentions s (the run's TMPDIR).
func processesOf(s string) []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(filepath.Join("/proc", d.Name(), f))
			if err == nil && bytes.Contains(b, []byte(s)) {
				out = append(out, d.Name())
				break
			}
		}
	}
	return out
}
