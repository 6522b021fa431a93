package testutil

import (
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Serve is a `sim serve` that StartServe started.
type Serve struct {
	Base string      // http://127.0.0.1:PORT
	Out  *SyncBuffer // what it printed
	Err  *SyncBuffer
	Cmd  *exec.Cmd
}

var serveAddrRE = regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`)

// StartServe starts SimBinary's `sim serve --addr 127.0.0.1:0 ARGS…` in
// dir ("": this one) with env added to this process's, in a process group
// of its own that dies with the test process, and waits up to 30 s for the
// address it prints. The cleanup stops it as Ctrl-C does and checks that it
// exited without error within 20 s, said so, and no longer listens.
func StartServe(t testing.TB, dir string, env []string, args ...string) *Serve {
	t.Helper()
	bin, err := SimBinary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Serve{Out: &SyncBuffer{}, Err: &SyncBuffer{}}
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = s.Out, s.Err
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Cmd = cmd
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; {
		if m := serveAddrRE.FindStringSubmatch(s.Out.String()); m != nil {
			addr = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("sim serve exited (%v): %s%s", err, s.Out, s.Err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Fatalf("sim serve printed no address: %s%s", s.Out, s.Err)
		}
	}
	s.Base = "http://" + addr
	t.Cleanup(func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGINT)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("sim serve, interrupted: %v\n%s", err, s.Err)
			}
			if !strings.Contains(s.Out.String(), "sim serve: stopped") {
				t.Errorf("sim serve did not say it stopped: %s", s.Out)
			}
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			t.Errorf("sim serve did not stop within 20 s of Ctrl-C\n%s", s.Err)
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("something still listens on %s after sim serve stopped", addr)
		}
	})
	return s
}
