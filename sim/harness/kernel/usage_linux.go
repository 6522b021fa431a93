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
// RunDelay and Steal stay 0 where the kernel does not keep them.
func ReadUsage() (u Usage, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return Usage{}, false
	}
	u = Usage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), Faults: ru.Minflt + ru.Majflt, Disk: ru.Majflt}
	u.RunDelay = runDelay()
	u.Steal = steal()
	return u, true
}

// runDelay sums the run-queue wait of this process's threads
// (/proc/self/task/*/schedstat: time on a CPU, time waiting for one, in
// nanoseconds; kept where the kernel has CONFIG_SCHED_INFO). Opening a
// /proc file costs tens of microseconds, reading an open one about one:
// each thread's file stays open (schedFDs) so that a reading at a run's
// time 0 is quick.
func runDelay() time.Duration {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
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
			continue // the thread ended
		}
		if f := bytes.Fields(buf[:n]); len(f) >= 2 {
			d, _ := strconv.ParseInt(string(f[1]), 10, 64)
			sum += d
		}
	}
	for tid, fd := range schedFDs.m {
		if !live[tid] {
			syscall.Close(fd)
			delete(schedFDs.m, tid)
		}
	}
	return time.Duration(sum)
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
// eighth figure, in units of 1/userHZ s: a resolution of 10 ms).
func steal() time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	var buf [512]byte
	n, _ := f.Read(buf[:])
	return parseSteal(buf[:n])
}

// parseSteal reads the steal of /proc/stat's text, which starts with the
// line "cpu  user nice system idle iowait irq softirq steal …".
func parseSteal(stat []byte) time.Duration {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return 0
	}
	ticks, _ := strconv.ParseInt(string(fields[8]), 10, 64)
	return time.Duration(ticks) * time.Second / userHZ
}
