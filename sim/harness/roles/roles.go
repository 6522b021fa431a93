package harness

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
)

// envRole marks a process the harness started by re-executing its own
// binary (os.Executable): "lab" for the process that runs one variant,
// "worker" for a PHP-like worker process. The role is dispatched in init,
// before main or a test's TestMain runs, so any binary that links the
// harness (the sim command, a test binary) can play every part without
// a hidden subcommand. Nothing else sets this variable.
const envRole = "CONNLAB_HARNESS_ROLE"

func init() {
	role := os.Getenv(envRole)
	if role == "" {
		return
	}
	quietRuntime()
	var err error
	switch role {
	case "lab":
		err = labMain(os.Stdin, os.Stdout)
	case "worker":
		err = workerMain(os.Stdin, os.Stdout)
	default:
		err = fmt.Errorf("unknown %s %q", envRole, role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "connlab harness %s (pid %d): %v\n", role, os.Getpid(), err)
		os.Exit(1)
	}
	os.Exit(0)
}

// gcLimit is the heap a lab or worker process may grow to before its
// garbage collector runs: far more than a run allocates (a 2000-request
// variant, a few hundred MB at most).
const gcLimit = 1 << 30

// quietRuntime turns the garbage collector of a lab or worker process off
// up to gcLimit. Go's collector is the harness's, not the clients' the
// labs describe (curl, PHP, redis-py have none), and on a small VM each of
// its stop-the-world pauses costs 0.1–1 ms and its background marking a
// quarter of the CPUs: a worker that makes a go-redis client per request
// collected 18 times in a 1.6 s run, 7 ms of pauses in all, landing on
// calls at random. settle collects once where nothing is measured.
func quietRuntime() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(gcLimit)
}

// settle runs a collection between start-up (certificates, warm-up) and a
// run, so the run starts with a clean heap.
func settle() { runtime.GC() }
