// Package roles holds the processes of a real run and starts them: the lab
// process that runs one variant in private namespaces with its servers, the
// worker processes it hands web requests to, the load generator and the
// proxy setup's clients. Each is the sim binary re-executed with a hidden
// subcommand (Command), which any binary linking the harness dispatches
// through Main; the lines they exchange are package wire's.
//
// The process tree of a real run, with the messages on each arrow:
//
//	sim (harness.RunPlan, RunLab)
//	 │  stdin: {"config": LabJob}        stdout: {"ev"}…, {"progress"}…, {"result"} or {"error"}
//	 ├─ sim __harness-role lab            private network + PID namespace, nice -20; executes
//	                                      itself once more into a network namespace with a
//	                                      TCP table of its own (kernel.ExecOwnTable)
//	     ├─ servers in the lab process: upstream (HTTPS/HTTP), DNS, Redis front, Go proxy
//	     ├─ redis-server, nginx           their own processes, files in LabJob.Dir
//	     └─ sim __harness-role worker × workers (+ spares)
//	          stdin: {"config": WorkerConfig}, {"job"}…    stdout: {"ready"}, {"ev"}…, {"done"}…
//
// The php setups' workers are node sim/phpwasm/node/driver.mjs instead (PHP
// 8.5 in WebAssembly, or in front of a php -S): the same lines, plus an
// info line with ready (what PHP runs on, and what its calls cost), a
// measure job answered by another info line, and check lines (php.go).
//
// A block with tiers (setup = "stack") runs another tree, package stack's:
//
//	sim (harness.RunPlan)
//	 │  stdin: stack.Spec                  stdout: stack.Result
//	 └─ sim __harness-role stack           network + PID + mount namespaces, nice -20; the Go load
//	     ├─ redis-server
//	     ├─ gunicorn (gthread) or python3 app.py (Flask's server)
//	     └─ nginx, its workers
package roles

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/stack"
)

// Command is the hidden subcommand that makes a process one of the
// harness's: "<exe> __harness-role lab" or "... worker".
const Command = "__harness-role"

// The roles a process can play.
const (
	RoleLab    = "lab"
	RoleWorker = "worker"
	// RoleStack runs a real stack (package stack) in the namespaces its
	// parent made, reading its Spec on stdin.
	RoleStack = "stack"
)

// Main plays the role args ask for, when args (a program's arguments
// without its name) start with Command: it returns the exit status and
// true. For any other arguments it does nothing and returns false. The sim
// command calls it before its own commands, and so does the TestMain of a
// test binary whose tests start real runs, so that any binary linking the
// harness can play every part.
func Main(args []string) (code int, ok bool) {
	if len(args) == 0 || args[0] != Command {
		return 0, false
	}
	// First, so that the threads and child processes the role starts
	// inherit it.
	_, slackErr = netem.TightenTimerSlack()
	if len(args) == 2 && args[1] == RoleStack {
		stack.ChildMain() // exits when started by stack.RunIsolatedExec
		fmt.Fprintf(os.Stderr, "connlab harness: %s %s runs only when started by the harness\n", Command, RoleStack)
		return 2, true
	}
	var run func(stdin io.Reader, stdout io.Writer) error
	if len(args) == 2 {
		run = map[string]func(io.Reader, io.Writer) error{RoleLab: labMain, RoleWorker: workerMain}[args[1]]
	}
	if run == nil {
		fmt.Fprintf(os.Stderr, "connlab harness: want %s %s, %s or %s, got %q\n", Command, RoleLab, RoleWorker, RoleStack, args[1:])
		return 2, true
	}
	role := args[1]
	quietRuntime()
	err := run(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "connlab harness %s (pid %d): %v\n", role, os.Getpid(), err)
		return 1, true
	}
	return 0, true
}

// slackErr is why this process's timer slack could not be lowered to 1 ns
// on every thread (netem.TightenTimerSlack), nil when it was.
var slackErr error

// gcLimit is the heap a lab or worker process may grow to before its
// garbage collector runs: far more than a run allocates.
const gcLimit = 1 << 30

// quietRuntime turns the garbage collector of a lab or worker process off
// up to gcLimit. Go's collector is the harness's, not the clients' the
// labs describe (curl, PHP, redis-py have none), and each of its
// stop-the-world pauses and its background marking would land on calls at
// random. settle collects once where nothing is measured.
func quietRuntime() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(gcLimit)
}

// settle prepares a process between start-up (certificates, warm-up) and
// a run, where nothing is measured: it touches warm bytes of heap memory
// for the run's first allocations (see warmHeap), then collects, so the run
// starts with a clean heap; and it reads the process's usage once, which
// opens the files a reading at the run's time 0 reads (kernel.ReadUsage).
func settle(warm int) {
	warmHeap(warm)
	runtime.GC()
	kernel.ReadUsage()
}

// labWarmHeap is the heap a lab process warms before a run: several times
// what its clients, proxy and servers allocate in the first tens of
// milliseconds of a burst of new connections.
const labWarmHeap = 16 << 20

// warmHeap touches n bytes of heap memory and lets them go. With the
// collector off (quietRuntime) every allocation of a run takes memory the
// process has not used before, and the kernel supplies each page at its
// first touch: a page fault, whose cost a virtual machine adds to when the
// host has not backed that memory yet. A burst of new connections at a
// run's start takes hundreds of them at once, on the CPUs the burst needs.
// Touched here and freed by settle's collection, the same pages serve the
// run's first allocations.
func warmHeap(n int) {
	const chunk = 64 << 10
	keep := make([][]byte, 0, n/chunk)
	for range n / chunk {
		b := make([]byte, chunk)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep)
}
