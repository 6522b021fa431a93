package client

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/servers"
	"github.com/redis/go-redis/v9"
)

// redisClient is one go-redis client: made per request (redis.Redis() in
// the view) or once per process (a ConnectionPool made at start-up, which
// the worker makes before it says it is ready).
type redisClient struct {
	w *Worker
	c *redis.Client

	mu     sync.Mutex
	dialed []*clientConn // dialed, not yet claimed by a call
	reason sim.CloseReason
}

type redisCallKey struct{}

// size is go-redis's PoolSize: 1 for a client made per request (its calls
// go one after another), unbounded (1<<16) for a process's pool, as
// redis-py's max_connections of 2³¹. go-redis allocates its idle list for
// PoolSize connections when the client is made, which a client made per
// request would pay on every request.
func (w *Worker) newRedisClient(size int) *redisClient {
	s := &w.cfg.Scenario
	rc := &redisClient{w: w, reason: sim.ReasonMaxIdleAge}
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
	if s.Reuse == sim.ReusePool && s.PoolMax > 0 {
		opt.PoolSize = s.PoolMax
		if s.PoolFull == sim.PoolFullError {
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
	raw, ready, err := netem.Dialer{RTT: s.RTT}.DialGated(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c.connDone = ready
	c.localPort = raw.LocalAddr().(*net.TCPAddr).Port
	c.id = w.nextConn()
	c.Conn = servers.ClientPath(s.RTT).Wrap(raw) // the replies' half of the path; the front holds the commands
	w.Emit(&sim.Event{Kind: sim.KindOpen, At: w.since(c.connDone), Conn: c.id, LocalPort: c.localPort})
	rc.mu.Lock()
	rc.dialed = append(rc.dialed, c)
	rc.mu.Unlock()
	return c, nil
}

func (rc *redisClient) closeReason() sim.CloseReason {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.reason
}

func (rc *redisClient) close() {
	rc.mu.Lock()
	if rc.reason == sim.ReasonMaxIdleAge {
		rc.reason = sim.ReasonEndOfRequest
	}
	rc.mu.Unlock()
	rc.c.Close()
}

func (w *Worker) redisPool() *redisClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.redis == nil {
		w.redis = w.newRedisClient(1 << 16)
	}
	return w.redis
}

// serveRedis runs one Flask-like request: SET then GET (then alternating,
// for more calls), on a client made for the request or the process's pool.
func (w *Worker) serveRedis(ctx context.Context, req int) bool {
	s := &w.cfg.Scenario
	var rc *redisClient
	perRequest := s.Reuse != sim.ReusePool && s.Reuse != sim.ReuseUpstreamKeepalive
	if perRequest {
		rc = w.newRedisClient(1)
	} else {
		rc = w.redisPool()
	}
	failed := false
	for n := 1; n <= s.CallsPerRequest; n++ {
		if s.Reuse == sim.ReuseNone && n > 1 {
			rc.close()
			rc = w.newRedisClient(1)
		}
		ct := &callTrace{}
		cctx := context.WithValue(ctx, redisCallKey{}, ct)
		ct.start = time.Now()
		var err error
		if n%2 == 1 {
			err = rc.c.Set(cctx, redisKey(req), "155030303", 0).Err()
		} else {
			err = rc.c.Get(cctx, redisKey(req)).Err()
		}
		end := time.Now()
		e := &sim.Event{Kind: sim.KindCall, At: w.since(end), Req: req, Call: n, Worker: w.cfg.Worker,
			Start: w.since(ct.start), Total: end.Sub(ct.start)}
		if err != nil {
			e.Error = err.Error()
			if errors.Is(err, syscall.EADDRNOTAVAIL) {
				e.Error = string(sim.ErrorNoPort) + " [" + err.Error() + "]"
				w.Emit(&sim.Event{Kind: sim.KindPortError, At: e.At, Req: req, Call: n, Worker: e.Worker, Error: e.Error})
			}
			w.Emit(e)
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
		w.Emit(e)
	}
	if perRequest {
		rc.close()
	}
	return failed
}
