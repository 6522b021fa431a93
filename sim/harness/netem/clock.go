package harness

import (
	"context"
	"time"
)

// coarseMargin is how early a long wait hands over from Go's timers, which
// on a small VM wake up to a millisecond late, to the precise sleep.
const coarseMargin = 2500 * time.Microsecond

// SleepUntil blocks until t. Go's timers (time.Sleep, time.After) wake up to
// a millisecond late on Linux (the netpoller waits in whole milliseconds),
// which is as large as the effects the labs measure, so the last stretch is
// a timerfd, then a spin of at most spinWindow (see preciseWait). Typical
// error: under a microsecond; 1 in 100 waits ends 30–60 µs late.
func SleepUntil(t time.Time) {
	if d := time.Until(t); d > coarseMargin {
		time.Sleep(d - coarseMargin)
	}
	preciseWait(t)
}

// sleepCtx is SleepUntil that returns early with ctx's error.
func sleepCtx(ctx context.Context, t time.Time) error {
	if d := time.Until(t); d > coarseMargin {
		tm := time.NewTimer(d - coarseMargin)
		select {
		case <-ctx.Done():
			tm.Stop()
			return ctx.Err()
		case <-tm.C:
		}
	}
	preciseWait(t)
	return ctx.Err()
}
