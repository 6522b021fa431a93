package kernel

import (
	"fmt"
	"os"
	"time"
)

// Share is a reading of what the whole machine's CPUs were doing and what
// a run's own processes used, for telling afterwards whether other programs
// took CPU time the run may have needed. Two readings give the window
// between them (Sub).
type Share struct {
	At time.Time
	// Machine: the busy time of all CPUs as /proc/stat counts it, in
	// processes' user and system time (nice included) and in time the
	// hypervisor gave to others (steal). Interrupt time is left out: the
	// kernel charges a loopback connection's packets there, to no process.
	Machine time.Duration
	Steal   time.Duration
	// Run: the CPU time of this process, of every process below it (live
	// ones, and those they waited for), and of the extra processes the
	// reading named (the run's parent, which reads its events).
	Run time.Duration
	// Procs: how many processes Run sums; each reads in whole ticks
	// (10 ms), so a difference of Run may be off by that much for each.
	Procs int
}

// ShareUse is what a window between two readings held.
type ShareUse struct {
	Wall, Machine, Steal, Run time.Duration
	Procs                     int
}

// Sub is the window from earlier to s.
func (s Share) Sub(earlier Share) ShareUse {
	return ShareUse{Wall: s.At.Sub(earlier.At), Machine: s.Machine - earlier.Machine, Steal: s.Steal - earlier.Steal,
		Run: s.Run - earlier.Run, Procs: max(s.Procs, earlier.Procs)}
}

// Others is the CPU time the machine spent on other programs in the
// window (its busy time that was not the run's, steal included), never
// below 0.
func (u ShareUse) Others() time.Duration { return max(0, u.Machine-u.Run) }

// OthersCPUs is Others as an average number of CPUs over the window
// (1: one CPU busy with other programs all the time).
func (u ShareUse) OthersCPUs() float64 {
	if u.Wall <= 0 {
		return 0
	}
	return float64(u.Others()) / float64(u.Wall)
}

// BusyOthersCPUs is the share of the machine other programs may take
// during a run before the run counts as disturbed: an average of a
// quarter of a CPU. On the quiet machines the labs' runs were recorded on,
// the stack's windows measured 0.03 to 0.12 (labs/*.real.json,
// background_cpu, the measurement's own work included); two busy loops
// beside a run take nearly two.
const BusyOthersCPUs = 0.25

// ShareTick is the resolution of a process's CPU time in /proc: a window's
// run time may be off by a tick for every process it sums, and the
// machine's by a tick.
const ShareTick = 10 * time.Millisecond

// Busy reports whether other programs took BusyOthersCPUs or more of the
// machine in a window of wall time in which they used others of CPU, and
// more than the readings' resolution for procs processes could make up.
func Busy(others, wall time.Duration, procs int) bool {
	return wall > 0 && float64(others) >= BusyOthersCPUs*float64(wall) && others >= time.Duration(procs+2)*ShareTick
}

// Busy reports whether other programs kept the machine busy in u's window
// (see the function Busy).
func (u ShareUse) Busy() bool { return Busy(u.Others(), u.Wall, u.Procs) }

// String describes the window's share for a line of output.
func (u ShareUse) String() string {
	return fmt.Sprintf("other programs used %.2f CPUs on average (the machine's CPUs were busy %v in %v, %d processes of the run's %v)",
		u.OthersCPUs(), u.Machine.Round(time.Millisecond), u.Wall.Round(time.Millisecond), u.Procs, u.Run.Round(time.Millisecond))
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
