package kernel

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ReadShare reads the run's CPU time and every other program's: the run is
// this process (getrusage, to the microsecond, with the children it
// waited for), the processes below it (/proc/PID/task/*/children) and the
// extra processes by PID; every other process in /proc but the kernel's
// own threads is another program's. ok is false when /proc cannot be
// read. A process's time is its user and system time with its waited-for
// children's (/proc/PID/stat, in ticks); an extra process's its own only.
func ReadShare(extra ...int) (s Share, ok bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return Share{}, false
	}
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	s.Run = time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
	s.Procs = 1
	// This process as /proc numbers it: in a PID namespace of its own
	// (a lab process) getpid says 1, the host's /proc its host PID.
	run := map[int]bool{selfPID(): true}
	var walk func(pid string)
	walk = func(pid string) {
		tasks, err := os.ReadDir("/proc/" + pid + "/task")
		if err != nil {
			return
		}
		for _, t := range tasks {
			c, err := os.ReadFile("/proc/" + pid + "/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(c)) {
				child, err := strconv.Atoi(f)
				if err != nil || run[child] {
					continue
				}
				run[child] = true
				if p, ok := readProc(f); ok {
					s.Run += p.cpu
					s.Procs++
				}
				walk(f)
			}
		}
	}
	walk("self")
	for _, pid := range extra {
		if pid <= 0 || run[pid] {
			continue
		}
		run[pid] = true
		if p, ok := readProc(strconv.Itoa(pid)); ok {
			s.Run += p.own
			s.Procs++
		}
	}
	s.others = map[procKey]time.Duration{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || run[pid] {
			continue
		}
		if p, ok := readProc(e.Name()); ok && !p.kthread {
			s.others[procKey{pid, p.start}] = p.cpu
		}
	}
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		s.Steal, _ = parseSteal(b)
	}
	s.At = time.Now()
	return s, true
}

// selfPID is this process's PID as /proc numbers it.
func selfPID() int {
	if l, err := os.Readlink("/proc/self"); err == nil {
		if pid, err := strconv.Atoi(l); err == nil {
			return pid
		}
	}
	return os.Getpid()
}

// proc is what ReadShare reads of a process.
type proc struct {
	own, cpu time.Duration // user and system time; with its waited-for children's
	start    int64         // when it started, in ticks since boot
	kthread  bool          // one of the kernel's own threads
}

// readProc reads /proc/PID/stat.
func readProc(pid string) (proc, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return proc{}, false
	}
	return parseProc(b)
}

// pfKthread is the flags bit of a kernel thread (PF_KTHREAD).
const pfKthread = 0x00200000

// parseProc reads a /proc/PID/stat line: after the command name in
// parentheses (which may hold spaces and parentheses itself), the 9th
// field is flags, the 14th to 17th utime, stime, cutime and cstime, the
// 22nd starttime.
func parseProc(stat []byte) (proc, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return proc{}, false
	}
	f := bytes.Fields(stat[i+1:]) // f[0] is the 3rd field, state
	if len(f) < 20 {
		return proc{}, false
	}
	var v [5]int64
	for j, k := range []int{11, 12, 13, 14, 19} {
		x, err := strconv.ParseInt(string(f[k]), 10, 64)
		if err != nil {
			return proc{}, false
		}
		v[j] = x
	}
	flags, err := strconv.ParseUint(string(f[6]), 10, 64)
	if err != nil {
		return proc{}, false
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }
	return proc{own: tick(v[0] + v[1]), cpu: tick(v[0] + v[1] + v[2] + v[3]), start: v[4], kthread: flags&pfKthread != 0}, true
}
