//go:build !linux

package realclients

import "os/exec"

// ownGroup: outside Linux the program is killed alone when ctx ends.
func ownGroup(cmd *exec.Cmd) {}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}
