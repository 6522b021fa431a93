package harness

import (
	"fmt"
	"os"
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
