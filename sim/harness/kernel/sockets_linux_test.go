package kernel

import (
	"io"
	"net"
	"os"
	"os/exec"
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

func samplerTakeoverChild(t *testing.T) {
	if err := LoopbackUp(); err != nil {
		t.Fatal(err)
	}
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
	for name, v := range map[string]string{"net/ipv4/ip_local_port_range": "20000 20001", "net/ipv4/tcp_tw_reuse": "1"} {
		if err := WriteSysctl(name, v); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu  sync.Mutex
		evs []sim.Event
	)
	t0 := time.Now()
	smp := StartSampler(ln.Addr().(*net.TCPAddr).Port, 20*time.Millisecond, func(x time.Time) time.Duration { return x.Sub(t0) },
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
	second := connect()
	third := connect()
	if first != 20000 || second != first || third != 20001 {
		t.Fatalf("ports %d, %d, %d: want 20000, 20000 (taken over from TIME_WAIT), 20001", first, second, third)
	}
	tw, _, _, err := smp.Finish(20*time.Millisecond, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var col sim.Collector
	entered := 0
	for i := range evs {
		col.Add(&evs[i])
		if evs[i].Kind == sim.KindTimeWait && evs[i].By == "client" {
			entered++
		}
	}
	sum := col.Summary()
	t.Logf("events: %+v", evs)
	if sum.TimeWaitReused != 1 || tw != 2 || entered != 3 {
		t.Errorf("time_wait_reused %d, peak %d, %d entered TIME_WAIT: want 1, 2, 3", sum.TimeWaitReused, tw, entered)
	}
}
