package kernel

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// TableBuckets is the size of the TCP socket table a lab process's network
// namespace gets of its own: ample for the few thousand sockets of a run
// (port exhaustion's tens of thousands make chains of a few).
const TableBuckets = 8192

// The environment that carries the request for a table of its own across
// the lab process's first exec, and the host's limits across the second.
const (
	ownTableEnv    = "CONNLAB_OWN_TCP_TABLE"
	tableLimitsEnv = "CONNLAB_TCP_TABLE_LIMITS"
	ehashEntries   = "/proc/sys/net/ipv4/tcp_ehash_entries"
	childEhash     = "/proc/sys/net/ipv4/tcp_child_ehash_entries"
)

// tableLimits are the sysctls that follow the size of a namespace's TCP
// table, which a table of its own is given the host's values of.
var tableLimits = []string{"net/ipv4/tcp_max_tw_buckets", "net/ipv4/tcp_max_syn_backlog"}

// OwnTableEnv is the variable that asks a lab process started in a private
// network namespace to re-execute itself in one with its own TCP socket
// table (ExecOwnTable).
func OwnTableEnv() string { return ownTableEnv + "=1" }

// ExecOwnTable re-executes this process in a new network namespace with a
// TCP socket table of its own (TableBuckets), when its environment asks
// (OwnTableEnv); then it does not return. It returns nil when not asked,
// and an error when the kernel refused before anything changed (a kernel
// before 6.1 has no tcp_child_ehash_entries): the process goes on as it
// was.
//
// Why: a namespace shares the host's table unless it is given one when it
// is made, and reading /proc/net/tcp walks every bucket of the table it
// uses (262,144 on a 24 GiB machine): about 3.5 ms of kernel time for tcp
// and as much for tcp6, whatever few sockets the namespace has. The run's
// socket sampler reads both at the run's time 0 and every 20 ms or more,
// so on two CPUs it took one from the run's first burst.
// tcp_child_ehash_entries applies to namespaces made later by the one it
// is set in: the lab process sets it in the namespace its parent made, then
// moves one thread into a new namespace and executes itself from that
// thread.
func ExecOwnTable() error {
	if os.Getenv(ownTableEnv) == "" {
		return nil
	}
	os.Unsetenv(ownTableEnv)
	// What the host's table gives a namespace: the limits that follow the
	// table's size, restored in the new one (SetUpOwnTable).
	var limits []string
	for _, name := range tableLimits {
		b, err := os.ReadFile("/proc/sys/" + name)
		if err != nil {
			return err
		}
		limits = append(limits, strings.TrimSpace(string(b)))
	}
	if err := os.WriteFile(childEhash, []byte(strconv.Itoa(TableBuckets)), 0); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	env := append(os.Environ(), tableLimitsEnv+"="+strings.Join(limits, " "))
	runtime.LockOSThread() // for good: the thread moves to the new namespace
	if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("unshare: %w", err)
	}
	err = syscall.Exec(exe, os.Args, env)
	// One thread is in the new namespace, the others are not: this process
	// cannot go on.
	fmt.Fprintf(os.Stderr, "connlab harness: executing %s in a network namespace with its own TCP table: %v\n", exe, err)
	os.Exit(1)
	return nil
}

// SetUpOwnTable, in a lab process that ExecOwnTable re-executed, gives its
// namespace the limits the host's table would have given it
// (tcp_max_tw_buckets and tcp_max_syn_backlog follow a table's size) and
// returns the table's size; 0 when the process uses the host's table.
func SetUpOwnTable() (buckets int, err error) {
	limits, ok := os.LookupEnv(tableLimitsEnv)
	if !ok {
		return 0, nil
	}
	os.Unsetenv(tableLimitsEnv)
	b, err := os.ReadFile(ehashEntries)
	if err != nil {
		return 0, err
	}
	// A negative size means the namespace shares the host's table.
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 0, errors.New("the kernel gave the namespace no table of its own")
	}
	f := strings.Fields(limits)
	if len(f) != len(tableLimits) {
		return 0, fmt.Errorf("bad %s %q", tableLimitsEnv, limits)
	}
	for i, name := range tableLimits {
		if err := WriteSysctl(name, f[i]); err != nil {
			return 0, err
		}
	}
	return n, nil
}
