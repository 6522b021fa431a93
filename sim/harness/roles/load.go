package roles

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/netem"
)

// request is one web request in flight in the lab process.
type request struct {
	id     int
	user   int
	sent   time.Time
	at     time.Time // when it reaches the workers
	worker int
	proc   *workerProc // the process it was sent to
	done   chan bool   // a worker finished it (true: a call failed)
	end    time.Time   // when the worker finished it (set before done)
}

// dispatchLead is how long before a request reaches the workers its job is
// sent to one: a job crosses a pipe and wakes a process up, which takes
// longer when the machine is busy, and the worker then starts the request
// at its arrival time exactly. Sent on arrival, every request would start
// that much late, and a pause or think time would last that much longer
// than the model's, which matters most to the keep-alive race, where a
// few milliseconds decide.
const dispatchLead = 2 * time.Millisecond

// loadGen sends the scenario's requests: closed-loop users or open-loop
// arrivals (the same arrival times as the model for the same seed), each
// crossing client_rtt/2 to the workers and back. A user's next request
// leaves think_time (and pause) after the previous one ended at the worker,
// as measured there.
type loadGen struct {
	s  *sim.Scenario
	lp *labProc
	// serve runs the request and reports whether a call failed; it sets
	// r.end when it knows better than its own return when the request
	// ended. r.at is when the request reaches the workers: lead before it,
	// serve may hand it on.
	serve func(ctx context.Context, r *request) bool
	lead  time.Duration
	// netRTT: serve crosses a real emulated path of client_rtt (the proxy
	// setup), so the generator adds no delay of its own.
	netRTT  bool
	mu      sync.Mutex
	sent    int
	arrived int
}

func (g *loadGen) canSend() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sent >= g.s.Requests {
		return false
	}
	g.sent++
	return true
}

func (g *loadGen) half() time.Duration {
	if g.netRTT {
		return 0
	}
	return g.s.ClientRTT / 2
}

// dispatchAt is when a request sent at sent is handed on.
func (g *loadGen) dispatchAt(sent time.Time) time.Time { return sent.Add(g.half() - g.lead) }

// one runs one request sent at sent and returns when its answer reached
// the user.
func (g *loadGen) one(ctx context.Context, user int, sent time.Time) time.Time {
	half := g.half()
	at := sent.Add(half)
	netem.SleepUntil(g.dispatchAt(sent))
	g.mu.Lock()
	g.arrived++
	r := &request{id: g.arrived, user: user, sent: sent, at: at, done: make(chan bool, 1)}
	g.mu.Unlock()
	failed := g.serve(ctx, r)
	end := r.end
	if end.IsZero() {
		end = time.Now()
	}
	netem.SleepUntil(end.Add(half))
	end = end.Add(half)
	e := &sim.Event{Kind: sim.KindRequest, At: g.lp.since(end), Req: r.id, Worker: r.worker, Start: g.lp.since(sent), Total: end.Sub(sent)}
	if failed {
		e.Error = string(sim.ErrorCallFailed)
	}
	g.lp.emit(e)
	g.lp.progress()
	return end
}

func (g *loadGen) run(ctx context.Context, seed uint64) {
	s := g.s
	t0 := g.lp.t0
	var wg sync.WaitGroup
	if s.Load == sim.LoadOpen {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		var at time.Duration
		for g.canSend() {
			sent := t0.Add(at)
			if netem.SleepCtx(ctx, g.dispatchAt(sent)) != nil {
				break
			}
			wg.Add(1)
			go func() { defer wg.Done(); g.one(ctx, -1, sent) }()
			gap := 1 / s.Rate
			if s.Arrival == sim.ArrivalPoisson {
				gap = -math.Log(1-rng.Float64()) / s.Rate
			}
			at += time.Duration(gap * float64(time.Second))
		}
		wg.Wait()
		return
	}
	for u := range s.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent := t0
			for n := 1; ctx.Err() == nil && g.canSend(); n++ {
				if netem.SleepCtx(ctx, g.dispatchAt(sent)) != nil {
					return
				}
				next := g.one(ctx, u, sent).Add(s.ThinkTime)
				if s.PauseEvery > 0 && n%s.PauseEvery == 0 {
					next = next.Add(s.Pause)
				}
				sent = next
			}
		}()
	}
	wg.Wait()
}
