package servers

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/netem"
)

// program is a server program the harness starts (nginx, redis-server):
// its process, and the folder made for it (configuration, logs), removed
// when it stops.
type program struct {
	cmd    *exec.Cmd
	dir    string
	exited chan struct{}
}

// startProgram starts cmd, which dies with the thread that started it.
func startProgram(cmd *exec.Cmd, dir string) (*program, error) {
	cmd.SysProcAttr = kernel.ChildAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p := &program{cmd: cmd, dir: dir, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	return p, nil
}

var errExited = errors.New("it exited")

// waitListening waits until addr accepts a connection, for at most 10 s;
// it returns errExited if the program exits first.
func (p *program) waitListening(addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			netem.CloseReset(c) // no TIME_WAIT to count against the run
			return nil
		}
		select {
		case <-p.exited:
			return errExited
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("it did not listen on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop ends the program (SIGTERM, then SIGKILL after 5 s) and removes its
// folder.
func (p *program) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	os.RemoveAll(p.dir)
}
