package roles

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/client"
	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/pki"
	"github.com/connlab/connlab/sim/harness/servers"
	"github.com/connlab/connlab/sim/harness/wire"
)

// runProxy runs the proxy setup: a load generator → a reverse proxy (a Go
// one, or nginx) whose workers call the upstream → the upstream.
func (lp *labProc) runProxy(ctx context.Context, rep *wire.Report, cleanup *[]func()) (*wire.Report, error) {
	job := &lp.job
	s := &job.Scenario
	wantNginx := slices.Contains(job.Real, "nginx")
	bin, lookErr := exec.LookPath("nginx")
	useNginx := wantNginx && lookErr == nil && s.TLS == sim.TLSNone
	who := servers.OwnClients // the Go proxy's workers hold what they receive
	if useNginx {
		// nginx dials the upstream itself: its connect is instant on
		// loopback, so the upstream charges the handshake's round trip on
		// the first bytes that arrive.
		who = servers.ForeignDialers
	}
	up, err := lp.startUpstream(who, rep, cleanup)
	if err != nil {
		return nil, err
	}
	var front string
	var ngx *servers.Nginx
	switch {
	case useNginx:
		ngx, err = servers.StartNginx(bin, s, up.Addr(), job.Dir)
		if err != nil {
			return nil, err
		}
		*cleanup = append(*cleanup, ngx.Stop)
		front = ngx.Addr
		rep.Components = append(rep.Components, ngx.Desc)
		rep.ResolutionMS = 1
		rep.KernelSpread = true
		rep.DialerCharged = true
		rep.Notes = append(rep.Notes, "nginx logs upstream times in whole milliseconds: its phases are compared within 1 ms more")
	default:
		gp, err := startGoProxy(lp, s, up.Addr(), &job.Certs)
		if err != nil {
			return nil, err
		}
		*cleanup = append(*cleanup, gp.close)
		front = gp.ln.Addr().String()
		rep.Components = append(rep.Components, gp.desc)
		switch {
		case wantNginx && lookErr != nil:
			rep.Notes = append(rep.Notes, "nginx is not installed: the Go reverse proxy ran instead")
		case wantNginx:
			rep.Notes = append(rep.Notes, "nginx runs only with tls = \"none\" here: the Go reverse proxy ran instead")
		}
	}
	if err := lp.setPorts(rep); err != nil {
		return nil, err
	}
	users := newProxyUsers(s, front)
	*cleanup = append(*cleanup, users.close)
	if err := users.connect(ctx); err != nil {
		return nil, err
	}
	settle(labWarmHeap)
	lp.start(time.Now())
	smp := kernel.StartSampler(up.Port(), 20*time.Millisecond, lp.since, lp.emit)
	gen := &loadGen{s: s, lp: lp, netRTT: true, serve: users.serve}
	gen.run(ctx, job.Seed)
	if ngx != nil {
		if err := ngx.Events(lp.t0, lp.emit); err != nil {
			return nil, err
		}
	}
	return lp.finish(rep, smp)
}

// proxyUsers are the load generator's clients: each closed-loop user keeps
// one connection to the proxy, over the emulated path of client_rtt.
type proxyUsers struct {
	s     *sim.Scenario
	url   string
	mu    sync.Mutex
	trs   map[int]*http.Transport
	pids  map[int]int // nginx worker pid → worker number
	nextW int
}

func newProxyUsers(s *sim.Scenario, front string) *proxyUsers {
	return &proxyUsers{s: s, url: "http://" + front + "/", trs: map[int]*http.Transport{}, pids: map[int]int{}}
}

func (u *proxyUsers) transport(user int) *http.Transport {
	u.mu.Lock()
	defer u.mu.Unlock()
	tr := u.trs[user]
	if tr == nil {
		rtt := u.s.ClientRTT
		tr = &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, _, err := netem.Dialer{RTT: rtt}.DialGated(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return netem.Path{In: rtt / 2, Out: rtt / 2}.Wrap(c), nil
			},
			MaxIdleConnsPerHost: 1 << 10,
			DisableCompression:  true,
		}
		u.trs[user] = tr
	}
	return tr
}

// serve sends one request to the proxy.
func (u *proxyUsers) serve(ctx context.Context, r *request) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.url, nil)
	req.Header.Set("X-Connlab-Req", strconv.Itoa(r.id))
	resp, err := u.transport(r.user).RoundTrip(req)
	if err != nil {
		return true
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if w, err := strconv.Atoi(resp.Header.Get("X-Connlab-Worker")); err == nil {
		r.worker = w
	} else if pid, err := strconv.Atoi(resp.Header.Get("X-Connlab-Pid")); err == nil {
		r.worker = u.workerOf(pid)
	}
	return resp.StatusCode != http.StatusOK
}

// connect opens each closed-loop user's connection to the proxy before the
// run starts (a request of servers.ConnectPath each). The model has no
// client connection setup; opened in the run, all users' connections at
// once cost the harness's own CPU just as the first upstream calls leave,
// which delayed and spread them and moved the new connections' medians.
func (u *proxyUsers) connect(ctx context.Context) error {
	if u.s.Load != sim.LoadClosed {
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, u.s.Concurrency)
	for user := range u.s.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.url+strings.TrimPrefix(servers.ConnectPath, "/"), nil)
			resp, err := u.transport(user).RoundTrip(req)
			if err != nil {
				errs[user] = err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				errs[user] = fmt.Errorf("%s answered %s", servers.ConnectPath, resp.Status)
			}
		}()
	}
	wg.Wait()
	// The first failure and how many users failed: thousands of users
	// refused by a proxy that is down would otherwise be thousands of lines.
	failed := 0
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("harness: opening the load generator's connections to the proxy: %d of %d users failed, the first with: %w", failed, len(errs), first)
	}
	return nil
}

func (u *proxyUsers) workerOf(pid int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	w, ok := u.pids[pid]
	if !ok {
		u.nextW++
		w = u.nextW
		u.pids[pid] = w
	}
	return w
}

func (u *proxyUsers) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, tr := range u.trs {
		tr.CloseIdleConnections()
	}
}

// goProxy is the default reverse proxy: workers many "worker processes"
// (here, each its own connection cache in one process), a request handed to
// them in turn, each with upstream keep-alive (nginx's keepalive N: up to N
// idle connections, least recently used closed beyond that) or a
// connection per request that the proxy closes first.
type goProxy struct {
	ln      net.Listener
	srv     *http.Server
	workers []*client.Worker
	pools   []*client.HTTPClient
	rr      atomic.Int64
	desc    string
	done    chan struct{}
}

func startGoProxy(lp *labProc, s *sim.Scenario, upstream string, certs *pki.Certs) (*goProxy, error) {
	ln, err := netem.Listen("tcp", "")
	if err != nil {
		return nil, err
	}
	g := &goProxy{ln: ln, done: make(chan struct{})}
	for i := range s.Workers {
		id := i + 1
		w, err := client.NewWorker(wire.WorkerConfig{Setup: sim.SetupHTTP, Scenario: *s, Worker: id, Upstream: upstream, CAPEM: certs.CAPEM},
			func(e *sim.Event) { lp.emitWorker(id, e) })
		if err != nil {
			ln.Close()
			return nil, err
		}
		w.SetBaseFunc(func() time.Time { return lp.t0 })
		g.workers = append(g.workers, w)
		g.pools = append(g.pools, w.NewHTTPClient())
	}
	g.srv = &http.Server{Handler: http.HandlerFunc(g.handle), ReadHeaderTimeout: time.Minute}
	go func() {
		defer close(g.done)
		g.srv.Serve(ln)
	}()
	mode := fmt.Sprintf("upstream keep-alive: up to %d idle connections per worker, least recently used closed beyond", s.UpstreamKeepalive)
	if s.Reuse != sim.ReuseUpstreamKeepalive {
		mode = "a new upstream connection per request, closed by the proxy"
	}
	g.desc = fmt.Sprintf("Go reverse proxy on %s: %d workers (requests in turn), %s", ln.Addr(), s.Workers, mode)
	return g, nil
}

func (g *goProxy) handle(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path == servers.ConnectPath {
		rw.WriteHeader(http.StatusNoContent)
		return
	}
	i := int(g.rr.Add(1)-1) % len(g.workers)
	w := g.workers[i]
	req, _ := strconv.Atoi(r.Header.Get("X-Connlab-Req"))
	h := g.pools[i]
	if w.Scenario().Reuse != sim.ReuseUpstreamKeepalive {
		h = w.NewHTTPClient()
	}
	var body bytes.Buffer
	e := w.HTTPCall(r.Context(), h, h, h, req, 1, &body)
	w.Emit(e)
	if h != g.pools[i] {
		h.CloseIdle(sim.ReasonEndOfCall)
	}
	rw.Header().Set("X-Connlab-Worker", strconv.Itoa(i+1))
	if e.Error != "" {
		http.Error(rw, e.Error, http.StatusBadGateway)
		return
	}
	rw.Write(body.Bytes())
}

func (g *goProxy) close() {
	g.srv.Close()
	<-g.done
	for _, p := range g.pools {
		p.CloseIdle("shutdown")
	}
}
