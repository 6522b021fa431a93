package harness

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/stack"
)

// The stack setup runs a block with [[tier]] tables on the real programs:
// a Go closed-loop load → nginx → the source article's Python app (under
// gunicorn's threaded workers or Flask's development server) → redis-server,
// each variant in namespaces of its own (package stack). What it can run
// is fixed by those programs; stackConfig refuses the rest, naming the key.

// Lengths of a stack variant's real run: a warm-up, then a calibration
// window (half the measured one, at most StackCalibrate) interleaved with
// the measured window (at most StackWindow, Options.MaxDuration and the
// variant's own duration) in slices of StackSlice.
const (
	StackWarmup    = 1500 * time.Millisecond
	StackCalibrate = 2500 * time.Millisecond
	StackWindow    = 5 * time.Second
	StackSlice     = 500 * time.Millisecond
)

// StackPackages are the Debian packages the stack setup needs.
var StackPackages = []string{"nginx-light", "redis-server", "gunicorn", "python3-flask", "python3-redis"}

// errNotTheStack marks a chain that is not the real stack's shape: a block
// that does not ask for setup = "stack" is then a model's only, not an error.
var errNotTheStack = errors.New("not the real stack's tiers")

// stackConfig maps a tiered scenario onto the real stack: three tiers,
// software nginx, gunicorn or flask, redis, in that order.
func stackConfig(s *sim.Scenario) (stack.Config, stack.Load, error) {
	var c stack.Config
	var l stack.Load
	want := `setup = "stack" runs nginx → a Python app → redis-server: three [[tier]] tables with software = "nginx", then "gunicorn" or "flask", then "redis"`
	if len(s.Tiers) != 3 {
		return c, l, fmt.Errorf("%s (this block has %d tiers)%w", want, len(s.Tiers), quiet(errNotTheStack))
	}
	soft := []string{s.Tiers[0].Software, s.Tiers[1].Software, s.Tiers[2].Software}
	if soft[0] != "nginx" || (soft[1] != "gunicorn" && soft[1] != "flask") || soft[2] != "redis" {
		return c, l, fmt.Errorf("%s (got software %q, %q, %q)%w", want, soft[0], soft[1], soft[2], quiet(errNotTheStack))
	}
	refuse := func(key, format string, args ...any) error {
		return &sim.ParamError{Key: key, Msg: "setup = \"stack\": " + fmt.Sprintf(format, args...)}
	}
	switch {
	case s.Load != sim.LoadClosed:
		return c, l, refuse("load", "the real load is a closed loop (load = \"closed\")")
	case s.ThinkTime != 0 || s.PauseEvery != 0:
		return c, l, refuse("think_time", "the real load's users send again as soon as they are answered (think_time = \"0s\", no pauses)")
	case s.Duration == 0:
		return c, l, refuse("duration", "a real stack runs for a time: set duration (requests = 0)")
	}
	names := s.TierNames()
	ng, app := s.TierScenario(0), s.TierScenario(1)
	key := func(i int, k string) string { return "tier." + names[i] + "." + k }
	for i := range names {
		switch t := s.TierScenario(i); {
		case t.TLS != sim.TLSNone:
			return c, l, refuse(key(i, "tls"), "the real stack's hops are plain TCP (tls = \"none\"), got %q", t.TLS)
		case t.DNS != 0:
			return c, l, refuse(key(i, "dns"), "the real stack's tiers are reached at addresses, with no lookup (dns = \"0s\"), got %s", sim.FormatDuration(t.DNS))
		case t.SetupRTTs != 0:
			return c, l, refuse(key(i, "setup_rtts"), "the real stack's clients send their first request at once (setup_rtts = 0), got %d", t.SetupRTTs)
		}
	}
	c.NginxWorkers = ng.Workers
	switch ng.Reuse {
	case sim.ReuseNone:
	case sim.ReuseUpstreamKeepalive:
		c.Keepalive = ng.UpstreamKeepalive
	default:
		return c, l, refuse(key(0, "reuse"), "nginx keeps upstream connections with \"upstream-keepalive\" (keepalive N) or not at all (\"none\"), got %q", ng.Reuse)
	}
	if ng.CallsPerRequest != 1 {
		return c, l, refuse(key(0, "calls_per_request"), "nginx proxies each request once (1), got %d", ng.CallsPerRequest)
	}
	c.AppServer = soft[1]
	switch app.Reuse {
	case sim.ReuseRequest:
		c.Redis = stack.RedisNew
	case sim.ReusePool, sim.ReuseProcess:
		c.Redis = stack.RedisPool
	default:
		return c, l, refuse(key(1, "reuse"), "the app opens a Redis connection per request (\"request\": redis.Redis() in the view) or keeps a pool (\"pool\"), got %q", app.Reuse)
	}
	if app.CallsPerRequest != 2 {
		return c, l, refuse(key(1, "calls_per_request"), "the app sends two commands per request (SET, GET), got %d", app.CallsPerRequest)
	}
	if app.PoolMax != 0 || app.PoolMaxIdle != 0 {
		return c, l, refuse(key(1, "pool_max"), "the app's redis-py pool has no limit (pool_max = 0, pool_max_idle = 0)")
	}
	if c.AppServer == stack.Gunicorn {
		c.GunicornWorkers, c.GunicornThreads = app.Workers, app.Threads
		if app.Threads < 1 {
			return c, l, refuse(key(1, "threads"), "gunicorn's gthread workers have a number of threads (--threads), got %d", app.Threads)
		}
		ka := app.KeepaliveTimeout
		if ka < time.Second || ka%time.Second != 0 {
			return c, l, refuse(key(1, "keepalive_timeout"), "gunicorn's --keep-alive is whole seconds, at least 1, got %s", sim.FormatDuration(ka))
		}
		c.GunicornKeepalive = int(ka / time.Second)
	} else if app.Workers != 1 || app.Threads != 0 {
		return c, l, refuse(key(1, "workers"), "Flask's development server is one process with a thread per connection (workers = 1, threads = 0)")
	}
	l = stack.Load{Kind: stack.LoadGo, Concurrency: s.Concurrency, KeepAlive: s.ClientKeepalive}
	return c, l, nil
}

// quiet wraps err so that errors.Is finds it and %w prints nothing.
func quiet(err error) error { return quietErr{err} }

type quietErr struct{ err error }

func (q quietErr) Error() string { return "" }
func (q quietErr) Unwrap() error { return q.err }

// stackPortSettings are the namespace's sysctls for s: its port range and
// tcp_tw_reuse.
func stackPortSettings(s *sim.Scenario) (string, int) {
	return fmt.Sprintf("%d %d", s.PortRange.Lo, s.PortRange.Hi), s.TWReuse
}

// stackWindow is how long a stack variant is measured.
func stackWindow(s *sim.Scenario, maxDur time.Duration) time.Duration {
	return min(s.Duration, maxDur, StackWindow)
}

// hasTiers reports whether any of the scenarios is a chain.
func hasTiers(scns []*sim.Scenario) bool {
	for _, s := range scns {
		if s != nil && len(s.Tiers) > 0 {
			return true
		}
	}
	return false
}

// stackNotRunnable says why a tiered block cannot run on setup (every
// setup but stack runs one hop).
func stackNotRunnable(setup string) error {
	return fmt.Errorf("this block has [[tier]] tables, which run for real only with setup = %q (nginx → a Python app → redis-server), not %q: set setup = %q, or validate the tiers in the model with sim run",
		SetupStack, setup, SetupStack)
}

// stackMissing lists the Debian packages of StackPackages that are not
// installed for the app server.
func stackMissing(appServer string) []string {
	return stack.Missing(stack.Config{AppServer: appServer}, false)
}

func stackMissingNote(miss []string) string {
	return "the real stack needs the Debian packages " + strings.Join(miss, ", ") + " (apt-get install " + strings.Join(StackPackages, " ") + ")"
}

// StackVariant is how a variant runs on the real stack.
type StackVariant struct {
	Config    stack.Config
	Load      stack.Load
	Window    time.Duration // the measured window
	Calibrate time.Duration // the calibration window, interleaved with it
	PortRange string        // ip_local_port_range and tcp_tw_reuse in its namespace
	TWReuse   int
}

// Spec is the stack run of the variant named name.
func (sv *StackVariant) Spec(name string) stack.Spec {
	return stack.Spec{Name: name, Config: sv.Config, Load: sv.Load, Warmup: StackWarmup, Calibrate: sv.Calibrate,
		Slice: StackSlice, Duration: sv.Window, PortRange: sv.PortRange, TWReuse: sv.TWReuse}
}

// Slices lists the measured window's slices in the model's run of the
// variant (its Scenario runs the warm-up and every slice), as [from, to).
func (sv *StackVariant) Slices() [][2]time.Duration {
	var out [][2]time.Duration
	t := StackWarmup
	for _, l := range stack.SliceLabels(sv.Spec("")) {
		if l == 0 {
			out = append(out, [2]time.Duration{t, t + StackSlice})
		}
		t += StackSlice
	}
	return out
}

// Length is the model's run of the variant: the warm-up and every slice.
func (sv *StackVariant) Length() time.Duration { return StackWarmup + sv.Calibrate + sv.Window }

// planStack plans a variant with tiers on the real stack: its programs,
// load and windows; the model runs the same length and is read over the
// same window. A variant the machine cannot run is skipped, saying why.
func (vp *VariantPlan) planStack(opt Options) error {
	s := vp.Original
	if len(s.Tiers) == 0 {
		return fmt.Errorf("setup = %q runs a block's [[tier]] tables, and this block has none", SetupStack)
	}
	cfg, load, err := stackConfig(&s)
	if errors.Is(err, errNotTheStack) && s.Setup == sim.SetupAuto {
		vp.Skip = "not run for real: the model's only; " + err.Error()
		return nil
	}
	if err != nil {
		return err
	}
	w := stackWindow(&s, opt.MaxDuration)
	w = max(StackSlice, w.Truncate(StackSlice))
	sv := &StackVariant{Config: cfg, Load: load, Window: w, Calibrate: max(StackSlice, min(StackCalibrate, w/2).Truncate(StackSlice))}
	sv.PortRange, sv.TWReuse = stackPortSettings(&s)
	vp.Stack = sv
	vp.note("measured: %s warm-up, then a %s calibration window and a %s measured window, interleaved in %s slices (the lab's duration = %s); the model runs the same %s and is read over the same slices",
		sim.FormatDuration(StackWarmup), sim.FormatDuration(sv.Calibrate), sim.FormatDuration(sv.Window), sim.FormatDuration(StackSlice),
		sim.FormatDuration(s.Duration), sim.FormatDuration(sv.Length()))
	s.Requests, s.Duration = 0, sv.Length()
	if err := s.Validate(); err != nil {
		return err
	}
	vp.Scenario = s
	vp.Overlap = s.Concurrency > 1
	if err := stack.CanIsolate(); err != nil {
		vp.Skip = err.Error()
	} else if miss := stackMissing(cfg.AppServer); len(miss) > 0 {
		vp.Skip = stackMissingNote(miss)
	}
	return nil
}
