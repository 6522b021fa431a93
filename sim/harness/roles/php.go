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
		if !native || s.TLS != sim.TLSNone {
			// The same server without delay or work, for the driver's
			// warm-up and its measurements (a native PHP's: its TLS
			// handshake only).
			w := *s
			w.RTT, w.ServerTime, w.ServerConnTime, w.ServerJitter, w.KeepaliveTimeout = 0, 0, 0, 0, 0
			wu, err := servers.StartUpstream("", servers.ConfigFor(&w, 0, servers.ForeignClients), &job.Certs, nil)
			if err != nil {
				return 0, err
			}
			*cleanup = append(*cleanup, wu.Close)
			warmUpstream = wu.Addr()
		}
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
			if s.TLS == sim.TLSNone {
				return nil
			}
			hs, err := measureNativeHandshake(ctx, job.PHP.Binary, warmUpstream, job.Certs.CAPEM, job.Dir)
			if err != nil {
				return err
			}
			rep.HandshakeCPU = hs
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
	rt := &wire.Runtime{Name: first.Name(), ConnectCPU: c.ConnectCPU, ClientCPU: c.ClientCPU, ClientReadCPU: c.ClientReadCPU, RequestCPU: c.RequestCPU, CurlTimers: first.CurlTimers,
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
		hs := ""
		if s.TLS != sim.TLSNone {
			hs = fmt.Sprintf("; a full TLS %s handshake (%s) with the Go upstream costs it %s of CPU, measured here before the run (on a path without delay) and given to the model (handshake_cpu)", s.TLS, s.Cert, sim.FormatDuration(rep.HandshakeCPU.Round(time.Microsecond)))
		}
		rep.Components = append(rep.Components, fmt.Sprintf("%s: its own libcurl and OpenSSL at native speed; the API's name is given its address (CURLOPT_RESOLVE), so no lookup is made%s", first.Name(), hs))
	default:
		us := func(d time.Duration) string { return sim.FormatDuration(d.Round(time.Microsecond)) }
		hs := ""
		if s.TLS != sim.TLSNone {
			hs = fmt.Sprintf(", a full TLS %s handshake (%s) %s", s.TLS, s.Cert, us(rep.HandshakeCPU))
		}
		rep.Components = append(rep.Components, fmt.Sprintf("%s: measured here before the run (on a path without delay), opening a connection costs %s of CPU%s, a call %s before the answer's first byte and %s after it, a request %s besides its calls; the model is given them (connect_cpu, handshake_cpu, client_cpu, client_read_cpu, and app_time on top of the block's), not native curl's speed",
			first.Name(), us(c.ConnectCPU), hs, us(c.ClientCPU), us(c.ClientReadCPU), us(c.RequestCPU)))
	}
}

// nativeHandshakeScript opens new connections to the server at the port
// given as the first argument, each with a new curl handle and no TLS
// session to resume, and prints what each full handshake took (curl's
// appconnect less connect, in µs), one per line.
const nativeHandshakeScript = `$port = (int)$argv[1];
for ($i = 0; $i < 20; $i++) {
    $ch = curl_init("https://%s:$port/");
    curl_setopt_array($ch, [CURLOPT_RETURNTRANSFER => true, CURLOPT_CAINFO => $argv[2],
        CURLOPT_RESOLVE => ["%s:$port:127.0.0.1"], CURLOPT_SSL_SESSIONID_CACHE => false]);
    if (curl_exec($ch) === false) { echo "error: ", curl_error($ch), "\n"; exit(1); }
    echo curl_getinfo($ch, CURLINFO_APPCONNECT_TIME_T) - curl_getinfo($ch, CURLINFO_CONNECT_TIME_T), "\n";
    $ch = null;
}`

// measureNativeHandshake measures what a full TLS handshake with the Go
// upstream at addr (a loopback server without delay) costs a native PHP:
// its libcurl and OpenSSL on the client side, which the Go handshake the
// lab process measures for its own clients does not price. The median of
// the last 16 of 20 new connections. The CA file is made in dir (the
// parent's folder for the run, "": the system's temporary folder).
func measureNativeHandshake(ctx context.Context, php, addr string, caPEM []byte, dir string) (time.Duration, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("harness: measuring native PHP's handshake: %w", err)
	}
	f, err := os.CreateTemp(dir, "connlab-php-ca-*.pem")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(caPEM); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	code := fmt.Sprintf(nativeHandshakeScript, pki.APIHost, pki.APIHost)
	out, err := exec.CommandContext(ctx, php, "-r", code, port, f.Name()).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("harness: measuring native PHP's handshake (%s): %v: %s", php, err, strings.TrimSpace(string(out)))
	}
	var us []int
	for _, l := range strings.Fields(string(out)) {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("harness: measuring native PHP's handshake: PHP printed %q", strings.TrimSpace(string(out)))
		}
		us = append(us, n)
	}
	if len(us) < 20 {
		return 0, fmt.Errorf("harness: measuring native PHP's handshake: %d of 20 connections", len(us))
	}
	us = us[4:]
	slices.Sort(us)
	return time.Duration(us[len(us)/2]) * time.Microsecond, nil
}
