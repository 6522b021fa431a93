//go:build !linux

package harness

import (
	"errors"
	"os/exec"
	"syscall"
)

func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func labAttr(isolated bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

var errNotLinux = errors.New("harness: private network namespaces need Linux")

func loopbackUp() error { return errNotLinux }

func writeSysctl(name, value string) error { return errNotLinux }

const namespacesSupported = false

func raisePriority() error { return errNotLinux }

func lowerPriority() error { return errNotLinux }

func startLowPriority(cmd *exec.Cmd) error { return cmd.Start() }
