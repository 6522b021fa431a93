package kernel

import (
	"fmt"
	"os"
	"time"
)

// Share is a reading of the CPU time of a run's own processes and of every
// other program on the machine, for telling afterwards whether other
// programs took CPU time the run may have needed. Two readings give the
// window between them (Sub).
//
// Other programs' time is the sum of their processes' own (user and
// system, and what the children they waited for used), as the kernel keeps
// it for each process; the kernel's own threads are left out (its softirq
// threads carry a run's loopback packets). The machine-wide counters of
// /proc/stat are not used: they sample the CPUs at each tick, and a run's
// short bursts of work between sleeps fall between ticks, so that a run's
// own processes used more than the machine counted at all.
type Share struct {
	At time.Time
	// Run: the CPU time of this process, of every process below it (live
	// ones, and those they waited for), and of the extra processes the
	// reading named (the run's parent, which reads its events); Procs how
	// many processes it sums.
	Run   time.Duration
	Procs int
	// Other programs' processes by PID and start time, and the machine's
	// steal (the time the hypervisor gave the CPUs to others).
	others map[procKey]time.Duration
	Steal  time.Duration
}

// procKey tells a process from a later one that has its PID.
type procKey struct {
	pid   int
	start int64
}

// ShareUse is what a window between two readings held: the run's CPU
// time, other programs' (Others: of processes alive at the window's end;
// OtherProcs of them used any), and steal.
type ShareUse struct {
	Wall, Run, Others, Steal time.Duration
	Procs, OtherProcs        int
}

// Sub is the window from earlier to s. A process that started within it
// counts whole; one that ended within it, unless its parent waited for it,
// is not counted.
func (s Share) Sub(earlier Share) ShareUse {
	u := ShareUse{Wall: s.At.Sub(earlier.At), Run: s.Run - earlier.Run, Steal: s.Steal - earlier.Steal, Procs: max(s.Procs, earlier.Procs)}
	for k, v := range s.others {
		if d := v - earlier.others[k]; d > 0 {
			u.Others += d
			u.OtherProcs++
		}
	}
	return u
}

// OthersCPUs is other programs' time, steal included, as an average number
// of CPUs over the window (1: one CPU busy with them all the time).
func (u ShareUse) OthersCPUs() float64 {
	if u.Wall <= 0 {
		return 0
	}
	return float64(u.Others+u.Steal) / float64(u.Wall)
}

// BusyOthersCPUs is the share of the machine other programs may take
// during a run before the run counts as disturbed: an average of a
// quarter of a CPU. Two busy loops beside a run take nearly two; on a
// quiet machine other programs take a few hundredths.
const BusyOthersCPUs = 0.25

// ShareTick is the resolution of a process's CPU time in /proc: a window's
// sum may be off by a tick for every process that ran in it.
const ShareTick = 10 * time.Millisecond

// Busy reports whether other programs took BusyOthersCPUs or more of the
// machine in a window of wall time in which they used others of CPU, and
// more than the readings' resolution for procs processes that ran could
// make up.
func Busy(others, wall time.Duration, procs int) bool {
	return wall > 0 && float64(others) >= BusyOthersCPUs*float64(wall) && others >= time.Duration(procs+2)*ShareTick
}

// Busy reports whether other programs kept the machine busy in u's window
// (see the function Busy).
func (u ShareUse) Busy() bool { return Busy(u.Others+u.Steal, u.Wall, u.OtherProcs) }

// String describes the window's share for a line of output.
func (u ShareUse) String() string {
	return fmt.Sprintf("other programs used %.2f CPUs on average (%v of CPU in %v, %d processes; the run's %d processes %v)",
		u.OthersCPUs(), (u.Others + u.Steal).Round(time.Millisecond), u.Wall.Round(time.Millisecond), u.OtherProcs, u.Procs, u.Run.Round(time.Millisecond))
}

// BusyDuring runs f and says how other programs kept the machine busy
// meanwhile (this process and its children are the run), or "" when they
// did not or it cannot be read: for tests that measure time, whose bound
// a quiet machine must meet. With CONNLAB_STRICT_TIMING=1 in the
// environment it always says "", so that such tests assert their bounds
// however busy the machine is.
func BusyDuring(f func()) string {
	before, ok := ReadShare()
	f()
	after, ok2 := ReadShare()
	if u := after.Sub(before); ok && ok2 && u.Busy() && os.Getenv("CONNLAB_STRICT_TIMING") != "1" {
		return u.String()
	}
	return ""
}
