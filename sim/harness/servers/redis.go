package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/connlab/connlab/sim"
	"github.com/redis/go-redis/v9"
)

// redisServer is the Redis the connection-pool lab calls: miniredis (an
// embedded Redis over real TCP) by default, the real redis-server when asked
// for and installed. Clients connect to a front listener in the lab
// process, which applies the server's end of the emulated path (what the
// clients send waits RTT/2 from the kernel's receive time) and hands each
// connection to miniredis, or relays it to redis-server; the clients hold
// the replies for the other RTT/2 at their end. Redis itself is not the
// harness's to wrap, and a Redis process that slept through a round trip
// would otherwise add its wake-up to every command.
type redisServer struct {
	addr string // the front: where clients connect
	mini *miniredis.Miniredis
	cmd  *exec.Cmd
	dir  string
	desc string

	backend string // redis-server's own address
	front   net.Listener
	path    path
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// startRedis starts Redis on loopback behind a front with the server's
// end of a path of rtt. real asks for redis-server; when it is not
// installed the embedded server runs and the description says so.
func startRedis(real bool, rtt time.Duration) (*redisServer, error) {
	var r *redisServer
	if real {
		if bin, err := exec.LookPath("redis-server"); err == nil {
			var err error
			if r, err = startRedisServer(bin); err != nil {
				return nil, err
			}
		}
	}
	if r == nil {
		m := miniredis.NewMiniRedis()
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return nil, err
		}
		r = &redisServer{backend: m.Addr(), mini: m, desc: "miniredis (embedded, real TCP)"}
		if real {
			r.desc += "; redis-server is not installed"
		}
	}
	ln, err := listenLoopback("tcp", "")
	if err != nil {
		r.stopBackend()
		return nil, err
	}
	r.front, r.addr, r.path, r.conns = ln, ln.Addr().String(), path{In: rtt / 2}, map[net.Conn]struct{}{}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

func (r *redisServer) serve() {
	defer r.wg.Done()
	for {
		raw, err := r.front.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		c := r.path.wrap(raw)
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			raw.Close()
			return
		}
		r.conns[c] = struct{}{}
		r.wg.Add(1)
		r.mu.Unlock()
		go func() {
			defer r.wg.Done()
			r.serveConn(c)
			r.mu.Lock()
			delete(r.conns, c)
			r.mu.Unlock()
		}()
	}
}

// serveConn hands c to miniredis, or relays it to redis-server, until
// either side closes.
func (r *redisServer) serveConn(c net.Conn) {
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

// freePort asks the kernel for a free loopback port (redis-server needs a
// number; in the harness's private network namespace nothing else takes it
// before redis-server does).
func freePort() (int, error) {
	ln, err := listenLoopback("tcp", "")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func startRedisServer(bin string) (*redisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "connlab-redis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", dir, "--daemonize", "no", "--logfile", "", "--loglevel", "warning",
		"--protected-mode", "yes", "--timeout", "0")
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	r := &redisServer{backend: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, dir: dir}
	out, _ := exec.Command(bin, "--version").Output()
	r.desc = "redis-server " + string(trimVersion(out))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", r.backend, time.Second)
		if err == nil {
			closeReset(c) // no TIME_WAIT to count against the run
			return r, nil
		}
		if time.Now().After(deadline) {
			r.stopBackend()
			return nil, fmt.Errorf("harness: redis-server did not start on %s: %v", r.backend, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func trimVersion(b []byte) []byte {
	for i, c := range b {
		if c == '\n' {
			return b[:i]
		}
	}
	return b
}

// Close stops the front and every connection through it, then Redis.
func (r *redisServer) Close() {
	r.mu.Lock()
	r.closed = true
	conns := make([]net.Conn, 0, len(r.conns))
	for c := range r.conns {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	r.front.Close()
	for _, c := range conns {
		if dc, ok := c.(*delayConn); ok {
			dc.abort()
		} else {
			c.Close()
		}
	}
	r.wg.Wait()
	r.stopBackend()
}

func (r *redisServer) stopBackend() {
	if r.mini != nil {
		r.mini.Close()
	}
	if r.cmd != nil {
		r.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { r.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			r.cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(r.dir)
	}
}

// port is the front's port, where the clients' sockets are counted.
func (r *redisServer) port() int {
	return r.front.Addr().(*net.TCPAddr).Port
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

// redisClient is one go-redis client: made per request (redis.Redis() in
// the view) or once per process (a ConnectionPool made at start-up, which
// the worker makes before it says it is ready).
type redisClient struct {
	w *worker
	c *redis.Client

	mu     sync.Mutex
	dialed []*clientConn // dialed, not yet claimed by a call
	reason string
}

type redisCallKey struct{}

// size is go-redis's PoolSize: 1 for a client made per request (its calls
// go one after another), unbounded (1<<16) for a process's pool, as
// redis-py's max_connections of 2³¹. go-redis allocates its idle list for
// PoolSize connections when the client is made (512 KB for 1<<16), which
// for a client per request cost a worker milliseconds of CPU on every
// request.
func (w *worker) newRedisClient(size int) *redisClient {
	s := &w.cfg.Scenario
	rc := &redisClient{w: w, reason: "max-idle-age"}
	opt := &redis.Options{
		Addr:            w.cfg.Redis,
		Protocol:        2,
		DisableIdentity: true,
		Dialer:          rc.dial,
		PoolSize:        size,
		MaxIdleConns:    s.PoolMaxIdle,
		ConnMaxIdleTime: -1,
		ConnMaxLifetime: s.MaxLifetime,
		MaxRetries:      -1,
		DialerRetries:   1,
		PoolTimeout:     time.Minute,
		ReadTimeout:     30 * time.Second,
		WriteTimeout:    30 * time.Second,
		OnConnect: func(ctx context.Context, _ *redis.Conn) error {
			if ct, ok := ctx.Value(redisCallKey{}).(*callTrace); ok {
				rc.mu.Lock()
				if len(rc.dialed) > 0 {
					ct.conn = rc.dialed[0]
					rc.dialed = rc.dialed[1:]
				}
				rc.mu.Unlock()
			}
			return nil
		},
	}
	if s.MaxIdleAge > 0 {
		opt.ConnMaxIdleTime = s.MaxIdleAge
	}
	if s.Reuse == "pool" && s.PoolMax > 0 {
		opt.PoolSize = s.PoolMax
		if s.PoolFull == "error" {
			opt.PoolTimeout = time.Microsecond // redis-py raises ConnectionError at once
		}
	}
	rc.c = redis.NewClient(opt)
	return rc
}

// dial opens a connection to Redis over the emulated path, applied at the
// client's end (redis-server is not the harness's to wrap).
func (rc *redisClient) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	w := rc.w
	s := &w.cfg.Scenario
	c := &clientConn{w: w, reason: rc.closeReason, dialStart: time.Now()}
	c.dnsDone = c.dialStart
	raw, ready, err := Dialer{RTT: s.RTT}.DialGated(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c.connDone = ready
	c.localPort = raw.LocalAddr().(*net.TCPAddr).Port
	c.id = w.nextConn()
	c.Conn = clientPath(s.RTT).wrap(raw) // the replies' half of the path; the front holds the commands
	w.emit(&sim.Event{Kind: sim.KindOpen, At: w.since(c.connDone), Conn: c.id, LocalPort: c.localPort})
	rc.mu.Lock()
	rc.dialed = append(rc.dialed, c)
	rc.mu.Unlock()
	return c, nil
}

func (rc *redisClient) closeReason() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.reason
}

func (rc *redisClient) close() {
	rc.mu.Lock()
	if rc.reason == "max-idle-age" {
		rc.reason = "end-of-request"
	}
	rc.mu.Unlock()
	rc.c.Close()
}

func (w *worker) redisPool() *redisClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.redis == nil {
		w.redis = w.newRedisClient(1 << 16)
	}
	return w.redis
}

// serveRedis runs one Flask-like request: SET then GET (then alternating,
// for more calls), on a client made for the request or the process's pool.
func (w *worker) serveRedis(ctx context.Context, j *job) bool {
	s := &w.cfg.Scenario
	var rc *redisClient
	perRequest := s.Reuse != "pool" && s.Reuse != "upstream-keepalive"
	if perRequest {
		rc = w.newRedisClient(1)
	} else {
		rc = w.redisPool()
	}
	failed := false
	for n := 1; n <= s.CallsPerRequest; n++ {
		if s.Reuse == "none" && n > 1 {
			rc.close()
			rc = w.newRedisClient(1)
		}
		ct := &callTrace{}
		cctx := context.WithValue(ctx, redisCallKey{}, ct)
		ct.start = time.Now()
		var err error
		if n%2 == 1 {
			err = rc.c.Set(cctx, redisKey(j.Req), "155030303", 0).Err()
		} else {
			err = rc.c.Get(cctx, redisKey(j.Req)).Err()
		}
		end := time.Now()
		e := &sim.Event{Kind: sim.KindCall, At: w.since(end), Req: j.Req, Call: n, Worker: w.cfg.Worker,
			Start: w.since(ct.start), Total: end.Sub(ct.start)}
		if err != nil {
			e.Error = err.Error()
			if errors.Is(err, syscall.EADDRNOTAVAIL) {
				e.Error = errTextPorts + " [" + err.Error() + "]"
				w.emit(&sim.Event{Kind: sim.KindPortError, At: e.At, Req: j.Req, Call: n, Worker: e.Worker, Error: e.Error})
			}
			w.emit(e)
			failed = true
			break
		}
		e.StartTransfer = e.Total // one small reply: its first byte is its last
		if c := ct.conn; c != nil {
			e.NewConn, e.Conn, e.LocalPort = true, c.id, c.localPort
			rel := func(t time.Time) time.Duration { return max(0, t.Sub(ct.start)) }
			e.NameLookup, e.Connect = rel(c.dnsDone), rel(c.connDone)
		} else {
			e.Reused = true
		}
		w.emit(e)
	}
	if perRequest {
		rc.close()
	}
	return failed
}
