package roles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/pki"
	"github.com/connlab/connlab/sim/harness/servers"
	"github.com/connlab/connlab/sim/harness/wire"
	"github.com/connlab/connlab/sim/phpwasm"
)

// phpState is what a lab process running the php setups collects from
// its worker processes.
type phpState struct {
	mu       sync.Mutex
	infos    map[int]phpwasm.Info // by process serial, from ready lines
	measured chan phpwasm.Info    // answers to a measure job
	checks   map[string]string
	// cost is what a measure job measured.
	cost phpwasm.Info
}

// phpSetup runs a variant on PHP worker processes: node with the driver
// (PHP 8.5 in WebAssembly), or the driver in front of a native php -S
// (job.PHP.Binary), each running the lab's script once per request.
func (lp *labProc) runPHP(ctx context.Context, rep *wire.Report, cleanup *[]func()) (*wire.Report, error) {
	job := &lp.job
	if job.PHP == nil {
		return nil, errors.New("harness: a php setup needs the PHP program to run (LabJob.PHP)")
	}
	native := job.PHP.Binary != ""
	s := &job.Scenario
	lp.php = &phpState{infos: map[int]phpwasm.Info{}, measured: make(chan phpwasm.Info, 1), checks: map[string]string{}}
	warmUpstream := ""
	start := func(rep *wire.Report, cleanup *[]func()) (int, error) {
		if s.DNS > 0 && !native {
			d, err := servers.StartDNS("", 0) // the driver holds each answer for dns
			if err != nil {
				return 0, err
			}
			*cleanup = append(*cleanup, d.Close)
			lp.dnsAddr = d.Addr
			rep.Components = append(rep.Components, fmt.Sprintf("DNS: miekg/dns on %s, answers %s; the driver's resolver holds each answer %s (libcurl's resolver here is synchronous, and so is the lookup)", d.Addr, pki.APIHost, sim.FormatDuration(s.DNS)))
		}
		// PHP's sockets are not the harness's dialer: the upstream delays
		// both directions. The WebAssembly driver waits the TCP handshake's
		// round trip before it says a socket is connected, as the harness's
		// dialer does; php -S's libcurl connects at once, so there the
		// round trip is charged on the first bytes.
		who := servers.ForeignClients
		if native {
			who = servers.ForeignDialers
		}
		up, err := lp.startUpstream(who, rep, cleanup)
		if err != nil {
			return 0, err
		}
		lp.upstreamAddr = up.Addr()
		// The same server without work: for the driver's warm-up and
		// its measurements, without delay; for a native PHP's
		// measurements, over the run's round trip, and with a
		// response of headers only (see measureNativeCosts).
		w := *s
		w.RTT, w.ServerTime, w.ServerConnTime, w.ServerJitter, w.KeepaliveTimeout = 0, 0, 0, 0, 0
		cfg := servers.ConfigFor(&w, 0, servers.ForeignClients)
		if native {
			w.RTT, w.ResponseBytes = s.RTT, 0
			cfg = servers.ConfigFor(&w, s.RTT, servers.ForeignDialers)
		}
		wu, err := servers.StartUpstream("", cfg, &job.Certs, nil)
		if err != nil {
			return 0, err
		}
		*cleanup = append(*cleanup, wu.Close)
		warmUpstream = wu.Addr()
		return up.Port(), nil
	}
	lp.workerCommand = func(low bool) (*exec.Cmd, []byte, error) {
		cfg := struct {
			wire.WorkerConfig
			PHP phpwasm.Config `json:"php"`
		}{
			WorkerConfig: wire.WorkerConfig{Setup: job.Setup, Scenario: *s, Worker: 1, Upstream: lp.upstreamAddr, DNS: lp.dnsAddr,
				CAPEM: job.Certs.CAPEM, Nice: low},
			PHP: phpwasm.Config{Script: job.PHP.Script, Binary: job.PHP.Binary},
		}
		if !native {
			cfg.PHP.WarmUpstream = warmUpstream
			cfg.Warm = &job.Certs
			cfg.PHP.ConnectDelay = s.RTT
		}
		raw, err := json.Marshal(cfg)
		if err != nil {
			return nil, nil, err
		}
		return exec.Command(job.PHP.Node, job.PHP.Driver), raw, nil
	}
	lp.beforeRun = func(ctx context.Context, d *dispatcher) error {
		if native {
			co, hs, err := measureNativeCosts(ctx, job.PHP.Binary, warmUpstream, s, job.Certs.CAPEM, job.Dir)
			if err != nil {
				return err
			}
			rep.HandshakeCPU = hs
			lp.php.mu.Lock()
			lp.php.cost.ConnectCPU = co
			lp.php.mu.Unlock()
			return nil
		}
		// What a handshake and a kept connection's call cost PHP here,
		// measured by one worker once every worker is warm and idle.
		p := d.procs[0]
		if err := p.in.Send(&wire.Msg{Job: &wire.Job{Measure: true}}); err != nil {
			return err
		}
		select {
		case m := <-lp.php.measured:
			rep.HandshakeCPU = m.HandshakeCPU
			rep.ResumeCPU = m.ResumeCPU
			lp.php.mu.Lock()
			lp.php.cost = m
			lp.php.mu.Unlock()
			return nil
		case <-p.exited:
			return fmt.Errorf("harness: PHP worker process %d exited: %v", p.serial, p.err)
		case <-time.After(2 * time.Minute):
			return errors.New("harness: a PHP worker did not measure its costs within 2 minutes")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	rep, err := lp.runWorkers(ctx, rep, cleanup, start)
	if err != nil {
		return nil, err
	}
	lp.php.report(rep, s, native)
	return rep, nil
}

// workerInfo takes a PHP worker's info line: from its ready line, or the
// answer to a measure job.
func (lp *labProc) workerInfo(serial int, raw json.RawMessage, measured bool) {
	if lp.php == nil {
		return
	}
	var in phpwasm.Info
	if err := json.Unmarshal(raw, &in); err != nil {
		lp.fail(fmt.Errorf("harness: PHP worker %d: bad info line: %v", serial, err))
		return
	}
	if measured {
		select {
		case lp.php.measured <- in:
		default:
		}
		return
	}
	lp.php.mu.Lock()
	lp.php.infos[serial] = in
	lp.php.mu.Unlock()
}

// workerCheck takes one statement of a probing script.
func (lp *labProc) workerCheck(raw json.RawMessage) {
	if lp.php == nil {
		return
	}
	var c phpwasm.Check
	if err := json.Unmarshal(raw, &c); err != nil {
		lp.fail(fmt.Errorf("harness: a PHP worker's check line: %v", err))
		return
	}
	lp.php.mu.Lock()
	defer lp.php.mu.Unlock()
	if _, seen := lp.php.checks[c.ID]; seen {
		return // the first request's word
	}
	lp.php.checks[c.ID] = c.Text()
	if len(c.Notices) > 0 {
		lp.php.checks[c.ID+"_notice"] = strings.Join(c.Notices, "; ")
	}
}

// report puts what the PHP workers said into the lab's report.
func (ps *phpState) report(rep *wire.Report, s *sim.Scenario, native bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var first *phpwasm.Info
	for _, serial := range slices.Sorted(maps.Keys(ps.infos)) {
		in := ps.infos[serial]
		first = &in
		break
	}
	if first == nil {
		return
	}
	c := &ps.cost
	rt := &wire.Runtime{Name: first.Name(), ConnectCPU: c.ConnectCPU, DropCPU: c.DropCPU, ClientCPU: c.ClientCPU, ClientReadCPU: c.ClientReadCPU, RequestCPU: c.RequestCPU, CallSpread: c.CallSpread, CurlTimers: first.CurlTimers,
		Versions: map[string]string{"php": first.PHP, "curl": first.Curl, "ssl": first.SSL, "runtime": first.Runtime,
			"persistent_share": map[bool]string{true: "defined", false: "undefined"}[first.PersistentShare]}}
	if first.Package != "" {
		rt.Versions["package"] = first.Package
	}
	rep.Runtime = rt
	if len(ps.checks) > 0 {
		rep.Checks = ps.checks
	}
	switch {
	case native:
		us := func(d time.Duration) string { return sim.FormatDuration(d.Round(time.Microsecond)) }
		costs, keys := "opening a connection costs it "+us(c.ConnectCPU)+" of CPU", "connect_cpu"
		if s.TLS != sim.TLSNone {
			costs += fmt.Sprintf(" and a full TLS %s handshake (%s) with the Go upstream %s", s.TLS, s.Cert, us(rep.HandshakeCPU))
			keys += ", handshake_cpu"
		}
		rep.Components = append(rep.Components, fmt.Sprintf("%s: its own libcurl and OpenSSL at native speed; the API's name is given its address (CURLOPT_RESOLVE), so no lookup is made; %s, measured here before the run over the run's round trip and given to the model (%s)", first.Name(), costs, keys))
	default:
		us := func(d time.Duration) string { return sim.FormatDuration(d.Round(time.Microsecond)) }
		hs := ""
		keys := "connect_cpu, "
		if s.TLS != sim.TLSNone {
			hs = fmt.Sprintf(", a full TLS %s handshake (%s) %s", s.TLS, s.Cert, us(rep.HandshakeCPU))
			keys += "handshake_cpu, "
		}
		if rep.ResumeCPU > 0 {
			hs += fmt.Sprintf(", a resumed one %s", us(rep.ResumeCPU))
			keys += "resume_cpu, "
		}
		rep.Components = append(rep.Components, fmt.Sprintf("%s: measured here before the run (on a path without delay), opening a connection costs %s of CPU%s, dropping one the server closed %s, a call %s before the answer's first byte and %s after it, a request %s besides its calls; the model is given them (%sdrop_cpu, client_cpu, client_read_cpu, and app_time on top of the block's), not native curl's speed",
			first.Name(), us(c.ConnectCPU), hs, us(c.DropCPU), us(c.ClientCPU), us(c.ClientReadCPU), us(c.RequestCPU), keys))
	}
}

// nativeCostScript opens new connections to the server at the port given
// as the first argument (the scheme is the fourth), as many as the third
// says, each with a new curl handle and no TLS session to resume, and
// prints for each what its TCP connect and its TLS handshake took (curl's
// connect less namelookup, appconnect less connect, in µs).
const nativeCostScript = `$port = (int)$argv[1];
for ($i = 0; $i < (int)$argv[3]; $i++) {
    $ch = curl_init("$argv[4]://%s:$port/");
    curl_setopt_array($ch, [CURLOPT_RETURNTRANSFER => true, CURLOPT_CAINFO => $argv[2],
        CURLOPT_RESOLVE => ["%s:$port:127.0.0.1"], CURLOPT_SSL_SESSIONID_CACHE => false]);
    if (curl_exec($ch) === false) { echo "error: ", curl_error($ch), "\n"; exit(1); }
    $co = curl_getinfo($ch, CURLINFO_CONNECT_TIME_T) - curl_getinfo($ch, CURLINFO_NAMELOOKUP_TIME_T);
    $hs = $argv[4] === 'https' ? curl_getinfo($ch, CURLINFO_APPCONNECT_TIME_T) - curl_getinfo($ch, CURLINFO_CONNECT_TIME_T) : 0;
    echo "$co $hs\n";
    $ch = null;
}`

// handshakeRTTs is how many round trips a full handshake of TLS version v
// takes (the model's, sim's tlsHandshake).
func handshakeRTTs(v sim.TLSVersion) int {
	if v == sim.TLS12 {
		return 2
	}
	return 1
}

// measureNativeCosts measures what opening a connection to the Go upstream
// at addr costs a native PHP, its libcurl and OpenSSL, for the model's
// connect_cpu and handshake_cpu (the Go handshake the lab process measures
// for its own clients does not price a full TLS handshake on the client's
// side). The upstream emulates the run's round trip, charging the
// connect's on the first bytes (servers.ForeignDialers): curl's connect is
// its CPU alone, and a handshake's time less its 1+rtts round trips is its
// cost. Measured back to back over a path without delay, a handshake cost
// less than the same handshake whose flights are separated by round trips,
// as in a run (work that follows a wait ran slower). The median of the
// last four fifths of n connections: 20, fewer where round trips are long
// (6 at least). The CA file is made in dir (the parent's folder for the
// run, "": the system's temporary folder).
func measureNativeCosts(ctx context.Context, php, addr string, s *sim.Scenario, caPEM []byte, dir string) (connect, handshake time.Duration, err error) {
	scheme, rtts := "http", 0
	if s.TLS != sim.TLSNone {
		scheme, rtts = "https", handshakeRTTs(s.TLS)
	}
	n := 20
	if s.RTT > 0 {
		n = max(6, min(n, int(2*time.Second/(time.Duration(2+rtts)*s.RTT))))
	}
	fail := func(format string, a ...any) (time.Duration, time.Duration, error) {
		return 0, 0, fmt.Errorf("harness: measuring what a connection costs native PHP: "+format, a...)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fail("%w", err)
	}
	f, err := os.CreateTemp(dir, "connlab-php-ca-*.pem")
	if err != nil {
		return fail("%w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(caPEM); err != nil {
		f.Close()
		return fail("%w", err)
	}
	if err := f.Close(); err != nil {
		return fail("%w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	code := fmt.Sprintf(nativeCostScript, pki.APIHost, pki.APIHost)
	out, err := exec.CommandContext(ctx, php, "-r", code, port, f.Name(), strconv.Itoa(n), scheme).CombinedOutput()
	if err != nil {
		return fail("%s: %v: %s", php, err, strings.TrimSpace(string(out)))
	}
	var cos, hss []time.Duration
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var co, hs int64
		if k, err := fmt.Sscanf(l, "%d %d", &co, &hs); k != 2 || err != nil || co < 0 || hs < 0 {
			return fail("PHP printed %q", strings.TrimSpace(string(out)))
		}
		cos = append(cos, time.Duration(co)*time.Microsecond)
		if rtts > 0 {
			hss = append(hss, max(0, time.Duration(hs)*time.Microsecond-time.Duration(1+rtts)*s.RTT))
		}
	}
	if len(cos) < n {
		return fail("%d of %d connections", len(cos), n)
	}
	median := func(xs []time.Duration) time.Duration {
		if len(xs) == 0 {
			return 0
		}
		xs = slices.Sorted(slices.Values(xs[n/5:]))
		return xs[len(xs)/2]
	}
	return median(cos), median(hss), nil
}
