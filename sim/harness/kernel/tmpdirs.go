package kernel

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The temporary folders of a real run are named after their kind and the
// process that owns them, connlab-KIND-PID-RANDOM, PID as /proc names it
// (the host's, from inside a PID namespace too). A process killed with
// SIGKILL never runs its deferred removal, so its folder stays behind:
// SweepTemp, called as every real run starts, removes the folders whose
// owner is gone.
//
//	lab    a lab process's files (nginx's, redis-server's); made by the
//	       process that starts the lab process (sim validate, sim serve)
//	stack  the real three-tier stack's; made by the process that starts it
//	php    php -S's (setup php-native), by sim/phpwasm/node/driver.mjs,
//	       which names it the same way
var tempKinds = []string{"lab", "stack", "php"}

// sweepAge: a folder younger than this is left alone whatever its name
// says, so that a sweep never races the process making it.
const sweepAge = time.Minute

// MkdirTemp makes a folder of kind in the system's temporary folder, named
// after this process (TempPrefix).
func MkdirTemp(kind string) (string, error) {
	return os.MkdirTemp("", TempPrefix(kind))
}

// TempPrefix is the start of the name of this process's folders of kind:
// connlab-KIND-PID-.
func TempPrefix(kind string) string {
	return "connlab-" + kind + "-" + strconv.Itoa(procPID()) + "-"
}

// procPID is this process's PID as /proc names it: in a PID namespace
// that mounted no /proc of its own, the host's, which os.Getpid does not
// give. Without /proc, os.Getpid.
var procPID = sync.OnceValue(func() int {
	if s, err := os.Readlink("/proc/self"); err == nil {
		if pid, err := strconv.Atoi(s); err == nil && pid > 0 {
			return pid
		}
	}
	return os.Getpid()
})

// tempOwner reads the owner's PID from a folder's name; ok is false for a
// name that is not one of ours.
func tempOwner(name string) (pid int, ok bool) {
	rest, found := strings.CutPrefix(name, "connlab-")
	if !found {
		return 0, false
	}
	kind, rest, _ := strings.Cut(rest, "-")
	known := false
	for _, k := range tempKinds {
		known = known || k == kind
	}
	num, random, found := strings.Cut(rest, "-")
	if !known || !found || random == "" || num == "" || len(num) > 10 || num[0] == '0' {
		return 0, false
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return 0, false
		}
	}
	for _, r := range random {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return 0, false
		}
	}
	pid, err := strconv.Atoi(num)
	return pid, err == nil && pid > 0
}

// SweepTemp removes, from the system's temporary folder, the folders of
// real runs whose owner process is gone (see TempPrefix), and returns their
// paths. It never fails: what it cannot tell or remove, it leaves.
func SweepTemp() []string {
	return sweepTemp(os.TempDir(), time.Now())
}

// sweepTemp removes the folders in dir that are ours (named
// connlab-KIND-PID-RANDOM, a directory and not a symbolic link, of this
// user), older than sweepAge, whose PID no process has. Without /proc it
// cannot tell a live owner from a dead one, and removes nothing.
func sweepTemp(dir string, now time.Time) []string {
	if _, err := os.Lstat("/proc/self/stat"); err != nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() { // a symbolic link is not: never followed
			continue
		}
		pid, ok := tempOwner(e.Name())
		if !ok || pid == procPID() {
			continue
		}
		if _, err := os.Lstat("/proc/" + strconv.Itoa(pid)); !os.IsNotExist(err) {
			continue // alive, or unknown
		}
		p := dir + string(os.PathSeparator) + e.Name()
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() || !ownedByMe(fi) || now.Sub(fi.ModTime()) < sweepAge {
			continue
		}
		if os.RemoveAll(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}
