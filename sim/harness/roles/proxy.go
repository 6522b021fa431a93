package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/connlab/connlab/sim"
)

// runProxy runs the proxy setup: a load generator → a reverse proxy (a Go
// one, or nginx) whose workers call the upstream → the upstream.
func (lp *labProc) runProxy(ctx context.Context, rep *variantReport, cleanup *[]func()) (*variantReport, error) {
	job := &lp.job
	s := &job.Scenario
	wantNginx := slices.Contains(job.Real, "nginx")
	bin, lookErr := exec.LookPath("nginx")
	useNginx := wantNginx && lookErr == nil && s.TLS == "none"
	who := ownClients // the Go proxy's workers hold what they receive
	if useNginx {
		who = foreignClients
	}
	cfg := upstreamConfig(s, s.RTT, who)
	cfg.Seed = job.Seed
	up, err := StartUpstream("", cfg, &job.Certs, lp.serverEvent)
	if err != nil {
		return nil, err
	}
	*cleanup = append(*cleanup, up.Close)
	rep.Components = append(rep.Components, up.String())
	var front string
	var ngx *nginxProc
	switch {
	case useNginx:
		ngx, err = startNginx(bin, s, up.Addr())
		if err != nil {
			return nil, err
		}
		*cleanup = append(*cleanup, ngx.stop)
		front = ngx.addr
		rep.Components = append(rep.Components, ngx.desc)
		rep.ResolutionMS = 1
		rep.KernelSpread = true
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
	settle()
	lp.t0 = time.Now()
	smp := startSampler(up.Port(), 20*time.Millisecond, lp.since, lp.emit)
	gen := &loadGen{s: s, lp: lp, netRTT: true, serve: users.serve}
	gen.run(ctx, job.Seed)
	if ngx != nil {
		if err := ngx.events(lp); err != nil {
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
				c, _, err := Dialer{RTT: rtt}.DialGated(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return path{In: rtt / 2, Out: rtt / 2}.wrap(c), nil
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
	workers []*worker
	pools   []*httpClient
	rr      atomic.Int64
	desc    string
	done    chan struct{}
}

func startGoProxy(lp *labProc, s *sim.Scenario, upstream string, certs *Certs) (*goProxy, error) {
	ln, err := listenLoopback("tcp", "")
	if err != nil {
		return nil, err
	}
	g := &goProxy{ln: ln, done: make(chan struct{})}
	for i := range s.Workers {
		id := i + 1
		w, err := newWorker(workerConfig{Setup: SetupHTTP, Scenario: *s, Worker: id, Upstream: upstream, CAPEM: certs.CAPEM},
			func(e *sim.Event) { lp.emitWorker(id, e) })
		if err != nil {
			ln.Close()
			return nil, err
		}
		w.baseFn = func() time.Time { return lp.t0 }
		g.workers = append(g.workers, w)
		g.pools = append(g.pools, w.newHTTPClient())
	}
	g.srv = &http.Server{Handler: http.HandlerFunc(g.handle), ReadHeaderTimeout: time.Minute}
	go func() {
		defer close(g.done)
		g.srv.Serve(ln)
	}()
	mode := fmt.Sprintf("upstream keep-alive: up to %d idle connections per worker, least recently used closed beyond", s.UpstreamKeepalive)
	if s.Reuse != "upstream-keepalive" {
		mode = "a new upstream connection per request, closed by the proxy"
	}
	g.desc = fmt.Sprintf("Go reverse proxy on %s: %d workers (requests in turn), %s", ln.Addr(), s.Workers, mode)
	return g, nil
}

func (g *goProxy) handle(rw http.ResponseWriter, r *http.Request) {
	i := int(g.rr.Add(1)-1) % len(g.workers)
	w := g.workers[i]
	req, _ := strconv.Atoi(r.Header.Get("X-Connlab-Req"))
	h := g.pools[i]
	if w.cfg.Scenario.Reuse != "upstream-keepalive" {
		h = w.newHTTPClient()
	}
	var body bytes.Buffer
	e := w.httpCall(r.Context(), h, h, h, req, 1, &body)
	w.emit(e)
	if h != g.pools[i] {
		h.closeIdle("end-of-call")
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
		p.closeIdle("shutdown")
	}
}

// nginxProc is a real nginx, configured in a temporary prefix.
type nginxProc struct {
	cmd    *exec.Cmd
	dir    string
	addr   string
	desc   string
	exited chan struct{}
}

func startNginx(bin string, s *sim.Scenario, upstream string) (*nginxProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "connlab-nginx-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	n := &nginxProc{dir: dir, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	upstreamBlock := fmt.Sprintf("    upstream app {\n        server %s;\n", upstream)
	location := "            proxy_pass http://app;\n"
	if s.Reuse == "upstream-keepalive" {
		// The model has the server close idle connections; nginx's own
		// upstream keepalive_timeout is left long so only the server does.
		// Likewise for keepalive_requests: the model's is the server's.
		upstreamBlock += fmt.Sprintf("        keepalive %d;\n        keepalive_timeout 1h;\n        keepalive_requests 1000000000;\n", s.UpstreamKeepalive)
		location += "            proxy_http_version 1.1;\n            proxy_set_header Connection \"\";\n"
	}
	upstreamBlock += "    }\n"
	conf := fmt.Sprintf(`# written by the connlab harness
daemon off;
master_process on;
worker_processes %d;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 4096; }
http {
    log_format connlab '$msec $pid $http_x_connlab_req $upstream_connect_time|$upstream_header_time|$upstream_response_time|$upstream_http_x_connlab_conn $status';
    access_log %[2]s/access.log connlab;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    keepalive_timeout 1h;
    keepalive_requests 1000000;
%[3]s    server {
        listen %[4]s;
        location / {
%[5]s            add_header X-Connlab-Pid $pid always;
        }
    }
}
`, s.Workers, dir, upstreamBlock, n.addr, location)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	n.cmd = exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	n.cmd.SysProcAttr = childAttr()
	var stderr bytes.Buffer
	n.cmd.Stderr = &stderr
	if err := n.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	exited := make(chan struct{})
	go func() { n.cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", n.addr, time.Second)
		if err == nil {
			closeReset(c) // no TIME_WAIT to count against the run
			break
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("harness: nginx did not start: %s%s", stderr.String(), log)
		default:
		}
		if time.Now().After(deadline) {
			n.stop()
			return nil, fmt.Errorf("harness: nginx did not listen on %s", n.addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ver, _ := exec.Command(bin, "-v").CombinedOutput()
	mode := fmt.Sprintf("keepalive %d, proxy_http_version 1.1, Connection \"\"", s.UpstreamKeepalive)
	if s.Reuse != "upstream-keepalive" {
		mode = "no upstream keep-alive (HTTP/1.0, Connection: close)"
	}
	n.desc = fmt.Sprintf("%s on %s: worker_processes %d, %s", strings.TrimSpace(strings.TrimPrefix(string(ver), "nginx version: ")), n.addr, s.Workers, mode)
	n.exited = exited
	return n, nil
}

func (n *nginxProc) stop() {
	if n.cmd != nil && n.cmd.Process != nil {
		n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(5 * time.Second):
			n.cmd.Process.Kill()
			<-n.exited
		}
	}
	os.RemoveAll(n.dir)
}

// events turns nginx's access log into call events: one line per proxied
// request with the upstream's times (whole milliseconds) and the
// upstream's connection id and request number on it.
func (n *nginxProc) events(lp *labProc) error {
	// nginx writes a line after it sends the response; wait for the last.
	time.Sleep(20 * time.Millisecond)
	f, err := os.Open(filepath.Join(n.dir, "access.log"))
	if err != nil {
		return err
	}
	defer f.Close()
	t0 := lp.t0
	pids := map[int]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			continue
		}
		msec, _ := strconv.ParseFloat(f[0], 64)
		pid, _ := strconv.Atoi(f[1])
		req, _ := strconv.Atoi(f[2])
		parts := strings.Split(f[3], "|")
		if len(parts) != 4 {
			continue
		}
		w, ok := pids[pid]
		if !ok {
			w = len(pids) + 1
			pids[pid] = w
		}
		last := func(s string) string {
			v := strings.Split(s, ", ")
			return strings.TrimSpace(v[len(v)-1])
		}
		sec := func(s string) time.Duration {
			v, err := strconv.ParseFloat(last(s), 64)
			if err != nil {
				return 0
			}
			return time.Duration(v * float64(time.Second))
		}
		end := time.Unix(0, int64(msec*1e9))
		e := &sim.Event{Kind: sim.KindCall, Req: req, Call: 1, Worker: w, Retried: strings.Contains(parts[2], ",")}
		e.Total = sec(parts[2])
		e.At = end.Sub(t0.Round(0)) // wall clock against wall clock
		e.Start = e.At - e.Total
		e.Connect = sec(parts[0])
		e.StartTransfer = sec(parts[1])
		if id, nth, ok := strings.Cut(last(parts[3]), "/"); ok {
			e.Conn, _ = strconv.Atoi(id)
			e.NewConn = nth == "1"
			e.Reused = !e.NewConn
		}
		if f[4] != "200" {
			e.Error = "HTTP " + f[4] + " from nginx"
		}
		lp.emit(e)
	}
	return sc.Err()
}
