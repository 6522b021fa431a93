package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// failingWriter accepts n bytes, then fails every write.
type failingWriter struct{ n int }

var errTestFull = errors.New("disk full (test)")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) <= w.n {
		w.n -= len(p)
		return len(p), nil
	}
	n := w.n
	w.n = 0
	return n, errTestFull
}

// printing are commands that print, whose output may fail.
var printing = [][]string{
	{"run", phpLab},
	{"run", "--json", phpLab},
	{"run", "--events", "-", "--block", "idle", phpPoolsLab},
	{"exercise", "--key", phpLab},
	{"exercise", "--key", "--json", phpLab},
	{"params"},
	{"params", "--json"},
	{"--help"},
	{"run", "--help"},
}

// TestOutputErrors: a failed write to standard output, early or late, is
// reported once, by name, with status 2, by every command that prints.
func TestOutputErrors(t *testing.T) {
	for _, args := range printing {
		for _, after := range []int{0, 100} {
			var errb bytes.Buffer
			code := Run(context.Background(), &Env{Stdin: strings.NewReader(""), Stdout: &failingWriter{n: after}, Stderr: &errb}, args)
			msg := errb.String()
			if code != 2 || !strings.Contains(msg, ": writing output: disk full (test)") || strings.Count(msg, "disk full") != 1 {
				t.Errorf("sim %s, failing after %d bytes: exit %d, stderr %q", strings.Join(args, " "), after, code, msg)
			}
		}
	}
	// The quiz stops at the first failed write instead of reading on.
	var errb bytes.Buffer
	code := Run(context.Background(), &Env{Stdin: strings.NewReader(strings.Repeat("?\n", 1000)), Stdout: &failingWriter{n: 200}, Stderr: &errb},
		[]string{"exercise", portLab})
	if code != 2 || !strings.Contains(errb.String(), "sim exercise: writing output: disk full (test)") {
		t.Errorf("quiz: exit %d, stderr %q", code, errb.String())
	}
}

// TestDevFull: every command that prints reports a failed write to
// standard output (here a full disk) with status 2.
func TestDevFull(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full")
	}
	defer full.Close()
	sim := simBinary(t)
	small := writeSmallLab(t)
	for _, args := range append(printing,
		[]string{"exercise", "--answers-from", "/dev/null", phpLab},
		[]string{"validate", "--tolerance", "1000%,1s", small},
		[]string{"validate", "--json", "--tolerance", "1000%,1s", small},
	) {
		var errb bytes.Buffer
		cmd := exec.Command(sim, args...)
		cmd.Stdout, cmd.Stderr = full, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		code := exitOf(t, cmd, 2*time.Minute)
		if code != 2 || !strings.Contains(errb.String(), "no space left on device") {
			t.Errorf("sim %s > /dev/full: exit %d, stderr %q", strings.Join(args, " "), code, errb.String())
		}
	}
}

// TestUpstreamClosedPipe: when the reader of sim upstream's output has gone
// (sim upstream | head -3), the write after Ctrl-C fails instead of killing
// the process, which removes its CA folder, says why and exits with 2.
func TestUpstreamClosedPipe(t *testing.T) {
	tmp := t.TempDir()
	cmd, out, _, errb := startUpstream(t, tmp)
	out.Close()
	cmd.Process.Signal(syscall.SIGINT)
	code := exitOf(t, cmd, 10*time.Second)
	if code != 2 || !strings.Contains(errb.String(), "sim upstream: writing output:") || !strings.Contains(errb.String(), "broken pipe") {
		t.Errorf("exit %d, stderr %q; want 2 and a broken pipe", code, errb)
	}
	if left := leftIn(t, tmp); len(left) > 0 {
		t.Errorf("left in the temp dir: %v", left)
	}
}
