//go:build linux

package stack

import (
	"bytes"
	_ "embed"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/loopback"
)

//go:embed app.py
var appPy []byte

//go:embed nginx.conf.tmpl
var nginxTmpl string

var nginxConf = template.Must(template.New("nginx.conf").Parse(nginxTmpl))

// A Stack is a running nginx, app and redis-server.
type Stack struct {
	Config
	ownDir bool
	procs  []*proc // in start order; stopped in reverse
}

type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    string // its stderr and stdout
}

// Start writes the configuration to a temporary directory and starts
// redis-server, the app and nginx, each once it can be reached. On error
// everything started is stopped.
func Start(c Config) (_ *Stack, err error) {
	c = c.Defaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	for _, h := range c.Hops() {
		if err := loopback.Check(addr(h.Port)); err != nil {
			return nil, err
		}
	}
	dir, own := c.Dir, false
	if dir == "" {
		// Folders of runs whose process was killed go first; not from
		// RunIsolated's child, whose /proc is its PID namespace's.
		if os.Getenv(envChild) != "1" {
			kernel.SweepTemp()
		}
		if dir, err = kernel.MkdirTemp("stack"); err != nil {
			return nil, err
		}
		own = true
	}
	os.Chmod(dir, 0o755) // nginx's workers run as nobody
	c.Dir = dir
	st := &Stack{Config: c, ownDir: own}
	defer func() {
		if err != nil {
			st.Stop()
		}
	}()
	if err := st.startRedis(); err != nil {
		return nil, err
	}
	if err := st.startApp(); err != nil {
		return nil, err
	}
	if err := st.startNginx(); err != nil {
		return nil, err
	}
	return st, nil
}

func addr(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

func (st *Stack) startRedis() error {
	p, err := st.spawn("redis-server", nil, "redis-server",
		"--bind", "127.0.0.1", "--port", strconv.Itoa(st.RedisPort),
		"--save", "", "--appendonly", "no", "--daemonize", "no",
		"--protected-mode", "no", "--timeout", "0", "--maxclients", "10000",
		"--dir", st.Dir)
	if err != nil {
		return err
	}
	return st.waitListen(p, st.RedisPort)
}

func (st *Stack) startApp() error {
	appDir := filepath.Join(st.Dir, "app")
	if err := os.MkdirAll(appDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(appDir, "app.py"), appPy, 0o644); err != nil {
		return err
	}
	env := []string{"CONNLAB_REDIS=" + st.Redis, "CONNLAB_REDIS_PORT=" + strconv.Itoa(st.RedisPort),
		"CONNLAB_APP_PORT=" + strconv.Itoa(st.AppPort), "PYTHONDONTWRITEBYTECODE=1"}
	var p *proc
	var err error
	switch st.AppServer {
	case Gunicorn:
		gunicorn, lerr := exec.LookPath("gunicorn")
		if lerr != nil {
			return lerr
		}
		// Debian's gunicorn script runs /usr/bin/python3; run it with the
		// configured interpreter explicitly all the same.
		p, err = st.spawn("gunicorn", env, st.Python, gunicorn,
			"--chdir", appDir, "--bind", addr(st.AppPort),
			"--worker-class", "gthread", "--workers", strconv.Itoa(st.GunicornWorkers),
			"--threads", strconv.Itoa(st.GunicornThreads),
			"--keep-alive", strconv.Itoa(st.GunicornKeepalive),
			"--log-level", "warning", "app:app")
	case Flask:
		p, err = st.spawn("flask", env, st.Python, filepath.Join(appDir, "app.py"))
	}
	if err != nil {
		return err
	}
	return st.waitListen(p, st.AppPort)
}

// NginxConf renders nginx's configuration for c with its files in dir.
func NginxConf(c Config, dir string) (string, error) {
	c = c.Defaults()
	mode := "no upstream keep-alive: HTTP/1.0, Connection: close"
	if c.Keepalive > 0 {
		mode = fmt.Sprintf("keepalive %d, HTTP/1.1", c.Keepalive)
	}
	var b bytes.Buffer
	err := nginxConf.Execute(&b, map[string]any{
		"Mode": mode, "Workers": c.NginxWorkers, "Dir": dir, "ErrorLevel": "error",
		"WorkerConnections": 8192, "App": addr(c.AppPort), "Listen": addr(c.NginxPort),
		"Keepalive": c.Keepalive,
	})
	return b.String(), err
}

func (st *Stack) startNginx() error {
	conf, err := NginxConf(st.Config, st.Dir)
	if err != nil {
		return err
	}
	path := filepath.Join(st.Dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	p, err := st.spawn("nginx", nil, "nginx", "-p", st.Dir, "-c", path, "-e", filepath.Join(st.Dir, "error.log"))
	if err != nil {
		return err
	}
	return st.waitListen(p, st.NginxPort)
}

// spawn starts a program in its own process group, killed if this process
// dies, with its output in a file of the stack's directory.
func (st *Stack) spawn(name string, env []string, prog string, args ...string) (*proc, error) {
	bin, err := exec.LookPath(prog)
	if err != nil {
		return nil, fmt.Errorf("stack: %s: %w", name, err)
	}
	logPath := filepath.Join(st.Dir, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = st.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stack: starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{}), log: logPath}
	go func() { cmd.Wait(); close(p.exited) }()
	st.procs = append(st.procs, p)
	return p, nil
}

// waitListen waits until port accepts a connection, which it resets so
// that no TIME_WAIT socket is left behind.
func (st *Stack) waitListen(p *proc, port int) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr(port), time.Second)
		if err == nil {
			closeReset(c)
			return nil
		}
		select {
		case <-p.exited:
			b, _ := os.ReadFile(p.log)
			return fmt.Errorf("stack: %s exited at start: %s", p.name, tail(b, 2000))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stack: %s did not listen on %s within 15 s", p.name, addr(port))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// closeReset closes c with a reset (SO_LINGER 0): no TIME_WAIT.
func closeReset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// Pids returns the process IDs of each program of the stack (the first
// started process of each; its children are found with Tree).
func (st *Stack) Pids() map[string]int {
	m := map[string]int{}
	for _, p := range st.procs {
		m[p.name] = p.cmd.Process.Pid
	}
	return m
}

// Stop stops every program, newest first, and removes the directory if
// Start made it. Each gets its quick-stop signal (gunicorn's SIGQUIT, SIGTERM
// for the others) and SIGKILL after 5 s: a stack under load may be slow to
// wind down, and nothing of it is kept.
func (st *Stack) Stop() error {
	for i := len(st.procs) - 1; i >= 0; i-- {
		p := st.procs[i]
		pgid := p.cmd.Process.Pid
		sig := syscall.SIGTERM
		if p.name == Gunicorn {
			sig = syscall.SIGQUIT // SIGTERM waits for requests in flight (graceful_timeout 30 s)
		}
		syscall.Kill(-pgid, sig)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
		}
		// Whatever the group still holds (nginx's workers) goes too.
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
	st.procs = nil
	if st.ownDir {
		return os.RemoveAll(st.Dir)
	}
	return nil
}
