package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Signals returns the context a `sim` command runs under. The first SIGINT,
// SIGTERM or SIGHUP cancels it: the command stops its work, removes what it
// started and exits with "interrupted". A second one ends the process at
// once (status 128 + the signal's number), however busy it is. SIGHUP is
// left alone when the process started with it ignored (nohup).
//
// SIGPIPE is caught too: a write to a closed standard output then fails
// with EPIPE, which Run reports and which stops the command the way Ctrl-C
// does, instead of killing the process before it has cleaned up. stop
// releases the signals.
func Signals(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	stopping := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		stopping = append(stopping, syscall.SIGHUP)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopping...)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		first := true
		for {
			select {
			case s := <-sigs:
				if first {
					first = false
					cancel()
					continue
				}
				code := 130
				if n, ok := s.(syscall.Signal); ok {
					code = 128 + int(n)
				}
				os.Exit(code)
			case <-pipe: // the write that raised it fails with EPIPE
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		signal.Stop(pipe)
		close(done)
		cancel()
	}
}
