// Package harness runs connlab's lab blocks against real servers on
// loopback, with the same parameters the model uses, so that model and
// measurement can be set side by side (sim validate) and the page's "Run
// real" button shows real packets. It scales a block to run in seconds
// (NewPlan, ScalingRules), runs each variant in a lab process (RunPlan),
// and compares the measured phases and counts with the model's (Validate,
// ComparePhases, Tare).
//
// The rooms below it, one job each:
//
//   - netem: the emulated network path (round trips in user space from the
//     kernel's receive timestamps, slow start, precise waits, the
//     loopback-only dialer);
//   - kernel: namespaces, sysctls, CPU priority and socket counts;
//   - servers: the HTTPS upstream, DNS, Redis, nginx and the certificates;
//   - client: the curl-like and go-redis clients of a worker, instrumented;
//   - wire: the lines the processes exchange;
//   - roles: the lab, worker and load processes, started as the binary's
//     hidden subcommand (roles.Main) and the setups they run.
//
// Real parts, all on 127.0.0.1 with ports the kernel chooses: an HTTPS
// upstream (crypto/tls, TLS 1.2 or 1.3, session tickets on or off, nginx's
// keep-alive timeout and requests per connection) or plain HTTP; a DNS
// server answering the lab's names; Redis (miniredis, or redis-server when
// asked for and installed); a reverse proxy (a Go one, or nginx when asked
// for and installed); PHP-like worker processes whose client state lives
// for a call, a request (curl_share_init) or the process
// (curl_share_init_persistent); and a load generator, closed or open loop.
// A block's setup key says which of them run (see ScalingRules). A block
// with tiers runs on the real programs instead (setup = "stack", package
// stack: nginx → the Flask app under gunicorn or Flask's server →
// redis-server), calibrated and compared per hop and side (stackplan.go,
// stackrun.go, stackmodel.go, stackvalidate.go).
//
// Round trips are injected in user space (the kernel need not have netem):
// the client's dialer waits one RTT for the TCP handshake, and every byte
// waits RTT/2 in each direction at one end of the connection, in order;
// the emulated path also keeps a congestion window so slow start costs its
// round trips. TLS and HTTP round trips come out of the real protocols.
//
// Each variant runs in its own lab process, in a private network and PID
// namespace where the kernel allows it: the port range and tcp_tw_reuse are
// set there, TIME_WAIT is counted from its /proc/net/tcp, and when the lab
// process ends the kernel removes every process and socket it made. Long
// timers are compressed and long runs shortened by the rules in
// ScalingRules; the model is run on the same scaled scenario for
// comparison (Run.Model, Validate).
//
// Accuracy. Delays start from the kernel's receive timestamps
// (SO_TIMESTAMPNS), waits end on a timerfd, a server's
// work counts from its request's arrival, and the lab processes ask for
// nice -20 where allowed (worker processes start at 19 and take -20 when
// ready). What the harness still adds to a call (threads that slept
// through the round trip wake up late) is measured before a validation
// (Tare) and shown, and up to MaxTare of it goes into the tolerance once
// for each round trip of a phase (a wake-up ends every one). Two
// costs of the real stacks that the model prices differently are measured
// and given to the model rather than hidden: Go's TLS handshake CPU, full
// and resumed (handshake_cpu, resume_cpu, measured in each lab process),
// and go-redis's HELLO on every new connection (setup_rtts = 1). The
// clients' own CPU is not priced by the model; at RTTs below a few
// milliseconds it shows as an error of the same order as the harness's own
// overhead.
package harness

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/pki"
	"github.com/connlab/connlab/sim/harness/roles"
	"github.com/connlab/connlab/sim/harness/stack"
	"github.com/connlab/connlab/sim/harness/wire"
	"github.com/connlab/connlab/sim/lab"
)

// Options control a real run of a lab block.
type Options struct {
	Set      []lab.Setting                             // overrides, as sim run --set
	Variants []string                                  // nil: all variants
	Seed     uint64                                    // the load's random arrivals, as the model's seed
	Sink     func(block, variant string, e *sim.Event) // every event as measured; called from one goroutine at a time
	Progress func(msg string)                          // optional, for runs longer than a second
	Real     []string                                  // "nginx", "redis": use the real programs when installed

	// Compress divides long timers (keep-alive, pauses, idle ages); 0 means
	// DefaultCompress. See ScalingRules.
	Compress float64
	// MaxRequests and MaxDuration bound each variant (0: the defaults).
	MaxRequests int
	MaxDuration time.Duration
	// MaxRate caps an open loop's arrival rate (0: DefaultMaxRate).
	MaxRate float64
	// Isolation: "" or "auto" runs each variant in private namespaces when
	// the kernel allows it and says so when it does not; "off" never asks.
	Isolation string
	// Executable is the binary re-executed for lab and worker processes
	// ("": this process's own, os.Executable).
	Executable string
	// StandIn runs the php setup on the http setup's Go workers even where
	// PHP 8.5 is installed (the output says so, as when it is not).
	StandIn bool
	// ModelSet changes the model's side of a comparison only, after Set
	// (sim validate --model-set): a model made wrong on purpose, to see
	// that a comparison catches it. Not for stack variants.
	ModelSet []lab.Setting
}

// VariantRun is what a real run of one variant used and noticed.
type VariantRun struct {
	Name       string
	Plan       *VariantPlan
	Components []string // the real programs and settings used
	Notes      []string // what the reader should know (no namespace, ...)
	Isolated   bool
	WallS      float64
	// Resolution of the measured phases when coarser than a microsecond
	// (nginx's log: 1 ms); comparisons allow it on top of the tolerance.
	Resolution time.Duration
	// CallSpread is how much one new connection's call varies in the
	// workers' runtime (p90 less median, where the setup measures it): a
	// phase whose median is one or two calls allows it (Tolerance.OneCall).
	CallSpread time.Duration
	// KernelSpread: the kernel spread connections over the workers (nginx),
	// so connects per worker is not the model's round-robin.
	KernelSpread bool
	// Setup is the setup that ran: the plan's, or http standing in for
	// php (StandIn says why PHP 8.5 could not run).
	Setup   string
	StandIn string
	// Runtime names the software that ran and its versions ("name",
	// "php", "curl", "ssl", ...); Checks are what its probing script's
	// statements returned or threw; RealError is the error the real
	// software refused a rejected variant with.
	Runtime   map[string]string
	Checks    map[string]string
	RealError string
	// DialerCharged: the client's own sockets connect at once (php -S,
	// nginx), so the TCP handshake's round trip shows in the phases after
	// connect, not in connect.
	DialerCharged bool
	// Stack: a stack variant's measured run (its calibration window in
	// Stack.Calibration); StackInput: what its model was given from it.
	Stack      *stack.Result
	StackInput *StackModelInput
	// StackModelCPU: each tier's CPU per request of the load in the
	// model given StackInput (its work per request and per connection).
	StackModelCPU map[string]float64
	// Lag: how far the harness's processes fell behind the emulated
	// network during the run (netem.Lag).
	Lag netem.Lag
	// Start: what the lab process used at the run's start (nil where it
	// could not read it).
	Start *wire.StartUse
	// Share: what the machine's CPUs did during the run, the run's own
	// processes and others' (nil where the lab process could not read it).
	Share *wire.Share
}

// goRuntime names the harness's own workers, by setup.
var goRuntime = map[string]string{
	SetupHTTP:  "Go worker processes with curl-like clients (Go's crypto/tls)",
	SetupRedis: "Go worker processes with go-redis v9",
	SetupProxy: "a Go load generator and reverse proxy (nginx when asked for and installed)",
}

// Run is the outcome of a real run of a block.
type Run struct {
	Plan     *Plan
	Result   *lab.BlockResult // in the shape the model returns
	Variants []*VariantRun
	// StackCosts: the costs fitted over the stack variants' calibration
	// windows (Run.Model).
	StackCosts *stack.Costs
	// modelSet: Options.ModelSet, which Model applies.
	modelSet []lab.Setting
}

// RunBlock runs every (selected) variant of b on real loopback servers and
// returns the measured results (Summary computed with sim.Collector, socket
// gauges measured), in the same shape the model returns, so lab
// expectations and model-versus-measured comparisons use one code path.
//
// Each variant runs scaled (see ScalingRules); its VariantResult.Scenario
// is the scenario that ran. Compare against the model run of the same plan
// (NewPlan, then Plan.Model), not against the lab's unscaled scenario:
// Validate does both.
func RunBlock(ctx context.Context, b *lab.Block, opt Options) (*lab.BlockResult, error) {
	p, err := NewPlan(ctx, b, opt)
	if err != nil {
		return nil, err
	}
	r, err := RunPlan(ctx, p, opt)
	if err != nil {
		return nil, err
	}
	if p.isStack() {
		if err := r.stackScenarios(ctx, opt.Seed); err != nil {
			return nil, err
		}
	}
	return r.Result, nil
}

// RunPlan runs a plan's variants for real, one after another.
func RunPlan(ctx context.Context, p *Plan, opt Options) (*Run, error) {
	opt.defaults()
	exe := opt.Executable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("harness: cannot find this program to start worker processes: %w", err)
		}
	}
	certs, err := pki.Shared()
	if err != nil {
		return nil, err
	}
	run := &Run{Plan: p, Result: &lab.BlockResult{ID: p.Block.ID, Title: p.Block.Title, Checks: []lab.Check{}}, modelSet: opt.ModelSet}
	for i, vp := range p.Variants {
		vr := &lab.VariantResult{Name: vp.Name, Label: vp.Label}
		run.Result.Variants = append(run.Result.Variants, vr)
		info := &VariantRun{Name: vp.Name, Plan: vp, Setup: vp.Setup}
		run.Variants = append(run.Variants, info)
		var phpJob *wire.PHPJob
		if isPHP(vp.Setup) {
			pr, err := resolvePHP(p.Block, vp, opt.StandIn)
			if err != nil {
				return nil, err
			}
			info.Setup, phpJob = pr.setup, pr.job
			switch {
			case pr.skip != "":
				vr.Error = "not run for real: " + pr.skip
				info.Notes = append(info.Notes, vr.Error)
				continue
			case pr.standIn != "":
				info.StandIn = pr.standIn
				info.Runtime = map[string]string{"name": StandInNote + ": " + goRuntime[SetupHTTP], "stand_in": pr.standIn}
				info.Notes = append(info.Notes, "PHP 8.5 did not run ("+pr.standIn+"): the http setup's Go workers, whose handles live as PHP's do, stood in")
			}
		}
		switch {
		case vp.Rejected != "" && phpJob != nil:
			// PHP runs it and throws its own error (below).
		case vp.Rejected != "":
			// PHP throws before any traffic; the real run is the same check.
			vr.Error = vp.Rejected
			info.Notes = append(info.Notes, "rejected before any connection, as PHP does")
			continue
		case vp.Skip != "":
			vr.Error = "not run for real: " + vp.Skip
			continue
		case vp.Stack != nil:
			if err := runStackVariant(ctx, exe, p, vp, vr, info, opt); err != nil {
				return nil, err
			}
			continue
		}
		if opt.Progress != nil {
			opt.Progress(fmt.Sprintf("%s/%s (%d of %d): %d requests", p.Block.ID, vp.Name, i+1, len(p.Variants), vp.Scenario.Requests))
		}
		isolated := opt.Isolation != "off" && kernel.NamespacesSupported
		if _, refused := roles.NamespacesRefused(); refused {
			isolated = false
		}
		if !isolated && vp.Ports {
			why := "private network namespaces are not available"
			if opt.Isolation == "off" {
				why = "isolation is off"
			}
			vr.Error = "not run for real: this variant changes ip_local_port_range or tcp_tw_reuse, which the harness only does in a private network namespace, and " + why
			info.Notes = append(info.Notes, vr.Error)
			continue
		}
		s := vp.Scenario
		if vp.Rejected == "" {
			vr.Scenario = &s // a rejected one has none the model can run
		}
		job := wire.LabJob{Block: p.Block.ID, Variant: vp.Name, Setup: sim.Setup(info.Setup), Scenario: vp.Scenario, Seed: opt.Seed,
			Certs: *certs, Isolated: isolated, KernelTWReuse: vp.KernelTWReuse, Real: opt.Real, PHP: phpJob, ParentPID: os.Getpid()}
		var col sim.Collector
		firstErr := ""
		sink := func(e *sim.Event) {
			col.Add(e)
			if e.Kind == sim.KindCall && e.Error != "" && firstErr == "" {
				firstErr = e.Error
			}
			if opt.Sink != nil {
				opt.Sink(job.Block, job.Variant, e)
			}
		}
		rep, used, err := roles.RunLab(ctx, exe, job, sink, opt.Progress)
		if err != nil {
			return nil, err
		}
		col.SetSockets(rep.TimeWaitPeak, rep.ServerTimeWaitPeak, rep.OpenPeak)
		sum := col.Summary()
		vr.Summary = &sum
		if rep.HandshakeCPU > 0 {
			s.HandshakeCPU = rep.HandshakeCPU // what the model must be given to compare
		}
		if rep.ResumeCPU > 0 {
			s.ResumeCPU = rep.ResumeCPU
		}
		switch rt := rep.Runtime; {
		case rt != nil:
			info.Runtime = map[string]string{"name": rt.Name}
			for k, v := range rt.Versions {
				info.Runtime[k] = v
			}
			s.ConnectCPU, s.DropCPU, s.ClientCPU, s.ClientReadCPU = rt.ConnectCPU, rt.DropCPU, rt.ClientCPU, rt.ClientReadCPU
			s.AppTime += rt.RequestCPU // the runtime's own, on top of the block's
			info.CallSpread, vr.CallSpread = rt.CallSpread, rt.CallSpread
			if n := curlGot(&s, rt.CurlTimers); n != "" {
				info.Notes = append(info.Notes, n)
			}
		case info.Runtime == nil:
			info.Runtime = map[string]string{"name": goRuntime[info.Setup]}
		}
		vr.Runtime, vr.Checks = info.Runtime, rep.Checks
		info.Checks = rep.Checks
		if vp.Rejected != "" {
			info.RealError, vr.Error = firstErr, firstErr
		}
		info.DialerCharged = phpJob != nil && phpJob.Binary != "" || rep.DialerCharged
		info.Components, info.Notes, info.Isolated, info.WallS = rep.Components, append(info.Notes, rep.Notes...), used, rep.WallS
		info.Resolution = time.Duration(rep.ResolutionMS * float64(time.Millisecond))
		info.KernelSpread = rep.KernelSpread
		ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
		info.Lag = netem.Lag{Max: ms(rep.LagMS), Late: rep.LateReads, WriteMax: ms(rep.WriteLagMS), LateWrites: rep.LateWrites}
		info.Start, info.Share = rep.Start, rep.Share
		if vr.Busy = busyShare(rep.Share); vr.Busy != "" {
			vr.BusyCPUs = rep.Share.OthersCPUs
		}
		if why, _ := roles.NamespacesRefused(); !used && isolated {
			info.Notes = append(info.Notes, "private namespaces refused ("+why+"): ran in the host's network namespace")
		}
	}
	return run, nil
}

// curlGot gives s the timers curl was given, if they differ, and says so.
func curlGot(s *sim.Scenario, got map[string]int) string {
	var changed []string
	for key, d := range map[string]*time.Duration{"dns_cache_timeout": &s.DNSCacheTimeout, "maxage_conn": &s.MaxIdleAge} {
		if v, ok := got[key]; ok && time.Duration(v)*time.Second != *d {
			changed = append(changed, fmt.Sprintf("%s %s→%ds", key, sim.FormatDuration(*d), v))
			*d = time.Duration(v) * time.Second
		}
	}
	if len(changed) == 0 {
		return ""
	}
	slices.Sort(changed)
	return "curl was given other timers than planned, and the model is given them too: " + strings.Join(changed, ", ")
}

// Model runs the model on the scenarios this run used (the plan's, with
// what the run measured: the TLS handshake's CPU, the client's CPU per
// call, curl's timers): the numbers to set against r.Result.
func (r *Run) Model(ctx context.Context, seed uint64, sink func(block, variant string, e *sim.Event)) (*lab.BlockResult, error) {
	res, err := r.Plan.Model(ctx, seed, sink)
	if err != nil {
		return nil, err
	}
	if err := r.stackModel(ctx, seed, res, sink); err != nil {
		return nil, err
	}
	for i, vr := range r.Result.Variants {
		if r.Variants[i].Stack != nil || vr.Scenario == nil || reflect.DeepEqual(*vr.Scenario, r.Plan.Variants[i].Scenario) {
			continue
		}
		var f func(*sim.Event)
		if sink != nil {
			id, name := r.Plan.Block.ID, vr.Name
			f = func(e *sim.Event) { sink(id, name, e) }
		}
		m, err := sim.Run(ctx, *vr.Scenario, sim.Options{Seed: seed, Sink: f})
		if err != nil {
			return nil, err
		}
		s := *vr.Scenario
		res.Variants[i].Scenario, res.Variants[i].Summary, res.Variants[i].Series = &s, &m.Summary, &m.Series
	}
	if len(r.modelSet) == 0 {
		return res, nil
	}
	for i, mv := range res.Variants {
		if r.Variants[i].Stack != nil || mv.Scenario == nil || mv.Summary == nil {
			continue
		}
		s := *mv.Scenario
		for _, st := range r.modelSet {
			if err := s.Set(st.Key, st.Value); err != nil {
				return nil, fmt.Errorf("--model-set: %w", err)
			}
		}
		m, err := sim.Run(ctx, s, sim.Options{Seed: seed})
		if err != nil {
			return nil, fmt.Errorf("--model-set: %w", err)
		}
		mv.Scenario, mv.Summary, mv.Series = &s, &m.Summary, &m.Series
	}
	return res, nil
}

// Model runs the model on the same plan as a real run: see Plan.Model.
func Model(ctx context.Context, b *lab.Block, opt Options) (*lab.BlockResult, error) {
	p, err := NewPlan(ctx, b, opt)
	if err != nil {
		return nil, err
	}
	return p.Model(ctx, opt.Seed, opt.Sink)
}
