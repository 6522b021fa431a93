package harness

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// childAttr: a child dies with the process that started it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// labAttr starts a lab process in its own process group and, when
// isolated, in a private network namespace and PID namespace (plus a user
// namespace when not root, mapping the user to root inside): the lab
// process is PID 1 there, so when it ends the kernel kills every process it
// started (workers, nginx, redis-server) and drops the namespace with its
// sockets, TIME_WAIT included.
func labAttr(isolated bool) *syscall.SysProcAttr {
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

// loopbackUp brings up lo in a new network namespace (it starts down).
func loopbackUp() error {
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

// writeSysctl sets a network sysctl of this process's network namespace
// (only ever called inside a private one).
func writeSysctl(name, value string) error {
	if err := os.WriteFile("/proc/sys/"+name, []byte(value), 0); err != nil {
		return fmt.Errorf("harness: sysctl %s = %s in the private namespace: %w", name, value, err)
	}
	return nil
}

// namespacesSupported: real runs can ask for private namespaces here.
const namespacesSupported = true

// raisePriority gives every thread of this process nice -20 (threads made
// later inherit it, as do child processes): a real run measures
// sub-millisecond latencies, and on a busy machine a thread that wakes at
// nice 0 waits its turn behind everything else. It needs root or
// CAP_SYS_NICE; the error says when it was refused.
func raisePriority() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	var first error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		err = syscall.Setpriority(syscall.PRIO_PROCESS, tid, -20)
		if err != nil && err != syscall.ESRCH && first == nil { // ESRCH: the thread has ended
			first = err
		}
	}
	return first
}
