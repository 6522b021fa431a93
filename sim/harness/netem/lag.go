package netem

import (
	"sync/atomic"
	"time"
)

// Lag is how far this process fell behind its own emulated network: bytes
// the kernel had received were read after they were already due (their
// arrival plus the path's inbound delay), or bytes it held back until a
// due time (a connect's round trip, a server's work, an outbound delay)
// were written after it, because the goroutine that reads or writes them
// did not run in time (the process's other goroutines, or other processes,
// held the CPUs). Whatever a late read or write adds is measured as part
// of the phase the bytes end, and the model has no such cost; the
// harness's own overhead (Tare) covers the usual lateness, Lag the worst
// of a run.
type Lag struct {
	Max  time.Duration // the latest read past its due time
	Late int           // reads more than LateRead past their due time
	// WriteMax and LateWrites: the same for writes.
	WriteMax   time.Duration
	LateWrites int
}

// Add returns the lag of l and o together.
func (l Lag) Add(o Lag) Lag {
	return Lag{Max: max(l.Max, o.Max), Late: l.Late + o.Late, WriteMax: max(l.WriteMax, o.WriteMax), LateWrites: l.LateWrites + o.LateWrites}
}

// LateRead is how late a read (or write) must be to count in Lag.Late (or
// Lag.LateWrites).
const LateRead = time.Millisecond

// overdue keeps the latest overdue time and the count over LateRead.
type overdue struct {
	max  atomic.Int64
	late atomic.Int64
}

var readLag, writeLag overdue

func (l *overdue) note(d time.Duration) {
	if d <= 0 {
		return
	}
	for {
		old := l.max.Load()
		if int64(d) <= old || l.max.CompareAndSwap(old, int64(d)) {
			break
		}
	}
	if d > LateRead {
		l.late.Add(1)
	}
}

func (l *overdue) take() (time.Duration, int) {
	return time.Duration(l.max.Swap(0)), int(l.late.Swap(0))
}

// noteLag records a read overdue by d.
func noteLag(d time.Duration) { readLag.note(d) }

// noteWriteLag records a write overdue by d.
func noteWriteLag(d time.Duration) { writeLag.note(d) }

// TakeLag returns the lag recorded since the last call and starts anew.
func TakeLag() Lag {
	var l Lag
	l.Max, l.Late = readLag.take()
	l.WriteMax, l.LateWrites = writeLag.take()
	return l
}
