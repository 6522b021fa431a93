package harness

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/roles"
	"github.com/connlab/connlab/sim/lab"
)

// Setups: what a variant runs on for real, the scenario's setup key
// (roles.SetupHelp describes each).
const (
	// SetupAuto derives the setup from the block: SetupStack when it has
	// tiers, SetupProxy when a variant uses reuse = "upstream-keepalive",
	// else SetupHTTP.
	SetupAuto = string(sim.SetupAuto)
	// SetupHTTP: PHP-like worker processes (real OS processes) call the
	// HTTPS or HTTP upstream through the harness's DNS server, with
	// curl-like client state whose lifetime is the call, the request or
	// the process.
	SetupHTTP = string(sim.SetupHTTP)
	// SetupRedis: worker processes call Redis (miniredis, or redis-server
	// with --real redis) with go-redis, one client per request or one pool
	// per process.
	SetupRedis = string(sim.SetupRedis)
	// SetupProxy: a closed-loop load generator calls a reverse proxy (a Go
	// proxy, or nginx with --real nginx) whose workers call the upstream,
	// with or without upstream keep-alive.
	SetupProxy = string(sim.SetupProxy)
	// SetupPHP: the lab's PHP scripts on PHP 8.5 in WebAssembly (the
	// http setup stands in when Node.js or the package is missing), and
	// SetupPHPNative on the php on PATH.
	SetupPHP       = string(sim.SetupPHP)
	SetupPHPNative = string(sim.SetupPHPNative)
	// SetupStack: a block's [[tier]] tables on the real programs, nginx →
	// the article's Python app (gunicorn or Flask's server) → redis-server,
	// calibrated then measured per hop (stackplan.go).
	SetupStack = string(sim.SetupStack)
)

// Defaults of the scaling rules (see ScalingRules).
const (
	DefaultCompress = 100
	// PHPCompress is the php setups' own factor (see roles.PHPCompress).
	PHPCompress        = roles.PHPCompress
	DefaultMaxRequests = 2000
	DefaultMaxDuration = 10 * time.Second
	DefaultMaxRate     = 200
	// exhaustTarget is how soon a scaled run reaches the end of its port
	// range: twice tcp_tw_reuse's one-second delay, so reuse still shows.
	exhaustTarget = 2 * time.Second
	// scaledPortLow is where a scaled port range starts: below the
	// kernel's default range, where the harness's listeners took their
	// ports before the range was narrowed.
	scaledPortLow  = 10000
	minScaledPorts = 16
)

// ScalingRules describes, for sim validate --help and the docs, how a lab's
// scenario becomes one that runs for real in seconds, and what it runs on.
// The same scaled scenario runs in the model, so model and measurement stay
// comparable.
var ScalingRules = scalingRules + setupRules + roles.SetupHelp() + notRunForReal

const scalingRules = `How a block is scaled to run for real (the model runs the same scaled scenario):
  1. Long timers are compressed by --compress (default ×100, and ×10 for the php
     setups, whose libcurl takes whole seconds): keepalive_timeout, pause,
     dns_cache_timeout, max_idle_age, max_lifetime and linger always (a 75 s
     keep-alive becomes 750 ms); think_time when it is 1 s or more; an open loop
     slower than one request a second is sped up by the same factor. RTT, DNS and
     server times are not scaled: they are what is measured. Where a setup's real
     client takes a timer otherwise (curl: whole seconds), the model is given what
     it takes.
  2. The kernel's 60 s TIME_WAIT and tcp_tw_reuse's 1 s cannot be compressed. When
     the lab's own run reaches the end of its local port range, the range is shrunk
     (in a private network namespace, from port 10000) so that it runs out after
     2 s at the same connection rate instead of, say, 47 s.
  3. An open loop faster than --max-rate (default 200 requests a second) is slowed
     to it, and a range shrunk by rule 2 with it, so it still runs out after 2 s.
  4. Each variant is cut to at most --max-duration (default 10 s, as the model
     predicts it) and --max-requests (default 2000); a run bounded by duration
     becomes a run of the number of requests the model sends in that time, so
     counts compare exactly.
  5. tcp_tw_reuse = 2 towards a remote server (loopback = false) runs as 0:
     every real connection here is on loopback.
  6. go-redis sends HELLO on each new connection: Redis blocks run with
     setup_rtts = 1 (one more round trip before the first command).
  7. Counts (num_connects, connects per worker, TIME_WAIT, EADDRNOTAVAIL, errors,
     races) must be equal, except where several requests overlap on a pool or
     upstream keep-alive cache: how many connections the pool grows to then
     depends on timing, and connects/TIME_WAIT are compared within ±max(2, 10%),
     as are the errors of a pool that refuses a call when it is full.
     With nginx the kernel, not a rule, spreads connections over its workers:
     connects per worker is shown, not compared; its log's times are whole
     milliseconds, allowed on top of the tolerance. With tcp_tw_reuse, how many
     TIME_WAIT ports connect() takes over is chance, in the kernel and in the
     model (its port search starts at a random point, moved every 10 s): where
     the two took over different numbers, the client's TIME_WAIT peak is
     compared with the ports taken over (time_wait_reused) added back, and
     time_wait_reused is shown.
  8. A block with tiers (setup = "stack") is not scaled: nginx, gunicorn or
     Flask's server and redis-server keep their own timers. Each variant runs
     a 1.5 s warm-up, then a calibration window (up to 2.5 s) and the measured
     window (up to 5 s, and --max-duration) in alternate 0.5 s slices. The
     calibration windows of all variants give each tier's CPU per request and
     per connection; each variant's model also gets the CPU other programs
     took, the load's stalls and the close race's shares of its own measured
     window. Per hop and side, connections opened and TIME_WAIT sockets, and
     the throughput, must be within 15 % (or 3 for small counts).
`

const setupRules = `What a variant runs on is its setup key (auto, the default: proxy when a
variant of the block uses reuse = "upstream-keepalive", else http):
`

const notRunForReal = `Not run for real: 0-RTT (early_data; Go's crypto/tls has none); a variant that
changes the port range or tcp_tw_reuse where private namespaces are refused.`

// compressedKeys are the long timers rule 1 compresses.
var compressedKeys = []string{"keepalive_timeout", "pause", "dns_cache_timeout", "max_idle_age", "max_lifetime", "linger"}

// A VariantPlan is how one variant runs for real.
type VariantPlan struct {
	Name  string
	Label string
	// Original is the variant's scenario as the lab (and --set) gives it;
	// Scenario is the scaled one that runs, for real and in the model.
	Original sim.Scenario
	Scenario sim.Scenario
	// Setup is what the variant runs on, its setup key with auto resolved.
	Setup string
	// Script is the lab's program the variant runs where its setup runs
	// the lab's own code (lab.Block.ScriptOf).
	Script string
	// Compress is the factor its long timers were divided by.
	Compress float64
	// Scaling lists what rules changed, in words.
	Scaling []string
	// Skip, when set, says why the variant is not run for real.
	Skip string
	// Rejected is the error the scenario is refused with before any traffic
	// (PHP's ValueError for a COOKIE share option), as the model reports it.
	// A php setup still runs it (Scenario is then the lab's, unscaled): the
	// error is PHP's own to compare.
	Rejected string
	// Ports: the variant changes the port range or tcp_tw_reuse, so it
	// needs a private network namespace.
	Ports bool
	// KernelTWReuse is the tcp_tw_reuse value the namespace gets.
	KernelTWReuse int
	// Timing: connection counts depend on how requests overlap (rule 7).
	Timing bool
	// Overlap: requests overlap (several users, or an open loop).
	Overlap bool
	// Stack: how a variant with tiers runs on the real stack (setup =
	// "stack"; stackplan.go).
	Stack *StackVariant
}

// Plan is how a block runs for real.
type Plan struct {
	Block *lab.Block
	// Setup names the variants' setups, in order, each once ("http",
	// "http, proxy").
	Setup string
	// Compress is Options.Compress, or when that is 0 the first variant's
	// factor (each has its own: VariantPlan.Compress).
	Compress float64
	Variants []*VariantPlan
}

// compressFor is the factor long timers are divided by for a setup: the
// run's, or the setup's own, or DefaultCompress.
func (o *Options) compressFor(setup string) float64 {
	if o.Compress > 0 {
		return o.Compress
	}
	if f := roles.Compress(sim.Setup(setup)); f > 0 {
		return f
	}
	return DefaultCompress
}

func (o *Options) defaults() {
	if o.MaxRequests <= 0 {
		o.MaxRequests = DefaultMaxRequests
	}
	if o.MaxDuration <= 0 {
		o.MaxDuration = DefaultMaxDuration
	}
	if o.MaxRate <= 0 {
		o.MaxRate = DefaultMaxRate
	}
}

// setupOf resolves the setup key of a variant's scenario s, whose block's
// variants are scns: auto becomes SetupStack for a block with tiers,
// SetupProxy when a variant uses reuse = "upstream-keepalive", else
// SetupHTTP.
func setupOf(s *sim.Scenario, scns []*sim.Scenario) string {
	if s.Setup != sim.SetupAuto && s.Setup != "" {
		return string(s.Setup)
	}
	if hasTiers(scns) {
		return SetupStack
	}
	for _, o := range scns {
		if o != nil && o.Reuse == sim.ReuseUpstreamKeepalive {
			return SetupProxy
		}
	}
	return SetupHTTP
}

// NewPlan scales every selected variant of b by the rules in ScalingRules.
// It runs the model (in virtual time, milliseconds) to find out how long
// each variant runs and whether it reaches the end of its port range.
func NewPlan(ctx context.Context, b *lab.Block, opt Options) (*Plan, error) {
	opt.defaults()
	scns, errs, err := b.Scenarios(opt.Set)
	if err != nil {
		return nil, err
	}
	for _, name := range opt.Variants {
		if b.Variant(name) == nil {
			names := make([]string, len(b.Variants))
			for i, v := range b.Variants {
				names[i] = v.Name
			}
			return nil, fmt.Errorf("block %q has no variant %q (variants: %s)", b.ID, name, strings.Join(names, ", "))
		}
	}
	p := &Plan{Block: b, Compress: opt.Compress}
	var setups []string
	for i, v := range b.Variants {
		if len(opt.Variants) > 0 && !slices.Contains(opt.Variants, v.Name) {
			continue
		}
		vp := &VariantPlan{Name: v.Name, Label: v.Label, Script: b.ScriptOf(v)}
		p.Variants = append(p.Variants, vp)
		if errs[i] != nil {
			vp.Rejected = errs[i].Error()
			// PHP runs what the model refuses, and throws its own error.
			if s, err := b.Scenario(v, opt.Set); err == nil && isPHP(setupOf(&s, scns)) {
				vp.Setup, vp.Original, vp.Scenario = setupOf(&s, scns), s, s
				vp.Compress = opt.compressFor(vp.Setup)
			}
			continue
		}
		vp.Setup = setupOf(scns[i], scns)
		if !slices.Contains(setups, vp.Setup) {
			setups = append(setups, vp.Setup)
		}
		vp.Original = *scns[i]
		if len(scns[i].Tiers) > 0 || vp.Setup == SetupStack {
			if vp.Setup != SetupStack {
				return nil, fmt.Errorf("block %q, variant %q: %w", b.ID, v.Name, stackNotRunnable(vp.Setup))
			}
			if err := vp.planStack(opt); err != nil {
				return nil, fmt.Errorf("block %q, variant %q: %w", b.ID, v.Name, err)
			}
			continue
		}
		vp.Compress = opt.compressFor(vp.Setup)
		if p.Compress == 0 {
			p.Compress = vp.Compress
		}
		if err := vp.scale(ctx, opt); err != nil {
			return nil, fmt.Errorf("block %q, variant %q: %w", b.ID, v.Name, err)
		}
	}
	if len(setups) == 0 { // every variant rejected
		setups = append(setups, setupOf(&sim.Scenario{}, scns))
	}
	p.Setup = strings.Join(setups, ", ")
	return p, nil
}

func (vp *VariantPlan) note(format string, args ...any) {
	vp.Scaling = append(vp.Scaling, fmt.Sprintf(format, args...))
}

// isPHP: the setup runs the lab's PHP scripts.
func isPHP(setup string) bool { return setup == SetupPHP || setup == SetupPHPNative }

func (vp *VariantPlan) scale(ctx context.Context, opt Options) error {
	s := vp.Original
	f := vp.Compress
	if s.EarlyData {
		vp.Skip = "early_data (TLS 1.3 0-RTT) cannot run for real: Go's crypto/tls has no 0-RTT"
	}
	// Rule 1: long timers.
	var changed []string
	timers := []*time.Duration{&s.KeepaliveTimeout, &s.Pause, &s.DNSCacheTimeout, &s.MaxIdleAge, &s.MaxLifetime, &s.Linger}
	for i, d := range timers {
		if *d == 0 {
			continue
		}
		nd := time.Duration(float64(*d) / f).Round(time.Microsecond)
		changed = append(changed, fmt.Sprintf("%s %s→%s", compressedKeys[i], sim.FormatDuration(*d), sim.FormatDuration(nd)))
		*d = nd
	}
	if s.ThinkTime >= time.Second {
		nd := time.Duration(float64(s.ThinkTime) / f).Round(time.Microsecond)
		changed = append(changed, fmt.Sprintf("think_time %s→%s", sim.FormatDuration(s.ThinkTime), sim.FormatDuration(nd)))
		s.ThinkTime = nd
	}
	if s.Load == sim.LoadOpen && s.Rate > 0 && s.Rate < 1 {
		nr := s.Rate * f
		changed = append(changed, fmt.Sprintf("rate %g→%g req/s", s.Rate, nr))
		s.Rate = nr
	}
	if len(changed) > 0 {
		vp.note("long timers ÷%g: %s", f, strings.Join(changed, ", "))
	}
	for _, n := range roles.Adjust(sim.Setup(vp.Setup), &s) {
		vp.note("%s", n)
	}
	// Rule 2: the port range, from the lab's own run.
	orig, err := sim.Run(ctx, vp.Original, sim.Options{Seed: opt.Seed})
	if err != nil {
		return err
	}
	osum := &orig.Summary
	size := vp.Original.PortRange.Size()
	if osum.PortErrors > 0 || osum.TimeWaitPeak+osum.OpenPeak >= size {
		exhaust := 0.0
		if osum.FirstPortErrorS != nil {
			exhaust = *osum.FirstPortErrorS
		} else if osum.DurationS > 0 && osum.Connects > 0 {
			exhaust = float64(size) / (float64(osum.Connects) / osum.DurationS)
		}
		if exhaust > exhaustTarget.Seconds() {
			n := max(minScaledPorts, int(math.Round(float64(size)*exhaustTarget.Seconds()/exhaust)))
			s.PortRange = sim.PortRange{Lo: scaledPortLow, Hi: scaledPortLow + n - 1}
			vp.note("ports: the lab's %d ports run out after %.3g s; TIME_WAIT (60 s) cannot be compressed, so the range is %s (%d ports, out after about %g s)",
				size, exhaust, s.PortRange, n, exhaustTarget.Seconds())
		}
	}
	// Rule 3: a fast open loop is slowed down, and a scaled port range
	// with it, so it runs out at the same time.
	if s.Load == sim.LoadOpen && s.Rate > opt.MaxRate {
		k := opt.MaxRate / s.Rate
		note := fmt.Sprintf("rate %g→%g req/s (at most %g, so a busy machine keeps up)", s.Rate, opt.MaxRate, opt.MaxRate)
		s.Rate = opt.MaxRate
		if s.PortRange != vp.Original.PortRange {
			n := max(minScaledPorts, int(math.Round(float64(s.PortRange.Size())*k)))
			s.PortRange.Hi = s.PortRange.Lo + n - 1
			note += fmt.Sprintf("; the port range with it: %s", s.PortRange)
		}
		vp.note("%s", note)
	}
	vp.KernelTWReuse = s.TWReuse
	if s.TWReuse == 2 && !s.Loopback {
		vp.KernelTWReuse = 0
		vp.note("tcp_tw_reuse = 2 towards a remote server behaves as 0; the real run is on loopback, so it sets 0")
	}
	def := sim.Default()
	vp.Ports = s.PortRange != def.PortRange || vp.KernelTWReuse != def.TWReuse
	// Rule 4: length, from the model's run of the scaled scenario.
	r, err := sim.Run(ctx, s, sim.Options{Seed: opt.Seed})
	if err != nil {
		return err
	}
	sum := &r.Summary
	limitD := opt.MaxDuration.Seconds()
	if s.Requests == 0 || s.Duration > 0 || sum.Requests > opt.MaxRequests || sum.DurationS > limitD {
		n := sum.Requests
		if sum.DurationS > limitD {
			// Cut the run where the model is at the time limit.
			cut := s
			cut.Requests, cut.Duration = 0, opt.MaxDuration
			if s.Duration > 0 && s.Duration < cut.Duration {
				cut.Duration = s.Duration
			}
			cr, err := sim.Run(ctx, cut, sim.Options{Seed: opt.Seed})
			if err != nil {
				return err
			}
			n = cr.Summary.Requests
			if s.Requests > 0 {
				n = min(n, s.Requests)
			}
		}
		n = max(1, min(n, opt.MaxRequests))
		before := fmt.Sprintf("requests = %d", vp.Original.Requests)
		if vp.Original.Duration > 0 {
			before += fmt.Sprintf(", duration = %s", sim.FormatDuration(vp.Original.Duration))
		}
		if n != vp.Original.Requests || s.Duration != 0 {
			vp.note("length: %s → requests = %d (at most %s and %d requests per variant)", before, n, sim.FormatDuration(opt.MaxDuration), opt.MaxRequests)
		}
		s.Requests, s.Duration = n, 0
	}
	if err := s.Validate(); err != nil {
		return err
	}
	vp.Scenario = s
	vp.Overlap = s.Load == sim.LoadOpen || s.Concurrency > 1
	vp.Timing = vp.Overlap && (s.Reuse == sim.ReusePool || s.Reuse == sim.ReuseUpstreamKeepalive)
	return nil
}

// Model runs the model on the plan's scaled scenarios: the numbers a real
// run of the same plan is compared with. Variants that do not run for real
// are left without a summary.
func (p *Plan) Model(ctx context.Context, seed uint64, sink func(block, variant string, e *sim.Event)) (*lab.BlockResult, error) {
	res := &lab.BlockResult{ID: p.Block.ID, Title: p.Block.Title, Checks: []lab.Check{}}
	for _, vp := range p.Variants {
		vr := &lab.VariantResult{Name: vp.Name, Label: vp.Label}
		res.Variants = append(res.Variants, vr)
		switch {
		case vp.Rejected != "":
			vr.Error = vp.Rejected
			continue
		case vp.Skip != "":
			vr.Error = "not run for real: " + vp.Skip
			continue
		}
		s := vp.Scenario
		vr.Scenario = &s
		var f func(*sim.Event)
		if sink != nil {
			id, name := p.Block.ID, vp.Name
			f = func(e *sim.Event) { sink(id, name, e) }
		}
		if vp.Stack != nil {
			// Read over the measured window, as the real run is.
			sum, _, err := windowSummary(ctx, s, vp.Stack.Slices(), seed, f)
			if err != nil {
				return nil, err
			}
			vr.Summary = sum
			continue
		}
		r, err := sim.Run(ctx, s, sim.Options{Seed: seed, Sink: f})
		if err != nil {
			return nil, err
		}
		vr.Summary, vr.Series = &r.Summary, &r.Series
	}
	return res, nil
}
