package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/connlab/connlab/sim/harness/kernel"
)

// envChild marks the process RunIsolated starts in the namespaces.
const envChild = "CONNLAB_STACK_CHILD"

// ChildMain runs a Spec read from stdin and writes its Result to stdout,
// when this process was started by RunIsolated; otherwise it returns. Call
// it first thing in main (or TestMain) of a binary that uses RunIsolated.
func ChildMain() {
	if os.Getenv(envChild) != "1" {
		return
	}
	err := childRun(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "connlab stack run: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// RunIsolated runs spec in a child process with network, PID and mount
// namespaces of its own: its sockets, TIME_WAIT included, are the only
// ones counted, its sysctls are its own, and when it ends (or ctx is
// cancelled and it is killed) the kernel kills every process it started
// and drops the namespace. It needs root (CAP_SYS_ADMIN).
func RunIsolated(ctx context.Context, spec Spec) (*Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return RunIsolatedExec(ctx, spec, exe)
}

// RunIsolatedExec is RunIsolated with the program to re-execute and its
// arguments (a binary whose main calls ChildMain before anything else
// when CONNLAB_STACK_CHILD=1 is set, as sim's does through its hidden
// harness role).
func RunIsolatedExec(ctx context.Context, spec Spec, exe string, args ...string) (*Result, error) {
	if err := CanIsolate(); err != nil {
		return nil, err
	}
	// The directory is the parent's: a child killed on cancellation
	// cannot remove it. A directory the caller gives is the caller's.
	if spec.Config.Dir == "" {
		kernel.SweepTemp() // folders of runs whose process was killed
		dir, err := kernel.MkdirTemp("stack")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		spec.Config.Dir = dir
	}
	in, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	// At nice -20, as the harness's real runs: on a shared machine the
	// stack's processes would otherwise wait behind everything else.
	cmd := exec.CommandContext(ctx, "nice", append([]string{"-n", "-20", exe}, args...)...)
	cmd.Env = append(os.Environ(), envChild+"=1")
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
		Pdeathsig:  syscall.SIGKILL,
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("stack: run %q: %v: %s", spec.Name, err, tail(errb.Bytes(), 3000))
	}
	var res Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("stack: run %q: reading its result: %v", spec.Name, err)
	}
	return &res, nil
}

// CanIsolate says why this process cannot run the stack in namespaces of
// its own, or nil: it needs root (nginx cannot switch to its worker user
// inside a user namespace).
func CanIsolate() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("stack: a real stack run needs root for its private network namespace (nginx cannot switch to its worker user inside a user namespace)")
	}
	return nil
}

func childRun(r io.Reader, w io.Writer) error {
	var spec Spec
	if err := json.NewDecoder(r).Decode(&spec); err != nil {
		return fmt.Errorf("reading the spec: %w", err)
	}
	// A /proc of this PID namespace, in a mount namespace that does not
	// pass it back to the host.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	// lo and the sysctls as a lab process sets them in its namespace.
	if err := kernel.LoopbackUp(); err != nil {
		return err
	}
	if spec.PortRange != "" {
		if err := kernel.WriteSysctl("net/ipv4/ip_local_port_range", spec.PortRange); err != nil {
			return err
		}
	}
	if spec.TWReuse >= 0 {
		if err := kernel.WriteSysctl("net/ipv4/tcp_tw_reuse", fmt.Sprint(spec.TWReuse)); err != nil {
			return err
		}
	}
	st, err := Start(spec.Config)
	if err != nil {
		return err
	}
	l := spec.Load
	l.Warmup, l.Calibrate, l.Duration, l.Slice = spec.Warmup, spec.Calibrate, spec.Duration, spec.Slice
	ctx, cancel := context.WithTimeout(context.Background(), spec.Warmup+spec.Calibrate+spec.Duration+2*time.Minute)
	defer cancel()
	res, err := Measure(ctx, st, l)
	if serr := st.Stop(); err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		return err
	}
	res.Name = spec.Name
	res.Sysctl = map[string]string{}
	for _, k := range []string{"ip_local_port_range", "tcp_tw_reuse"} {
		b, _ := os.ReadFile("/proc/sys/net/ipv4/" + k)
		res.Sysctl[k] = strings.Join(strings.Fields(string(b)), " ")
	}
	return json.NewEncoder(w).Encode(res)
}
