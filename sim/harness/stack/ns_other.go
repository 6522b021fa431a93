//go:build !linux

package stack

import (
	"context"
	"errors"
)

var errNotLinux = errors.New("stack: the real stack runs on Linux only (network namespaces, sock_diag, /proc)")

// ChildMain does nothing off Linux.
func ChildMain() {}

// CanIsolate says that the real stack needs Linux.
func CanIsolate() error { return errNotLinux }

// RunIsolated needs Linux.
func RunIsolated(ctx context.Context, spec Spec) (*Result, error) { return nil, errNotLinux }

// RunIsolatedExec needs Linux.
func RunIsolatedExec(ctx context.Context, spec Spec, exe string, args ...string) (*Result, error) {
	return nil, errNotLinux
}
