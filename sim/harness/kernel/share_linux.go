package kernel

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ReadShare reads the machine's CPU time (/proc/stat) and the run's: this
// process (getrusage, to the microsecond, with the children it waited
// for), the processes below it (/proc/PID/task/*/children, each one's
// /proc/PID/stat: its own and its waited-for children's time, in ticks)
// and the extra processes by PID (their own time only). ok is false when
// the machine's time cannot be read. A process below this one that ended
// and was waited for is counted by its parent; one that ended and was not
// (a namespace's last processes, killed with it) takes its time with it.
func ReadShare(extra ...int) (s Share, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Share{}, false
	}
	s.Machine, s.Steal, ok = parseMachine(b)
	if !ok {
		return Share{}, false
	}
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	s.Run = time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
	s.Procs = 1
	seen := map[int]bool{}
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
				if err != nil || seen[child] {
					continue
				}
				seen[child] = true
				if d, ok := procCPU(f, true); ok {
					s.Run += d
					s.Procs++
				}
				walk(f)
			}
		}
	}
	walk("self")
	for _, pid := range extra {
		if pid <= 0 || seen[pid] || pid == os.Getpid() {
			continue
		}
		if d, ok := procCPU(strconv.Itoa(pid), false); ok {
			s.Run += d
			s.Procs++
		}
	}
	s.At = time.Now()
	return s, true
}

// procCPU reads a process's user and system time from /proc/PID/stat,
// with its waited-for children's when kids is set.
func procCPU(pid string, kids bool) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	return parseProcCPU(b, kids)
}

// parseProcCPU reads utime and stime (and cutime, cstime with kids), the
// 14th to 17th fields of a /proc/PID/stat line, after the command name in
// parentheses (which may hold spaces and parentheses itself).
func parseProcCPU(stat []byte, kids bool) (time.Duration, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(stat[i+1:]) // f[0] is the 3rd field, state
	if len(f) < 15 {
		return 0, false
	}
	n := 2
	if kids {
		n = 4
	}
	var ticks int64
	for _, v := range f[11 : 11+n] {
		x, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += x
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}

// parseMachine reads /proc/stat's first line, "cpu user nice system idle
// iowait irq softirq steal …" in ticks of all CPUs: the busy time of
// processes (user, nice, system) and steal. ok is false without steal's
// field (a kernel before 2.6.11).
func parseMachine(stat []byte) (busy, steal time.Duration, ok bool) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0, 0, false
	}
	var v [8]int64
	for i := range v {
		x, err := strconv.ParseInt(string(f[i+1]), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		v[i] = x
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / userHZ }
	return tick(v[0] + v[1] + v[2] + v[7]), tick(v[7]), true
}
