package roles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
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
		if !native {
			// The same server without delay or work, for the driver's
			// warm-up and its measurements.
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
			PHP: phpwasm.Config{Script: job.PHP.Script, Binary: job.PHP.Binary, WarmUpstream: warmUpstream},
		}
		if !native {
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
		rep.Components = append(rep.Components, fmt.Sprintf("%s: its own libcurl and OpenSSL at native speed; the API's name is given its address (CURLOPT_RESOLVE), so no lookup is made", first.Name()))
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
