package harness

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/roles"
	"github.com/connlab/connlab/sim/harness/stack"
	"github.com/connlab/connlab/sim/lab"
)

// runStackVariant runs one variant on the real stack (its namespaces end
// with it: every process, socket and file it made is gone) and puts the
// measured window in vr, in the model's shape.
func runStackVariant(ctx context.Context, exe string, p *Plan, vp *VariantPlan, vr *lab.VariantResult, info *VariantRun, opt Options) error {
	sv := vp.Stack
	if opt.Progress != nil {
		opt.Progress(fmt.Sprintf("%s/%s: the real stack (%s), %s warm-up, %s calibration, %s window",
			p.Block.ID, vp.Name, stackLine(sv), sim.FormatDuration(StackWarmup), sim.FormatDuration(StackCalibrate), sim.FormatDuration(sv.Window)))
	}
	start := time.Now()
	res, err := stack.RunIsolatedExec(ctx, sv.Spec(p.Block.ID+"/"+vp.Name), exe, roles.Command, roles.RoleStack)
	if err != nil {
		return fmt.Errorf("block %q, variant %q: %w", p.Block.ID, vp.Name, err)
	}
	s := vp.Scenario
	vr.Scenario = &s
	vr.Summary = measuredSummary(res, s.TierNames(), tierWorkers(&s))
	info.Stack, info.Isolated, info.WallS = res, true, time.Since(start).Seconds()
	info.Components = stackComponents(sv)
	info.Setup, info.Runtime = SetupStack, stackRuntime(sv)
	if res.Errors > 0 {
		info.Notes = append(info.Notes, fmt.Sprintf("%d requests failed in the window", res.Errors))
	}
	for k, n := range res.NginxErrors {
		info.Notes = append(info.Notes, fmt.Sprintf("nginx's error log: %d × %s", n, k))
	}
	return nil
}

// stackLine names a stack variant's programs in a few words.
func stackLine(sv *StackVariant) string {
	ka := "no upstream keep-alive"
	if sv.Config.Keepalive > 0 {
		ka = fmt.Sprintf("keepalive %d", sv.Config.Keepalive)
	}
	app := "Flask's development server"
	if sv.Config.AppServer == stack.Gunicorn {
		app = "gunicorn"
	}
	return fmt.Sprintf("nginx, %s → %s, Redis %s", ka, app, map[string]string{stack.RedisNew: "connection per request", stack.RedisPool: "pool"}[sv.Config.Redis])
}

// stackRuntime names the real programs of a stack variant and their
// versions, as a record's runtime (runtime.KEY in real_expect).
func stackRuntime(sv *StackVariant) map[string]string {
	rt := stack.Versions()
	for k, v := range rt {
		if v == "" {
			delete(rt, k)
		}
	}
	rt["name"] = "nginx → gunicorn → redis-server"
	if sv.Config.AppServer != stack.Gunicorn {
		rt["name"] = "nginx → Flask's development server → redis-server"
	}
	return rt
}

// stackComponents lists the real programs of a stack variant, with their
// versions and settings.
func stackComponents(sv *StackVariant) []string {
	v := stack.Versions()
	c := sv.Config.Defaults()
	ka := "HTTP/1.0 to the app, Connection: close"
	if c.Keepalive > 0 {
		ka = fmt.Sprintf("keepalive %d, HTTP/1.1", c.Keepalive)
	}
	out := []string{fmt.Sprintf("nginx %s: %d workers, %s", v["nginx"], c.NginxWorkers, ka)}
	if c.AppServer == stack.Gunicorn {
		out = append(out, fmt.Sprintf("gunicorn %s (gthread): %d worker × %d threads, --keep-alive %d; Flask %s, Python %s",
			v["gunicorn"], c.GunicornWorkers, c.GunicornThreads, c.GunicornKeepalive, v["flask"], v["python"]))
	} else {
		out = append(out, fmt.Sprintf("Flask %s's development server (Werkzeug %s, threaded), Python %s", v["flask"], v["werkzeug"], v["python"]))
	}
	mode := "redis.Redis() in the view: a connection per request"
	if c.Redis == stack.RedisPool {
		mode = "one ConnectionPool per process"
	}
	keep := "keep their connection to nginx"
	if !sv.Load.KeepAlive {
		keep = "open a connection per request (Connection: close)"
	}
	out = append(out, fmt.Sprintf("redis-py %s: %s", v["redis-py"], mode), fmt.Sprintf("redis-server %s", v["redis-server"]),
		fmt.Sprintf("load: %d users in a closed Go loop, who %s", sv.Load.Concurrency, keep),
		fmt.Sprintf("namespace: ip_local_port_range %s, tcp_tw_reuse %d", sv.PortRange, sv.TWReuse))
	return out
}

// stackModel calibrates a run's stack variants and runs the model of each
// over its measured window: the costs are fitted over every variant's
// calibration window; each variant's model is given the machine's CPUs,
// the other programs' CPU, the close race's shares and the spread of work
// over each tier's processes, of its own window.
func (r *Run) stackModel(ctx context.Context, seed uint64, res *lab.BlockResult, sink func(block, variant string, e *sim.Event)) error {
	var cal []*stack.Result
	for _, info := range r.Variants {
		if info.Stack != nil && info.Stack.Calibration != nil {
			cal = append(cal, info.Stack.Calibration)
		}
	}
	if len(cal) == 0 {
		return nil
	}
	costs, err := stack.Calibrate(cal)
	if err != nil {
		return err
	}
	r.StackCosts = costs
	for i, info := range r.Variants {
		vp := r.Plan.Variants[i]
		if info.Stack == nil || vp.Stack == nil {
			continue
		}
		names := vp.Scenario.TierNames()
		in := &StackModelInput{Costs: costs, CPUs: runtime.NumCPU(), Background: info.Stack.BackgroundCPU,
			LoadStalls: info.Stack.LoadStallsPerS, LoadStallMS: info.Stack.LoadStallMS["p50"], LoadStallP99MS: info.Stack.LoadStallMS["p99"],
			Shares: raceShares(info.Stack, names), WorkerShares: info.Stack.WorkerShares}
		s, err := calibrated(vp.Scenario, in)
		if err != nil {
			return fmt.Errorf("block %q, variant %q: %w", r.Plan.Block.ID, vp.Name, err)
		}
		var f func(*sim.Event)
		if sink != nil {
			id, name := r.Plan.Block.ID, vp.Name
			f = func(e *sim.Event) { sink(id, name, e) }
		}
		sum, cpu, err := windowSummary(ctx, s, vp.Stack.Slices(), seed, f)
		if err != nil {
			return err
		}
		info.StackInput, info.StackModelCPU = in, cpu
		mv := res.Variants[i]
		mv.Scenario, mv.Summary, mv.Series = &s, sum, nil
	}
	return nil
}

// tierWorkers lists each tier's worker processes.
func tierWorkers(s *sim.Scenario) []int {
	out := make([]int, len(s.Tiers))
	for i := range s.Tiers {
		out[i] = s.TierScenario(i).Workers
	}
	return out
}

// stackScenarios gives each measured stack variant of r the scenario its
// model should run to set against it, for a caller that runs the model
// itself (the page's Run real): calibrated as Validate's (see stackModel),
// and as long as the measured window (the model's run then starts cold,
// where the real window came after a warm-up).
func (r *Run) stackScenarios(ctx context.Context, seed uint64) error {
	res, err := r.Model(ctx, seed, nil)
	if err != nil {
		return err
	}
	for i, vr := range r.Result.Variants {
		mv := res.Variants[i]
		if r.Variants[i].Stack == nil || mv.Scenario == nil || vr.Summary == nil {
			continue
		}
		s := *mv.Scenario
		s.Duration = r.Plan.Variants[i].Stack.Window
		vr.Scenario = &s
	}
	return nil
}
