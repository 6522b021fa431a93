package netem

import (
	"context"
	"sync/atomic"
	"time"
)

// coarseMargin is how early a long wait hands over from Go's timers, which
// can wake up a millisecond late, to the precise wait; more by the timer
// slack TightenTimerSlack could not remove, by which Go's timers may wake
// up later still.
const coarseMargin = 2500 * time.Microsecond

var margin atomic.Int64 // nanoseconds; 0 until set: coarseMargin

func handOver() time.Duration {
	if m := margin.Load(); m > 0 {
		return time.Duration(m)
	}
	return coarseMargin
}

// setCoarseMargin makes long waits hand over slack earlier than usual.
func setCoarseMargin(slack time.Duration) { margin.Store(int64(coarseMargin + max(slack, 0))) }

// SleepUntil blocks until t. Go's timers (time.Sleep, time.After) can wake
// up to a millisecond late on Linux (the netpoller waits in whole
// milliseconds), which is as large as the effects the labs measure, so the
// last stretch is a timerfd (see preciseWait).
func SleepUntil(t time.Time) {
	if d, m := time.Until(t), handOver(); d > m {
		time.Sleep(d - m)
	}
	preciseWait(t)
}

// SleepCtx is SleepUntil that returns early with ctx's error.
func SleepCtx(ctx context.Context, t time.Time) error {
	if d, m := time.Until(t), handOver(); d > m {
		tm := time.NewTimer(d - m)
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
