package phpwasm

import (
	"bufio"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/kernel"
)

const root = "../.."

var labDir = filepath.Join(root, "labs", "php-persistent-share")

// wire is a worker's event line as the driver writes it (the harness's
// wireEvent keys).
type wire struct {
	K  sim.Kind `json:"k"`
	At int64    `json:"at"`
	R  int      `json:"r"`
	C  int      `json:"c"`
	N  int      `json:"n"`
	S  int64    `json:"s"`
	NC bool     `json:"nc"`
	RU bool     `json:"ru"`
	NL int64    `json:"nl"`
	CO int64    `json:"co"`
	AC int64    `json:"ac"`
	ST int64    `json:"st"`
	T  int64    `json:"t"`
	LP int      `json:"lp"`
	BY string   `json:"by"`
	RS string   `json:"rs"`
	ER string   `json:"er"`
}

type line struct {
	Ready bool   `json:"ready"`
	Info  *Info  `json:"info"`
	Ev    *wire  `json:"ev"`
	Check *Check `json:"check"`
	Done  int    `json:"done"`
	Fail  bool   `json:"fail"`
	Error string `json:"error"`
}

// certs makes a CA and a certificate for api.connlab.test signed by it.
type certs struct {
	caPEM, leafPEM []byte // leafPEM: certificate and PKCS#8 key
	leaf           tls.Certificate
}

func newCerts(t testing.TB) *certs {
	t.Helper()
	caKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "phpwasm test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "api.connlab.test"},
		DNSNames: []string{"api.connlab.test"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	p8, _ := x509.MarshalPKCS8PrivateKey(key)
	c := &certs{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	c.leafPEM = append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})...)
	c.leaf, err = tls.X509KeyPair(c.leafPEM, c.leafPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// upstream is an HTTPS server with keep-alive that counts the connections
// it accepts; idle closes a connection idle that long (0: never).
type upstream struct {
	addr     string
	accepted atomic.Int64
}

func startUpstream(t testing.TB, c *certs, idle time.Duration) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{addr: ln.Addr().String()}
	body := strings.Repeat("x", 900)
	srv := &http.Server{
		Handler:     http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }),
		IdleTimeout: idle,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				u.accepted.Add(1)
			}
		},
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{c.leaf}, MinVersion: tls.VersionTLS13, NextProtos: []string{"http/1.1"}},
	}
	if idle == 0 {
		srv.IdleTimeout = time.Hour
	}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return u
}

// startDNS answers A queries under connlab.test with 127.0.0.1 at once (the
// driver holds the answer for the scenario's dns) and counts them.
func startDNS(t testing.TB) (string, *atomic.Int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		if qs := q.Question[0]; qs.Qtype == dns.TypeA && dns.IsSubDomain("connlab.test.", qs.Name) {
			n.Add(1)
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: qs.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(127, 0, 0, 1)})
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return pc.LocalAddr().String(), &n
}

// proc is one driver process.
type proc struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan line
	t0     int64
	ready  line
	events []wire
	checks []Check
	mu     sync.Mutex
}

type opts struct {
	script   string
	scenario sim.Scenario
	dns      string
	warm     bool
	stock    bool
	binary   string // a PHP CLI instead of PHP 8.5 in WebAssembly
	clamp    bool   // Node's 1 ms setTimeout(0)
}

func startDriver(t testing.TB, c *certs, up *upstream, o opts) *proc {
	t.Helper()
	return startDriverCerts(t, c, c, up, o)
}

// startDriverCerts starts a driver whose calls trust c's CA and whose
// warm-up server uses warm's certificate.
func startDriverCerts(t testing.TB, c, warm *certs, up *upstream, o opts) *proc {
	t.Helper()
	driver, node, err := Find(root)
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(node, driver)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outR, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, in: in, lines: make(chan line, 1024), t0: time.Now().UnixNano()}
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Errorf("the driver did not exit within 10 s of its stdin closing")
		}
	})
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("driver printed a line that is not JSON: %q", sc.Text())
				continue
			}
			p.lines <- l
		}
		close(p.lines)
	}()
	cfg := map[string]any{"setup": "http", "worker": 1, "upstream": up.addr, "dns": o.dns, "ca": c.caPEM, "scenario": o.scenario,
		"php": Config{Script: o.script, StockSelect: o.stock, Binary: o.binary, TimerClamp: o.clamp}}
	if o.warm {
		cfg["warm"] = map[string][]byte{"CAPEM": warm.caPEM, "RSAPEM": warm.leafPEM}
	}
	p.send(map[string]any{"config": cfg})
	p.ready = p.next()
	if !p.ready.Ready || p.ready.Info == nil {
		t.Fatalf("driver's first line is not ready with its info: %+v", p.ready)
	}
	return p
}

func (p *proc) send(m any) {
	b, _ := json.Marshal(m)
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("writing to the driver: %v", err)
	}
}

func (p *proc) next() line {
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("the driver ended")
		}
		if l.Error != "" {
			p.t.Fatalf("driver: %s", l.Error)
		}
		return l
	case <-time.After(60 * time.Second):
		p.t.Fatalf("no line from the driver in 60 s")
	}
	return line{}
}

// serve runs request req and returns its call events.
func (p *proc) serve(req int) []wire {
	p.send(map[string]any{"job": map[string]any{"req": req, "t0": p.t0}})
	var calls []wire
	for {
		l := p.next()
		switch {
		case l.Ev != nil:
			p.events = append(p.events, *l.Ev)
			if l.Ev.K == sim.KindCall {
				calls = append(calls, *l.Ev)
			}
		case l.Check != nil:
			p.checks = append(p.checks, *l.Check)
		case l.Done == req:
			return calls
		}
	}
}

// exit asks the driver to exit and collects its last events.
func (p *proc) exit() {
	p.send(map[string]any{"job": map[string]any{"req": 0, "exit": true}})
	for l := range p.lines {
		if l.Ev != nil {
			p.events = append(p.events, *l.Ev)
		}
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Errorf("driver exited with %v", err)
	}
}

func connects(calls []wire) []int {
	var n []int
	for _, c := range calls {
		if c.NC {
			n = append(n, 1)
		} else {
			n = append(n, 0)
		}
	}
	return n
}

func scenario(reuse string, calls int) sim.Scenario {
	s := sim.Default()
	s.Reuse, s.CallsPerRequest, s.DNS = sim.Reuse(reuse), calls, 30*time.Millisecond
	return s
}

func script(t *testing.T, variant string, s *sim.Scenario) string {
	t.Helper()
	p, err := ScriptFor(labDir, variant, s)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(p)
	return abs
}

// TestAcrossRequests: a share handle dies with the request, so every
// request connects (and looks the name up); the persistent handle
// connects once per worker process.
func TestAcrossRequests(t *testing.T) {
	c := newCerts(t)
	for _, tc := range []struct {
		variant, reuse string
		want           []int
	}{
		{"share", "request", []int{1, 1, 1, 1}},
		{"persistent", "process", []int{1, 0, 0, 0}},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			up := startUpstream(t, c, 0)
			dnsAddr, lookups := startDNS(t)
			s := scenario(tc.reuse, 1)
			p := startDriver(t, c, up, opts{script: script(t, tc.variant, &s), scenario: s, dns: dnsAddr})
			var got []int
			for r := 1; r <= 4; r++ {
				calls := p.serve(r)
				if len(calls) != 1 || calls[0].ER != "" {
					t.Fatalf("request %d: calls %+v", r, calls)
				}
				if e := calls[0]; e.NC && e.NL < int64(30*time.Millisecond) {
					t.Errorf("request %d: a new connection's lookup took %v, less than the scenario's dns (30 ms)", r, time.Duration(e.NL))
				}
				got = append(got, connects(calls)...)
			}
			p.exit()
			if !slices.Equal(got, tc.want) {
				t.Errorf("num_connects = %v, want %v", got, tc.want)
			}
			want := int64(slices.Index(tc.want, 0))
			if want < 0 {
				want = int64(len(tc.want))
			}
			if n := up.accepted.Load(); n != want {
				t.Errorf("the server accepted %d connections, want %d", n, want)
			}
			if n := lookups.Load(); n != want {
				t.Errorf("the DNS server answered %d lookups, want %d (one per new connection here)", n, want)
			}
			if p.ready.Info == nil || !strings.HasPrefix(p.ready.Info.PHP, "8.5.") {
				t.Errorf("versions = %+v, want PHP 8.5.x", p.ready.Info)
			}
		})
	}
}

// TestWithinScript: in one CLI request of three calls, the second and the
// third reuse the first's connection with a reused handle, a share handle
// and the persistent handle alike.
func TestWithinScript(t *testing.T) {
	c := newCerts(t)
	for _, tc := range []struct{ variant, reuse string }{{"handle", "request"}, {"share", "request"}, {"persistent", "process"}} {
		t.Run(tc.variant, func(t *testing.T) {
			up := startUpstream(t, c, 0)
			s := scenario(tc.reuse, 3)
			s.Mode = "cli"
			p := startDriver(t, c, up, opts{script: script(t, tc.variant, &s), scenario: s})
			calls := p.serve(1)
			p.exit()
			if got := connects(calls); !slices.Equal(got, []int{1, 0, 0}) {
				t.Errorf("num_connects = %v, want [1 0 0]", got)
			}
			if calls[1].N != calls[0].N || calls[2].N != calls[0].N {
				t.Errorf("connection ids %d %d %d, want one", calls[0].N, calls[1].N, calls[2].N)
			}
		})
	}
}

// TestIdle: the server closes a connection idle for 750 ms (75 s ÷ 100);
// after an 800 ms pause the first call connects again, without an error,
// and after a 600 ms pause it does not.
//
// Both hang on timers: the idle time the server sees is the pause plus
// the next request's start-up in PHP (under 50 ms with two busy loops
// beside the test), and the server closes when its own timer fires, some
// 50 ms before the 800 ms pause's request. When other programs keep the
// machine busy (kernel.BusyDuring) either can be late: the 800 ms pause's
// request has met the close (it connected again, but the driver counted
// no close by the server), and a start-up past 750 ms rightly loses the
// 600 ms pause's connection. Then what missed is reported, not asserted.
func TestIdle(t *testing.T) {
	c := newCerts(t)
	for _, tc := range []struct {
		pause time.Duration
		want  []int
	}{{800 * time.Millisecond, []int{1, 0, 1, 0}}, {600 * time.Millisecond, []int{1, 0, 0, 0}}} {
		t.Run(tc.pause.String(), func(t *testing.T) {
			up := startUpstream(t, c, 750*time.Millisecond)
			s := scenario("process", 1)
			p := startDriver(t, c, up, opts{script: script(t, "persistent", &s), scenario: s})
			var got []int
			var ends, starts []int64
			busy := kernel.BusyDuring(func() {
				for r := 1; r <= 4; r++ {
					if r == 3 {
						time.Sleep(tc.pause)
					}
					calls := p.serve(r)
					if calls[0].ER != "" {
						t.Errorf("request %d: %s", r, calls[0].ER)
					}
					got = append(got, connects(calls)...)
					starts, ends = append(starts, calls[0].S), append(ends, calls[0].At)
				}
			})
			p.exit()
			idle := time.Duration(starts[2] - ends[1])
			t.Logf("the connection sat idle %v for a pause of %v", idle, tc.pause)
			byServer := 0
			for _, e := range p.events {
				if e.K == sim.KindClose && e.BY == "server" {
					byServer++
				}
			}
			// Past 700 ms the 600 ms pause's comparison means nothing: on a
			// quiet machine the start-up itself is too slow.
			slowStart := tc.want[2] == 0 && idle > 700*time.Millisecond
			missed := slowStart || !slices.Equal(got, tc.want) || byServer != tc.want[2]
			if missed {
				for _, e := range p.events {
					t.Logf("%s at %v conn %d start %v total %v by %s", e.K, time.Duration(e.At), e.N, time.Duration(e.S), time.Duration(e.T), e.BY)
				}
			}
			if missed && busy != "" {
				t.Skipf("num_connects %v (want %v), %d close events by the server (want %d) after %v idle; not asserted: %s",
					got, tc.want, byServer, tc.want[2], idle, busy)
			}
			if slowStart {
				t.Errorf("the connection sat idle %v for a pause of %v on a quiet machine: the request started slowly", idle, tc.pause)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("num_connects = %v, want %v", got, tc.want)
			}
			if want := tc.want[2]; byServer != want {
				t.Errorf("%d close events by the server, want %d", byServer, want)
			}
		})
	}
}

// TestSelect: a connection idle for more than a second, the server keeping
// it, is reused. With php-wasm's own select() it is not: libcurl 7.69.1
// examines idle connections at most once a second, and that select() says
// every open socket is readable, so the connection "seems to be dead".
func TestSelect(t *testing.T) {
	c := newCerts(t)
	for _, tc := range []struct {
		stock bool
		want  []int
	}{{false, []int{1, 0}}, {true, []int{1, 1}}} {
		t.Run(map[bool]string{false: "fixed", true: "php-wasm"}[tc.stock], func(t *testing.T) {
			up := startUpstream(t, c, 0)
			s := scenario("process", 1)
			p := startDriver(t, c, up, opts{script: script(t, "persistent", &s), scenario: s, stock: tc.stock})
			got := connects(p.serve(1))
			time.Sleep(1100 * time.Millisecond)
			got = append(got, connects(p.serve(2))...)
			p.exit()
			if !slices.Equal(got, tc.want) {
				t.Errorf("num_connects = %v, want %v", got, tc.want)
			}
			if p.ready.Info.SelectFix == tc.stock {
				t.Errorf("versions.select_fix = %v with stock_select %v", p.ready.Info.SelectFix, tc.stock)
			}
		})
	}
}

// TestOptionSets: the same set in another order is the same handle; a
// DNS-only set is another handle, which connects again.
func TestOptionSets(t *testing.T) {
	c := newCerts(t)
	for _, tc := range []struct {
		name string
		sets [][]string
		want []int
	}{
		{"reordered", [][]string{{"dns", "connect", "ssl_session"}, {"ssl_session", "connect", "dns"}}, []int{1, 0}},
		{"dns-only", [][]string{{"dns", "connect", "ssl_session"}, {"dns"}}, []int{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := startUpstream(t, c, 0)
			s := scenario("process", 1)
			s.ShareSets = tc.sets
			p := startDriver(t, c, up, opts{script: script(t, tc.name, &s), scenario: s})
			got := append(connects(p.serve(1)), connects(p.serve(2))...)
			p.exit()
			if !slices.Equal(got, tc.want) {
				t.Errorf("num_connects = %v, want %v", got, tc.want)
			}
		})
	}
}

// PHP 8.5's own words for what identity.php probes, as PHP 8.5.10 printed
// them.
var phpSays = map[string]string{
	"identical":   "false",
	"class":       "CurlSharePersistentHandle",
	"setopt":      "TypeError: curl_share_setopt(): Argument #1 ($share_handle) must be of type CurlShareHandle, CurlSharePersistentHandle given",
	"close":       "TypeError: curl_share_close(): Argument #1 ($share_handle) must be of type CurlShareHandle, CurlSharePersistentHandle given",
	"close_plain": "NULL",
}

// TestIdentity runs identity.php: two handles for one set in two orders are
// not === yet share one pool; curl_share_setopt() and curl_share_close()
// on the persistent handle are TypeErrors, and curl_share_close() is
// deprecated.
func TestIdentity(t *testing.T) {
	c := newCerts(t)
	up := startUpstream(t, c, 0)
	s := scenario("process", 1)
	p := startDriver(t, c, up, opts{script: filepath.Join(must(filepath.Abs(labDir)), "identity.php"), scenario: s})
	calls := p.serve(1)
	p.exit()
	if got := connects(calls); !slices.Equal(got, []int{1, 0}) {
		t.Errorf("a call on $a then one on $b: num_connects %v, want [1 0]", got)
	}
	got := map[string]string{}
	for _, c := range p.checks {
		got[c.ID] = c.Text()
		if strings.HasPrefix(c.ID, "close") && !slices.ContainsFunc(c.Notices, func(n string) bool { return strings.Contains(n, "deprecated since 8.5") }) {
			t.Errorf("%s: no deprecation notice: %v", c.ID, c.Notices)
		}
	}
	for k, want := range phpSays {
		if got[k] != want {
			t.Errorf("%s:\n got  %q\n want %q", k, got[k], want)
		}
	}
}

// TestShareErrors: what curl_share_init_persistent() throws for a bad set,
// run by the lab's option-sets.php, is word for word what the model
// rejects the set with (sim.ShareMask).
func TestShareErrors(t *testing.T) {
	c := newCerts(t)
	up := startUpstream(t, c, 0)
	sets := [][]string{{"dns", "cookie"}, {}, {"dns", "CURLOPT_URL"}, {"dns", "'connect'"}}
	s := scenario("process", 1)
	s.ShareSets = sets
	p := startDriver(t, c, up, opts{script: filepath.Join(must(filepath.Abs(labDir)), "option-sets.php"), scenario: s})
	for i, set := range sets {
		calls := p.serve(i + 1)
		_, want := sim.ShareMask(set)
		if want == nil {
			t.Fatalf("%q: the model accepts it", set)
		}
		if len(calls) != 1 || calls[0].ER != want.Msg {
			t.Errorf("%q: PHP said %+v\n want %q", set, calls, want.Msg)
		}
	}
	p.exit()
	if n := up.accepted.Load(); n != 0 {
		t.Errorf("the server accepted %d connections; PHP throws before any", n)
	}
}

// TestWarm: a driver given the harness's certificates warms up before it is
// ready and reports a TLS handshake's CPU, a call's, and what dropping a
// kept connection the server closed costs, from three pairs of calls or
// more (the median of differences, which can be 0: see Info.DropPairs), and
// how much one new connection's call varies.
func TestWarm(t *testing.T) {
	c := newCerts(t)
	up := startUpstream(t, c, 0)
	s := scenario("process", 1)
	p := startDriver(t, c, up, opts{script: script(t, "persistent", &s), scenario: s, warm: true})
	calls := p.serve(1)
	p.exit()
	if in := p.ready.Info; in.HandshakeCPU <= 0 || in.ClientCPU <= 0 || in.DropPairs < 3 || in.DropCPU < 0 {
		t.Errorf("handshake_cpu = %v, client_cpu = %v, drop_cpu = %v of %d pairs, want handshake and call > 0, a drop of 3 pairs or more", in.HandshakeCPU, in.ClientCPU, in.DropCPU, in.DropPairs)
	}
	// The calls' CPU spreads (p90 less median of 16 sums in µs): never
	// none, nor so wide that nothing was measured.
	if in := p.ready.Info; in.CallSpread <= 0 || in.CallSpread > time.Second {
		t.Errorf("call_spread = %v, want > 0 and under a second", in.CallSpread)
	}
	if len(calls) != 1 || !calls[0].NC || calls[0].N != 1 {
		t.Errorf("the first call after warm-up: %+v, want a new connection numbered 1 (warm-up's are not the run's)", calls)
	}
	for _, e := range p.events {
		if e.K == sim.KindOpen && e.N != 1 {
			t.Errorf("an open event of warm-up reached the run: %+v", e)
		}
	}
}

// TestStdinEnd: a driver whose harness goes away (stdin ends) exits.
func TestStdinEnd(t *testing.T) {
	c := newCerts(t)
	up := startUpstream(t, c, 0)
	s := scenario("process", 1)
	p := startDriver(t, c, up, opts{script: script(t, "persistent", &s), scenario: s})
	p.serve(1)
	p.in.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the driver still runs 10 s after its stdin ended")
	}
}

// TestBefore85 runs the lab's scripts on Debian's PHP (8.2) as one php -S
// worker, and the page's fallback code on both: before 8.5 the fallback
// connects on every request and curl_share_init_persistent() does not
// exist; on 8.5 the same code connects once.
func TestBefore85(t *testing.T) {
	bin, ver, err := FindNative()
	if err != nil {
		t.Skip(err)
	}
	if strings.HasPrefix(ver, "8.5") || ver >= "8.5" {
		t.Skipf("the php on PATH is %s, not a PHP before 8.5", ver)
	}
	c := newCerts(t)
	dir := must(filepath.Abs(labDir))
	for _, tc := range []struct {
		name, script, binary string
		want                 []int
		err                  string
	}{
		{"fallback-" + ver, "fallback.php", bin, []int{1, 1, 1, 1}, ""},
		{"share-" + ver, "share.php", bin, []int{1, 1, 1, 1}, ""},
		{"persistent-" + ver, "persistent.php", bin, nil, "Error: Call to undefined function curl_share_init_persistent()"},
		{"fallback-8.5", "fallback.php", "", []int{1, 0, 0, 0}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := startUpstream(t, c, 0)
			s := scenario("process", 1)
			p := startDriver(t, c, up, opts{script: filepath.Join(dir, tc.script), scenario: s, binary: tc.binary})
			var got []int
			var errs []string
			for r := 1; r <= 4; r++ {
				for _, e := range p.serve(r) {
					if e.ER != "" {
						errs = append(errs, e.ER)
						continue
					}
					got = append(got, connects([]wire{e})...)
					if e.T <= 0 || e.N == 0 {
						t.Errorf("request %d: total %d, connection %d: want both set", r, e.T, e.N)
					}
				}
			}
			p.exit()
			if !slices.Equal(got, tc.want) {
				t.Errorf("num_connects = %v, want %v", got, tc.want)
			}
			if tc.err != "" && (len(errs) != 4 || errs[0] != tc.err) {
				t.Errorf("errors %q, want %q on each of 4 requests", errs, tc.err)
			}
			if tc.err == "" && len(errs) > 0 {
				t.Errorf("errors: %q", errs)
			}
			if v := p.ready.Info.PHP; tc.binary != "" && v != ver {
				t.Errorf("versions.php = %q, want %q", v, ver)
			}
			if int64(len(tc.want)) > 0 && up.accepted.Load() != int64(slices.Index(append(slices.Clone(tc.want), 0), 0)) {
				t.Errorf("the server accepted %d connections for num_connects %v", up.accepted.Load(), tc.want)
			}
		})
	}
}

// startNative starts a driver on the php found on PATH (the test skips
// without one) and serves one request, so that its php -S child runs; the
// ready line must name that child (p.ready.Info.Child).
func startNative(t *testing.T) *proc {
	t.Helper()
	bin, _, err := FindNative()
	if err != nil {
		t.Skip(err)
	}
	c := newCerts(t)
	up := startUpstream(t, c, 0)
	p := startDriver(t, c, up, opts{script: filepath.Join(must(filepath.Abs(labDir)), "share.php"), scenario: scenario("request", 1), binary: bin})
	p.serve(1)
	if ch := p.ready.Info.Child; ch == nil || ch.PID == 0 || ch.Dir == "" {
		t.Fatalf("ready line has no child: %+v", p.ready)
	}
	return p
}

// TestNativeSignal: a native driver killed with SIGTERM (the harness's
// Ctrl-C) stops its php -S process and removes its temporary folder.
func TestNativeSignal(t *testing.T) {
	p := startNative(t)
	ch := p.ready.Info.Child
	if _, err := os.Stat(ch.Dir); err != nil {
		t.Fatalf("php -S folder: %v", err)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, errDir := os.Stat(ch.Dir)
		alive := syscall.Kill(ch.PID, 0) == nil
		if zombie, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", ch.PID)); alive && strings.Contains(string(zombie), ") Z ") {
			alive = false // exited, not yet reaped by init
		}
		if !alive && os.IsNotExist(errDir) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGTERM: php -S pid %d alive %v, folder %s: %v", ch.PID, alive, ch.Dir, errDir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestScriptFor(t *testing.T) {
	for _, tc := range []struct {
		variant, reuse string
		sets           [][]string
		want           string
	}{
		{"handle", "request", nil, "handle.php"},
		{"share", "request", nil, "share.php"},
		{"persistent", "process", nil, "persistent.php"},
		{"dns-only", "process", [][]string{{"dns", "connect", "ssl_session"}, {"dns"}}, "option-sets.php"},
	} {
		s := sim.Default()
		s.Reuse = sim.Reuse(tc.reuse)
		if tc.sets != nil {
			s.ShareSets = tc.sets
		}
		got, err := ScriptFor(labDir, tc.variant, &s)
		if err != nil || filepath.Base(got) != tc.want {
			t.Errorf("%s: %q, %v; want %s", tc.variant, got, err, tc.want)
		}
	}
	s := sim.Default()
	s.Reuse = "pool"
	if _, err := ScriptFor(labDir, "x", &s); err == nil || !strings.Contains(err.Error(), `reuse = "pool"`) {
		t.Errorf("reuse = pool: %v, want an error naming it", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestScriptShareSets: a block's share_sets reach only a script that reads
// SHARE_OPTIONS; naming another script with them (sim validate --set
// share_sets=... on a block that runs persistent.php) is an error, since
// the real run would use the script's own options and the model the sets.
func TestScriptShareSets(t *testing.T) {
	s := sim.Default()
	s.Reuse = "process"
	if _, err := Script(labDir, "persistent.php", "v", &s); err != nil {
		t.Errorf("persistent.php with the default share sets: %v", err)
	}
	s.ShareSets = [][]string{{"dns", "ssl_session"}}
	_, err := Script(labDir, "persistent.php", "v", &s)
	if err == nil || !strings.Contains(err.Error(), "share_sets") || !strings.Contains(err.Error(), "persistent.php") || !strings.Contains(err.Error(), `"ssl_session"`) {
		t.Errorf("persistent.php with share_sets [[dns ssl_session]]: %v, want an error naming both", err)
	}
	if _, err := Script(labDir, "option-sets.php", "v", &s); err != nil {
		t.Errorf("option-sets.php with share_sets [[dns ssl_session]]: %v", err)
	}
	s.Reuse = "request" // no script named: ScriptFor's share.php
	if _, err := Script(labDir, "", "share", &s); err == nil || !strings.Contains(err.Error(), "share.php") {
		t.Errorf("reuse = request with share_sets [[dns ssl_session]]: %v, want an error naming share.php", err)
	}
	s.Reuse = "none"
	if _, err := Script(labDir, "persistent.php", "v", &s); err != nil {
		t.Errorf("reuse = none (no share handle to give the sets): %v", err)
	}
}
