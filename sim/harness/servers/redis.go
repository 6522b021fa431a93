package servers

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/connlab/connlab/sim/harness/netem"
)

// RedisServer is the Redis the connection-pool lab calls: miniredis (an
// embedded Redis over real TCP) by default, the real redis-server when asked
// for and installed. Clients connect to a front listener in the lab
// process, which applies the server's end of the emulated path (what the
// clients send waits RTT/2 from the kernel's receive time) and hands each
// connection to miniredis, or relays it to redis-server; the clients hold
// the replies for the other RTT/2 at their end. Redis itself is not the
// harness's to wrap, and a Redis process that slept through a round trip
// would otherwise add its wake-up to every command.
type RedisServer struct {
	Addr string // the front: where clients connect
	Desc string // what serves, for the run's components
	mini *miniredis.Miniredis
	prog *program // redis-server

	backend string // redis-server's own address
	front   *connSet
}

// StartRedis starts Redis on loopback behind a front with the server's
// end of a path of rtt. real asks for redis-server, whose working folder is
// made in dir ("": the system's temporary folder); when it is not installed
// the embedded server runs and the description says so.
func StartRedis(real bool, rtt time.Duration, dir string) (*RedisServer, error) {
	var r *RedisServer
	if real {
		if bin, err := exec.LookPath("redis-server"); err == nil {
			var err error
			if r, err = startRedisServer(bin, dir); err != nil {
				return nil, err
			}
		}
	}
	if r == nil {
		m := miniredis.NewMiniRedis()
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return nil, err
		}
		r = &RedisServer{backend: m.Addr(), mini: m, Desc: "miniredis (embedded, real TCP)"}
		if real {
			r.Desc += "; redis-server is not installed"
		}
	}
	ln, err := netem.Listen("tcp", "")
	if err != nil {
		r.stopBackend()
		return nil, err
	}
	r.Addr = ln.Addr().String()
	r.front = serveConns(ln, netem.Path{In: rtt / 2}, func(c net.Conn, _ int) { r.serveConn(c) })
	return r, nil
}

// serveConn hands c to miniredis, or relays it to redis-server, until
// either side closes.
func (r *RedisServer) serveConn(c net.Conn) {
	defer c.Close()
	if r.mini != nil {
		// miniredis serves c in its own goroutine and closes it at the end:
		// wait for that, so Close waits for every connection.
		nc := &notifyConn{Conn: c, closed: make(chan struct{})}
		r.mini.Server().ServeConn(nc)
		<-nc.closed
		return
	}
	b, err := net.Dial("tcp", r.backend)
	if err != nil {
		return
	}
	defer b.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(c, b) // replies: the client holds them
		c.Close()
		close(done)
	}()
	io.Copy(b, c) // commands, once due
	if tc, ok := b.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	<-done
}

func startRedisServer(bin, parent string) (*RedisServer, error) {
	port, err := netem.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "connlab-redis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", "", "--loglevel", "warning",
		"--protected-mode", "yes", "--timeout", "0")
	prog, err := startProgram(cmd, dir)
	if err != nil {
		return nil, err
	}
	r := &RedisServer{backend: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), prog: prog}
	out, _ := exec.Command(bin, "--version").Output()
	version, _, _ := strings.Cut(string(out), "\n")
	r.Desc = "redis-server " + version
	if err := prog.waitListening(r.backend); err != nil {
		r.stopBackend()
		return nil, fmt.Errorf("harness: redis-server did not start: %v", err)
	}
	return r, nil
}

// Close stops the front and every connection through it, then Redis.
func (r *RedisServer) Close() {
	r.front.close()
	r.stopBackend()
}

func (r *RedisServer) stopBackend() {
	if r.mini != nil {
		r.mini.Close()
	}
	if r.prog != nil {
		r.prog.stop()
	}
}

// Port is the front's port, where the clients' sockets are counted.
func (r *RedisServer) Port() int {
	return r.front.ln.Addr().(*net.TCPAddr).Port
}

// notifyConn tells when it is closed.
type notifyConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (n *notifyConn) Close() error {
	n.once.Do(func() { close(n.closed) })
	return n.Conn.Close()
}
