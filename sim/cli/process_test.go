package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/connlab/connlab/internal/testutil"
	"github.com/connlab/connlab/sim/harness/roles"
)

// These tests run `sim` as a process of its own, because what they check
// (signals, a closed pipe, a full disk) happens between the process and
// the system.

// TestMain lets this test binary play the harness's lab and worker
// processes (the real runs of validate's and serve's tests re-execute it)
// and the stuck helper of TestSecondSignal.
func TestMain(m *testing.M) {
	if code, ok := roles.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	if os.Getenv("CONNLAB_TEST_STUCK") == "1" {
		stuckHelper()
		return
	}
	code := m.Run()
	testutil.RemoveSimBinary()
	os.Exit(code)
}

// simBinary builds the sim command once for the tests that need a process.
func simBinary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("signals and /dev/full are Unix")
	}
	p, err := testutil.SimBinary()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// exitOf waits for cmd at most d and returns its exit status (-1: killed
// by a signal); past d it kills the process and fails the test.
func exitOf(t *testing.T, cmd *exec.Cmd, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("still running %v after the signal", d)
		return 0
	}
}

// bigLabs writes two labs near the size limit, one of many blocks and one
// of a block with many variants: reading, checking and running either takes
// many seconds.
func bigLabs(t *testing.T) map[string]string {
	var blocks, variants strings.Builder
	// 2,000 requests a block or variant: runs of a few requests are so
	// cheap that either lab would run to its end in about 2 s.
	blocks.WriteString("+++\ntitle = \"many blocks\"\n+++\n")
	for i := 0; blocks.Len() < 500<<10; i++ {
		fmt.Fprintf(&blocks, "\n```sim {id=\"b%d\"}\nrequests = 2000\ntls = \"none\"\nexpect = [\"connects == 2000\"]\n```\n", i)
	}
	variants.WriteString("```sim {id=\"wide\"}\nrequests = 2000\ntls = \"none\"\nexpect = [\"v0.connects == 2000\"]\n")
	for i := 0; variants.Len() < 500<<10; i++ {
		fmt.Fprintf(&variants, "[[variant]]\nname = \"v%d\"\n", i)
	}
	variants.WriteString("```\n")
	dir := t.TempDir()
	out := map[string]string{}
	for name, src := range map[string]string{"blocks": blocks.String(), "variants": variants.String()} {
		out[name] = filepath.Join(dir, name+".md")
		if err := os.WriteFile(out[name], []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestRunSignals: the first SIGINT, SIGTERM or SIGHUP stops sim run within
// seconds, whether it is reading, checking or running the lab, with
// "interrupted" and status 130; a full run of either lab takes far longer.
func TestRunSignals(t *testing.T) {
	sim, labs := simBinary(t), bigLabs(t)
	for _, c := range []struct {
		lab   string
		sig   syscall.Signal
		after time.Duration
	}{
		{"variants", syscall.SIGINT, 300 * time.Millisecond},
		{"variants", syscall.SIGTERM, 2 * time.Second},
		{"blocks", syscall.SIGINT, 300 * time.Millisecond},
		{"blocks", syscall.SIGINT, 2 * time.Second},
		{"blocks", syscall.SIGHUP, time.Second},
		// The probe's link: 10^9 thread slots (workers and threads each
		// within their limits) once took gigabytes and ignored the signal.
		{"huge", syscall.SIGINT, time.Second},
	} {
		t.Run(fmt.Sprintf("%s %v after %v", c.lab, c.sig, c.after), func(t *testing.T) {
			var errb bytes.Buffer
			args := []string{"run", labs[c.lab]}
			if c.lab == "huge" {
				args = []string{"run", "--block", "race", "--set", "workers=10000", "--set", "threads=100000", "--set", "requests=10000000", "../../labs/idle-timeouts.md"}
			}
			cmd := exec.Command(sim, args...)
			cmd.Stdout, cmd.Stderr = io.Discard, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(c.after)
			cmd.Process.Signal(c.sig)
			code := exitOf(t, cmd, 5*time.Second)
			if code != 130 || !strings.Contains(errb.String(), "sim run: interrupted") {
				t.Errorf("exit %d, stderr %q; want 130 and interrupted", code, errb.String())
			}
		})
	}
}

// stuckHelper stands for a command that does not stop when asked: it
// waits for the first signal, says so, and then never returns.
func stuckHelper() {
	ctx, _ := Signals(context.Background())
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Println("cancelled")
	select {}
}

// TestSecondSignal: a second Ctrl-C ends the process even when the
// command ignores the first.
func TestSecondSignal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals are Unix")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CONNLAB_TEST_STUCK=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		expect := func(want string) {
			if !lines.Scan() || lines.Text() != want {
				cmd.Process.Kill()
				t.Fatalf("helper said %q, want %q", lines.Text(), want)
			}
		}
		expect("ready")
		cmd.Process.Signal(sig)
		expect("cancelled")
		cmd.Process.Signal(sig)
		if code := exitOf(t, cmd, 5*time.Second); code != 128+int(sig) {
			t.Errorf("%v twice: exit %d, want %d", sig, code, 128+int(sig))
		}
	}
}

// startUpstream starts sim upstream with its own temp dir and reads its
// output up to "serving until Ctrl-C"; it returns the CA file's path.
func startUpstream(t *testing.T, tmp string) (cmd *exec.Cmd, out io.ReadCloser, ca string, errb *bytes.Buffer) {
	t.Helper()
	cmd = exec.Command(simBinary(t), "upstream", "--rtt", "1ms")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	errb = &bytes.Buffer{}
	cmd.Stderr = errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(out)
	for {
		l, err := lines.ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("upstream ended before serving: %v; stderr %s", err, errb)
		}
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "CA" {
			ca = f[1]
		}
		if strings.HasPrefix(l, "serving until Ctrl-C") {
			break
		}
	}
	if ca == "" || !strings.HasPrefix(ca, tmp) {
		t.Fatalf("CA file %q, want one in %s", ca, tmp)
	}
	if _, err := os.Stat(ca); err != nil {
		t.Fatal(err)
	}
	return cmd, out, ca, errb
}

// leftIn lists what a run left in dir.
func leftIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestUpstreamHangup: SIGHUP (a closed terminal) stops sim upstream as
// Ctrl-C does, and its CA folder is removed.
func TestUpstreamHangup(t *testing.T) {
	tmp := t.TempDir()
	cmd, out, _, errb := startUpstream(t, tmp)
	go io.Copy(io.Discard, out)
	cmd.Process.Signal(syscall.SIGHUP)
	if code := exitOf(t, cmd, 10*time.Second); code != 0 {
		t.Errorf("exit %d: %s", code, errb)
	}
	if left := leftIn(t, tmp); len(left) > 0 {
		t.Errorf("left in the temp dir: %v", left)
	}
}
