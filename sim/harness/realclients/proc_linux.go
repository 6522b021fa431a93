package realclients

import (
	"os/exec"
	"syscall"
)

// ownGroup puts the program in a process group of its own, killed when
// ctx ends (cmd.Cancel) and when this process dies (Pdeathsig).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { killGroup(cmd); return nil }
}

// killGroup kills the program's process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
