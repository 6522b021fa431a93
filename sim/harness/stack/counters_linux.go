package stack

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// tcpOpens reads the network namespace's connection counters from
// /proc/net/snmp: ActiveOpens counts connect()s that reached SYN_SENT,
// PassiveOpens the connections accepted (RFC 1213's tcpActiveOpens and
// tcpPassiveOpens).
func tcpOpens() (active, passive int64, err error) {
	f, err := os.Open("/proc/self/net/snmp")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "Tcp:") {
			continue
		}
		fields := strings.Fields(line)[1:]
		if names == nil {
			names = fields
			continue
		}
		for i, v := range fields {
			if i >= len(names) {
				break
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			switch names[i] {
			case "ActiveOpens":
				active = n
			case "PassiveOpens":
				passive = n
			}
		}
		return active, passive, nil
	}
	return 0, 0, fmt.Errorf("stack: no Tcp counters in /proc/net/snmp")
}

// tcpExtKeys are the TcpExt counters a run reports: sockets that entered
// TIME_WAIT (TW), ports connect() took back from TIME_WAIT (TWRecycled,
// tcp_tw_reuse), connections the listeners could not take in time
// (ListenOverflows, ListenDrops), resets on close with unread data.
var tcpExtKeys = []string{"TW", "TWRecycled", "ListenOverflows", "ListenDrops", "TCPAbortOnClose", "TCPAbortOnData"}

// tcpExt reads the namespace's TcpExt counters from /proc/net/netstat.
func tcpExt() (map[string]int64, error) {
	b, err := os.ReadFile("/proc/self/net/netstat")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	out := map[string]int64{}
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "TcpExt:") || !strings.HasPrefix(lines[i+1], "TcpExt:") {
			continue
		}
		names, vals := strings.Fields(lines[i])[1:], strings.Fields(lines[i+1])[1:]
		for j := range min(len(names), len(vals)) {
			for _, k := range tcpExtKeys {
				if names[j] == k {
					out[k], _ = strconv.ParseInt(vals[j], 10, 64)
				}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("stack: no TcpExt counters in /proc/net/netstat")
}

// nginxAccepts reads the connections nginx has accepted (stub_status),
// counting the connection that asks.
func nginxAccepts(port int) (int64, error) {
	c, err := net.DialTimeout("tcp", addr(port), 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer closeReset(c)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET /connlab-status HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
	b, err := io.ReadAll(c)
	if err != nil {
		return 0, err
	}
	// "Active connections: 1 \nserver accepts handled requests\n 5 5 9 \n..."
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "server accepts") && i+1 < len(lines) {
			f := strings.Fields(lines[i+1])
			if len(f) >= 1 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("stack: nginx stub_status: no accepts in %q", tail(b, 300))
}

// redisInfo reads fields of redis-server's INFO (the connection that asks
// counts in total_connections_received).
func redisInfo(port int, keys ...string) (map[string]string, error) {
	c, err := net.DialTimeout("tcp", addr(port), 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer closeReset(c)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "INFO\r\n")
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(head, "$") {
		return nil, fmt.Errorf("stack: redis INFO: unexpected reply %q", head)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	all := map[string]string{}
	for _, l := range strings.Split(string(body), "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			all[k] = v
		}
	}
	out := map[string]string{}
	for _, k := range keys {
		v, ok := all[k]
		if !ok {
			return nil, fmt.Errorf("stack: redis INFO has no %s", k)
		}
		out[k] = v
	}
	return out, nil
}

// cpuTicks returns the user and system CPU time of pid and of every
// descendant still alive, in clock ticks (USER_HZ, 100 a second), from
// /proc/PID/stat; threads count in their process.
func cpuTicks(pid int) (int64, error) {
	var total int64
	err := walkTree(pid, func(p int, f []string) {
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		total += u + s
	})
	return total, err
}

// runDelays reads, for every thread of pid and its descendants, the time
// it has spent runnable but waiting for a CPU (nanoseconds, the second
// field of /proc/PID/task/TID/schedstat) and the time it ran (the first),
// by thread ID.
func runDelays(pid int) (map[int]schedStat, error) {
	out := map[int]schedStat{}
	err := walkTree(pid, func(p int, _ []string) {
		dir := filepath.Join("/proc", strconv.Itoa(p), "task")
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) < 3 {
				continue
			}
			st := schedStat{pid: p}
			st.run, _ = strconv.ParseInt(f[0], 10, 64)
			st.delay, _ = strconv.ParseInt(f[1], 10, 64)
			st.runs, _ = strconv.ParseInt(f[2], 10, 64)
			out[tid] = st
		}
	})
	return out, err
}

// schedStat is one thread's /proc/PID/task/TID/schedstat: its time on a
// CPU (ns), its run delay (ns runnable but waiting for a CPU) and the
// times it was given a CPU; pid is its process.
type schedStat struct {
	run, delay, runs int64
	pid              int
}

// workerRun adds to run each process's time on a CPU since before, from
// its threads' readings, leaving out the process skip (a master that
// accepts no connection).
func workerRun(run map[int]int64, before, now map[int]schedStat, skip int) {
	for tid, v := range now {
		if v.pid != skip {
			run[v.pid] += v.run - before[tid].run
		}
	}
}

// delaySince sums the run delays and the times given a CPU accrued since
// before: threads born since count from zero; threads that ended are
// lost, so it is a lower bound for a server that starts a thread per
// connection.
func delaySince(before, now map[int]schedStat) (time.Duration, int64) {
	var d, n int64
	for tid, v := range now {
		d += v.delay - before[tid].delay
		n += v.runs - before[tid].runs
	}
	return time.Duration(d), n
}

// walkTree calls fn with pid and each of its live descendants, and their
// /proc/PID/stat fields (see statFields).
func walkTree(pid int, fn func(pid int, stat []string)) error {
	children := map[int][]int{}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	stats := map[int][]string{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, ok := statFields(p)
		if !ok {
			continue
		}
		stats[p] = f
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], p)
	}
	if _, ok := stats[pid]; !ok {
		return fmt.Errorf("stack: no process %d", pid)
	}
	var walk func(int)
	walk = func(p int) {
		if f, ok := stats[p]; ok {
			fn(p, f)
		}
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return nil
}

// machineTicks reads the whole machine's CPU time from /proc/stat (it is
// not namespaced), in clock ticks summed over the CPUs: busy (user, nice,
// system, irq, softirq), and steal (taken by the hypervisor).
func machineTicks() (busy, steal int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("stack: /proc/stat: unexpected first line %q", line)
	}
	v := make([]int64, 8)
	for i := range v {
		v[i], _ = strconv.ParseInt(f[i+1], 10, 64)
	}
	// user nice system idle iowait irq softirq steal
	return v[0] + v[1] + v[2] + v[5] + v[6], v[7], nil
}

// cpuPressure reads the share of the last 10 s in which some runnable
// task waited for a CPU, machine-wide (/proc/pressure/cpu, "some avg10").
func cpuPressure() float64 {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return -1
	}
	for _, f := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(f, "avg10="); ok {
			x, _ := strconv.ParseFloat(v, 64)
			return x
		}
	}
	return -1
}

// statFields splits /proc/PID/stat after the command name: index 0 is the
// state, 1 the parent's pid, 11 utime, 12 stime.
func statFields(pid int) ([]string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return nil, false
	}
	return f, true
}
