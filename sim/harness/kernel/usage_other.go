//go:build !linux

package kernel

func ReadUsage() (Usage, bool) { return Usage{}, false }
