package kernel

import "time"

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
