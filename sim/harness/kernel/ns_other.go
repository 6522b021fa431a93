//go:build !linux

package kernel

import (
	"errors"
	"os/exec"
	"syscall"
)

func ChildAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

func LabAttr(isolated bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

var errNotLinux = errors.New("harness: private network namespaces need Linux")

func LoopbackUp() error { return errNotLinux }

func WriteSysctl(name, value string) error { return errNotLinux }

const NamespacesSupported = false

func RaisePriority() error { return errNotLinux }

func LowerPriority() error { return errNotLinux }

func StartLowPriority(cmd *exec.Cmd) error { return cmd.Start() }

func OwnTableEnv() string { return "" }

func ExecOwnTable() error { return nil }

func SetUpOwnTable() (int, error) { return 0, nil }
