//go:build !linux

package kernel

// ReadShare is Linux's only.
func ReadShare(extra ...int) (Share, bool) { return Share{}, false }
