package kernel

import "time"

// Usage is what this process has used so far: CPU time (all its threads,
// user and system) and page faults, Disk of them read from a file; and
// what it waited for: RunDelay, the time its threads were ready to run but
// waited for a CPU (the kernel's run queue), and Steal, the time the
// hypervisor gave the machine's CPUs to others (all CPUs, not this
// process's alone). A thread that ends takes its run delay with it.
// HasRunDelay and HasSteal say whether the kernel gave each: without them
// a 0 is "not known", not "none".
type Usage struct {
	CPU         time.Duration
	Faults      int64
	Disk        int64
	RunDelay    time.Duration
	Steal       time.Duration
	HasRunDelay bool
	HasSteal    bool
}

// Sub is what u used since earlier; a figure either reading lacks is not
// known.
func (u Usage) Sub(earlier Usage) Usage {
	d := Usage{CPU: u.CPU - earlier.CPU, Faults: u.Faults - earlier.Faults, Disk: u.Disk - earlier.Disk,
		HasRunDelay: u.HasRunDelay && earlier.HasRunDelay, HasSteal: u.HasSteal && earlier.HasSteal}
	if d.HasRunDelay {
		d.RunDelay = u.RunDelay - earlier.RunDelay
	}
	if d.HasSteal {
		d.Steal = u.Steal - earlier.Steal
	}
	return d
}
