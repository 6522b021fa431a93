package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// ChildAttr: a child dies with the process that started it.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// LabAttr starts a lab process in its own process group and, when
// isolated, in a private network namespace and PID namespace (plus a user
// namespace when not root, mapping the user to root inside): the lab
// process is PID 1 there, so when it ends the kernel kills every process it
// started (workers, nginx, redis-server) and drops the namespace with its
// sockets, TIME_WAIT included.
func LabAttr(isolated bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if !isolated {
		return a
	}
	a.Cloneflags = syscall.CLONE_NEWNET | syscall.CLONE_NEWPID
	if os.Geteuid() != 0 {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
	return a
}

// LoopbackUp brings up lo in a new network namespace (it starts down).
func LoopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr [40]byte // struct ifreq: name[16], then flags (short)
	copy(ifr[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return fmt.Errorf("harness: reading lo's flags: %v", e)
	}
	flags := *(*uint16)(unsafe.Pointer(&ifr[16]))
	*(*uint16)(unsafe.Pointer(&ifr[16])) = flags | syscall.IFF_UP | syscall.IFF_RUNNING
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return fmt.Errorf("harness: bringing lo up: %v", e)
	}
	return nil
}

// WriteSysctl sets a network sysctl of this process's network namespace
// (only ever called inside a private one).
func WriteSysctl(name, value string) error {
	if err := os.WriteFile("/proc/sys/"+name, []byte(value), 0); err != nil {
		return fmt.Errorf("harness: sysctl %s = %s in the private namespace: %w", name, value, err)
	}
	return nil
}

// NamespacesSupported: real runs can ask for private namespaces here.
const NamespacesSupported = true

// RaisePriority gives every thread of this process nice -20 (threads made
// later inherit it, as do child processes): a real run measures
// sub-millisecond latencies, and on a busy machine a thread that wakes at
// nice 0 waits its turn behind everything else. It needs root or
// CAP_SYS_NICE; the error says when it was refused.
func RaisePriority() error { return setNice(-20) }

// StartLowPriority starts cmd from a thread at nice 19, which the child
// inherits from exec on: its start-up (loading, the Go runtime's and
// packages' initialisation) runs behind the requests in flight instead of
// beside them. The thread goes back to nice -20 (the caller has raised its
// priority) and stays: with Pdeathsig set, a child dies with the thread
// that started it, so that thread must not end.
func StartLowPriority(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	syscall.Setpriority(syscall.PRIO_PROCESS, 0, 19) // 0: this thread
	err := cmd.Start()
	syscall.Setpriority(syscall.PRIO_PROCESS, 0, -20)
	return err
}

// LowerPriority gives every thread of this process nice 19: a worker
// process started during a run (pm.max_requests, CLI mode) starts up and
// warms up behind the requests in flight, then raises its priority.
func LowerPriority() error { return setNice(19) }

// setNice sets every thread's nice value. /proc/self/task lists thread IDs
// as the /proc mount's PID namespace sees them (the host's, when the lab
// process runs in a PID namespace of its own without mounting /proc), and
// setpriority takes them as the caller's namespace does: each thread's
// NSpid line gives the ID in the innermost namespace. Without that, every
// call failed with ESRCH (taken for a thread that had ended) and the
// processes kept nice 0 while the run said -20.
func setNice(n int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	var first error
	set := 0
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if status, err := os.ReadFile("/proc/self/task/" + t.Name() + "/status"); err == nil {
			tid = innermostPID(string(status), tid)
		}
		switch err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); {
		case err == nil:
			set++
		case err == syscall.ESRCH: // the thread has ended
		case first == nil:
			first = err
		}
	}
	if first == nil && set == 0 {
		first = errors.New("no thread of this process could be found by its ID")
	}
	return first
}

// innermostPID reads the last ID of the NSpid line of a /proc status file:
// the ID in the process's own PID namespace (def without one).
func innermostPID(status string, def int) int {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "NSpid:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return def
		}
		if v, err := strconv.Atoi(f[len(f)-1]); err == nil {
			return v
		}
		return def
	}
	return def
}
