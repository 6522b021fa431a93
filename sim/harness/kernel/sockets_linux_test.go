package kernel

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
)

// TestSamplerTakeover: with tcp_tw_reuse, connect() takes over a TIME_WAIT
// port more than a second old, and the sampler counts it. In a private
// network namespace whose port range holds one even port and one odd one,
// the first connection takes the even port; two seconds later the second
// takes that port over from its TIME_WAIT socket, and the third, its
// TIME_WAIT socket too young, gets the odd port. The sampler must report one
// client TIME_WAIT socket taken over ("reused") and a peak of two, the
// counts sim validate compares.
func TestSamplerTakeover(t *testing.T) {
	if os.Getenv("CONNLAB_TAKEOVER_CHILD") != "" {
		samplerTakeoverChild(t)
		return
	}
	inPrivateNamespace(t, "TestSamplerTakeover", "CONNLAB_TAKEOVER_CHILD=1")
}

// inPrivateNamespace runs the test name again in a child process started
// as a lab process is (LabAttr(true)), with env added, and fails if the
// child's test fails. It skips when the kernel refuses the namespaces, or
// when the child's test skipped.
func inPrivateNamespace(t *testing.T, name string, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v")
	cmd.Env = append(append(os.Environ(), "CONNLAB_SIM_BIN=unused"), env...) // the child builds no sim binary
	cmd.SysProcAttr = LabAttr(true)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Skipf("private network namespaces refused here: %v", err)
	}
	t.Logf("in a private network namespace:\n%s", out)
	if err == nil && strings.Contains(string(out), "--- SKIP") {
		t.Skip("the child skipped (see its output)")
	}
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v", err)
	}
}

// samplerTakeoverChild runs the takeover up to three times, on a new pair
// of ports each time. A watcher reads the kernel's table every millisecond
// around the second connection; an attempt counts only when the kernel did
// list that connection in TIME_WAIT. A CI run once saw the taken-over
// connection leave no TIME_WAIT at all (the sampler then rightly counted
// none): an attempt where the kernel kept none is logged with the kernel's
// counters, and the next one decides.
func samplerTakeoverChild(t *testing.T) {
	if err := LoopbackUp(); err != nil {
		t.Fatal(err)
	}
	if err := WriteSysctl("net/ipv4/tcp_tw_reuse", "1"); err != nil {
		t.Fatal(err)
	}
	for attempt := range 3 {
		if takeoverAttempt(t, 20000+2*attempt) {
			return
		}
	}
	t.Fatal("in 3 attempts the kernel never kept the taken-over connection's TIME_WAIT")
}

// takeoverAttempt runs the takeover with the ports lo and lo+1 and checks
// the sampler's counts; it returns false, having logged why, when the
// kernel never listed the second connection in TIME_WAIT.
func takeoverAttempt(t *testing.T, lo int) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }() // the client closes first
		}
	}()
	if err := WriteSysctl("net/ipv4/ip_local_port_range", fmt.Sprintf("%d %d", lo, lo+1)); err != nil {
		t.Fatal(err)
	}
	counters := tcpCounters()
	var (
		mu  sync.Mutex
		evs []sim.Event
	)
	t0 := time.Now()
	serverPort := ln.Addr().(*net.TCPAddr).Port
	smp := StartSampler(serverPort, 20*time.Millisecond, func(x time.Time) time.Duration { return x.Sub(t0) },
		func(e *sim.Event) { mu.Lock(); evs = append(evs, *e); mu.Unlock() })
	connect := func() int {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		p := c.LocalAddr().(*net.TCPAddr).Port
		c.Close()
		return p
	}
	first := connect()
	// More than tcp_tw_reuse_delay (1 s; whole seconds before Linux 6.13).
	time.Sleep(2200 * time.Millisecond)
	watch := watchTimeWait(serverPort, lo, 300*time.Millisecond)
	second := connect()
	third := connect()
	seen := <-watch
	if first != lo || second != first || third != lo+1 {
		t.Fatalf("ports %d, %d, %d: want %d, %d (taken over from TIME_WAIT), %d", first, second, third, lo, lo, lo+1)
	}
	tw, _, _, err := smp.Finish(20*time.Millisecond, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("ports %d-%d; the kernel listed port %d as %v; events: %+v", lo, lo+1, lo, seen.states, evs)
	if !seen.fresh {
		t.Logf("the kernel never listed the second connection (port %d) in TIME_WAIT; its states %v; counters that changed: %v",
			lo, seen.states, counterChanges(counters, tcpCounters()))
		return false
	}
	var col sim.Collector
	entered := 0
	for i := range evs {
		col.Add(&evs[i])
		if evs[i].Kind == sim.KindTimeWait && evs[i].By == "client" {
			entered++
		}
	}
	sum := col.Summary()
	if sum.TimeWaitReused != 1 || tw != 2 || entered != 3 {
		t.Errorf("time_wait_reused %d, peak %d, %d entered TIME_WAIT: want 1, 2, 3 (the kernel's states for port %d: %v)",
			sum.TimeWaitReused, tw, entered, lo, seen.states)
	}
	return true
}

// watched is what watchTimeWait saw of one local port: whether a TIME_WAIT
// socket with a fresh timer (more than 59 s left: a new one, not the one
// taken over) was listed, and the states listed, in order, without repeats.
type watched struct {
	fresh  bool
	states []string
}

// watchTimeWait reads the table every millisecond for d and reports what
// it saw of the client socket with local port port.
func watchTimeWait(serverPort, port int, d time.Duration) <-chan watched {
	ch := make(chan watched, 1)
	go func() {
		var w watched
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
			b, err := os.ReadFile("/proc/self/net/tcp")
			if err != nil {
				w.states = append(w.states, err.Error())
				break
			}
			st := "absent"
			for _, line := range strings.Split(string(b), "\n")[1:] {
				f := strings.Fields(line)
				if len(f) < 6 || hexPort([]byte(f[1])) != port || hexPort([]byte(f[2])) != serverPort {
					continue
				}
				st = f[3]
				if f[3] == "06" && timeLeft([]byte(f[5])) > 59*time.Second {
					w.fresh = true
				}
			}
			if n := len(w.states); n == 0 || w.states[n-1] != st {
				w.states = append(w.states, st)
			}
		}
		ch <- w
	}()
	return ch
}

// tcpCounters reads the namespace's TCP counters (/proc/net/snmp's Tcp and
// /proc/net/netstat's TcpExt), by name.
func tcpCounters() map[string]int64 {
	m := map[string]int64{}
	for _, f := range []string{"/proc/self/net/snmp", "/proc/self/net/netstat"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i+1 < len(lines); i += 2 {
			names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
			if len(names) != len(values) || len(names) == 0 || (names[0] != "Tcp:" && names[0] != "TcpExt:") {
				continue
			}
			for j := 1; j < len(names); j++ {
				if v, err := strconv.ParseInt(values[j], 10, 64); err == nil {
					m[names[0]+names[j]] = v
				}
			}
		}
	}
	return m
}

// counterChanges lists the counters that differ between two readings.
func counterChanges(before, after map[string]int64) []string {
	var out []string
	for k, v := range after {
		if d := v - before[k]; d != 0 && k != "Tcp:CurrEstab" {
			out = append(out, fmt.Sprintf("%s+%d", k, d))
		}
	}
	sort.Strings(out)
	return out
}
