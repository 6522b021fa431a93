package kernel

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ReadUsage reads this process's usage; ok is false where it cannot.
// HasRunDelay and HasSteal are false where the kernel does not keep them.
func ReadUsage() (u Usage, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return Usage{}, false
	}
	u = Usage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), Faults: ru.Minflt + ru.Majflt, Disk: ru.Majflt}
	u.RunDelay, u.HasRunDelay = runDelay()
	u.Steal, u.HasSteal = steal()
	return u, true
}

// runDelay sums the run-queue wait of this process's threads
// (/proc/self/task/*/schedstat: time on a CPU, time waiting for one, in
// nanoseconds; kept where the kernel has CONFIG_SCHED_INFO). Opening a
// /proc file costs tens of microseconds, reading an open one about one:
// each thread's file stays open (schedFDs) so that a reading at a run's
// time 0 is quick. ok is false when no thread's file could be read (a
// kernel without CONFIG_SCHED_INFO has none) or every thread's wait is
// 0: a kernel that does not count the wait leaves it 0, and where it is
// counted, threads that have run for a while have always waited some.
func runDelay() (d time.Duration, ok bool) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, false
	}
	schedFDs.Lock()
	defer schedFDs.Unlock()
	if schedFDs.m == nil {
		schedFDs.m = map[string]int{}
	}
	var sum int64
	var buf [128]byte
	live := map[string]bool{}
	for _, e := range ents {
		tid := e.Name()
		live[tid] = true
		n, err := schedFDs.read(tid, buf[:])
		if err != nil {
			continue // the thread ended, or the kernel keeps no schedstat
		}
		if f := bytes.Fields(buf[:n]); len(f) >= 2 {
			if v, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				sum += v
			}
		}
	}
	for tid, fd := range schedFDs.m {
		if !live[tid] {
			syscall.Close(fd)
			delete(schedFDs.m, tid)
		}
	}
	return time.Duration(sum), sum > 0
}

// schedFDs holds an open schedstat file for each thread, by thread id.
var schedFDs fdCache

type fdCache struct {
	sync.Mutex
	m map[string]int
}

// read reads thread tid's schedstat into buf, from its open file, or from
// a new one when there is none or the old one's thread ended (a new
// thread may have its id); schedFDs is locked.
func (s *fdCache) read(tid string, buf []byte) (int, error) {
	if fd, ok := s.m[tid]; ok {
		if n, err := syscall.Pread(fd, buf, 0); err == nil {
			return n, nil
		}
		syscall.Close(fd)
		delete(s.m, tid)
	}
	fd, err := syscall.Open("/proc/self/task/"+tid+"/schedstat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	s.m[tid] = fd
	return syscall.Pread(fd, buf, 0)
}

// userHZ is the unit of /proc/stat's times (USER_HZ, 100 on Linux).
const userHZ = 100

// steal reads the machine's stolen time from /proc/stat's first line (the
// eighth figure, in units of 1/userHZ s: a resolution of 10 ms). The file
// stays open, as the schedstat files do (statFD); ok is false when it
// cannot be read or has no such figure.
func steal() (time.Duration, bool) {
	statFD.Lock()
	defer statFD.Unlock()
	var buf [512]byte
	for try := 0; try < 2; try++ {
		if statFD.fd < 0 {
			fd, err := syscall.Open("/proc/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			if err != nil {
				return 0, false
			}
			statFD.fd = fd
		}
		n, err := syscall.Pread(statFD.fd, buf[:], 0)
		if err == nil {
			return parseSteal(buf[:n])
		}
		syscall.Close(statFD.fd)
		statFD.fd = -1
	}
	return 0, false
}

// statFD is /proc/stat, open (-1 before the first reading).
var statFD = struct {
	sync.Mutex
	fd int
}{fd: -1}

// parseSteal reads the steal of /proc/stat's text, which starts with the
// line "cpu  user nice system idle iowait irq softirq steal …"; ok is
// false without it (a kernel before 2.6.11).
func parseSteal(stat []byte) (time.Duration, bool) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return 0, false
	}
	ticks, err := strconv.ParseInt(string(fields[8]), 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}
