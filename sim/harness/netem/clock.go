package netem

import (
	"context"
	"time"
)

// coarseMargin is how early a long wait hands over from Go's timers, which
// can wake up a millisecond late, to the precise wait.
const coarseMargin = 2500 * time.Microsecond

// SleepUntil blocks until t. Go's timers (time.Sleep, time.After) can wake
// up to a millisecond late on Linux (the netpoller waits in whole
// milliseconds), which is as large as the effects the labs measure, so the
// last stretch is a timerfd (see preciseWait).
func SleepUntil(t time.Time) {
	if d := time.Until(t); d > coarseMargin {
		time.Sleep(d - coarseMargin)
	}
	preciseWait(t)
}

// SleepCtx is SleepUntil that returns early with ctx's error.
func SleepCtx(ctx context.Context, t time.Time) error {
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
