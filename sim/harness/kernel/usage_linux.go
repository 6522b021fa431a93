package kernel

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
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
// nanoseconds; kept where the kernel has CONFIG_SCHED_INFO).
func runDelay() time.Duration {
	files, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var sum int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		if f := bytes.Fields(b); len(f) >= 2 {
			n, _ := strconv.ParseInt(string(f[1]), 10, 64)
			sum += n
		}
	}
	return time.Duration(sum)
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
