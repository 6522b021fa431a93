package roles

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/wire"
)

// namespaces remembers whether this kernel lets us make namespaces.
var namespaces struct {
	mu      sync.Mutex
	checked bool
	ok      bool
	why     string
}

// NamespacesRefused reports whether a lab process was refused private
// namespaces here before, and why.
func NamespacesRefused() (why string, refused bool) {
	namespaces.mu.Lock()
	defer namespaces.mu.Unlock()
	return namespaces.why, namespaces.checked && !namespaces.ok
}

// RunLab runs job in a lab process started from exe (the sim binary, or a
// test binary that dispatches Main) and waits for its report. Every event
// goes to sink and every progress line to progress (either may be nil).
// isolated says whether the lab process ran in private namespaces.
//
// The lab process gets a temporary folder (job.Dir) for the files of the
// servers it starts; it is removed when the lab process has ended, however
// it ended: killed when ctx is cancelled, failed, or done.
func RunLab(ctx context.Context, exe string, job wire.LabJob, sink func(*sim.Event), progress func(string)) (rep *wire.Report, isolated bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	// Folders of earlier runs whose process was killed (SIGKILL skips the
	// deferred removal) go first; this one is named after this process.
	kernel.SweepTemp()
	dir, err := kernel.MkdirTemp("lab")
	if err != nil {
		return nil, false, fmt.Errorf("harness: a folder for the lab process: %w", err)
	}
	defer removeDir(dir)
	os.Chmod(dir, 0o755) // nginx's workers, when they run as another user, look inside
	job.Dir = dir
	cmd, stdout, stderr, err := startLab(exe, &job)
	if err != nil {
		return nil, false, err
	}
	stop := context.AfterFunc(ctx, func() { killGroup(cmd) })
	defer stop()
	var childErr string
	lr := wire.NewReader(stdout)
	for {
		m, err := lr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				childErr = err.Error()
			}
			break
		}
		switch {
		case m.Ev != nil:
			if sink != nil {
				sink(m.Ev)
			}
		case m.Progress != "":
			if progress != nil {
				progress(m.Progress)
			}
		case m.Result != nil:
			rep = m.Result
		case m.Error != "":
			childErr = m.Error
		}
	}
	werr := cmd.Wait()
	killGroup(cmd) // anything left in the group (no PID namespace)
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	if rep == nil {
		msg := childErr
		if msg == "" {
			msg = fmt.Sprint(werr)
		}
		if tail := strings.TrimSpace(stderr.String()); tail != "" {
			msg += "\n" + tail
		}
		return nil, false, fmt.Errorf("harness: real run of %s/%s failed: %s", job.Block, job.Variant, msg)
	}
	return rep, job.Isolated, nil
}

// removeDir removes a lab process's folder. Without a PID namespace the
// lab's children may still be dying, and writing, when it ends: try again
// for a moment.
func removeDir(dir string) {
	for i := 0; ; i++ {
		err := os.RemoveAll(dir)
		if err == nil || i == 40 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startLab starts a lab process, in private namespaces if job.Isolated and
// the kernel agrees; if it refuses, job.Isolated is cleared and the process
// starts without them.
func startLab(exe string, job *wire.LabJob) (*exec.Cmd, io.Reader, *tailBuffer, error) {
	for {
		raw, err := json.Marshal(job)
		if err != nil {
			return nil, nil, nil, err
		}
		cmd := exec.Command(exe, Command, RoleLab)
		cmd.SysProcAttr = kernel.LabAttr(job.Isolated)
		if e := kernel.OwnTableEnv(); job.Isolated && e != "" {
			cmd.Env = append(os.Environ(), e)
		}
		stderr := &tailBuffer{max: 16 << 10}
		cmd.Stderr = stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, nil, nil, err
		}
		err = cmd.Start()
		if err != nil && job.Isolated && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES)) {
			namespaces.mu.Lock()
			namespaces.checked, namespaces.ok, namespaces.why = true, false, err.Error()
			namespaces.mu.Unlock()
			job.Isolated = false
			if job.KernelTWReuse != sim.Default().TWReuse || job.Scenario.PortRange != sim.Default().PortRange {
				return nil, nil, nil, fmt.Errorf("harness: %s/%s needs a private network namespace, which this system refuses (%v)", job.Block, job.Variant, err)
			}
			continue
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("harness: cannot start a lab process (%s): %w", exe, err)
		}
		if job.Isolated {
			namespaces.mu.Lock()
			namespaces.checked, namespaces.ok = true, true
			namespaces.mu.Unlock()
		}
		go func() {
			wire.NewWriter(stdin).Send(&wire.Msg{Config: raw})
			stdin.Close()
		}()
		return cmd, stdout, stderr, nil
	}
}

// killGroup kills a lab process and its process group. With a PID
// namespace, killing the lab process alone takes every descendant with it.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Process.Kill()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
