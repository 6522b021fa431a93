package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/connlab/connlab/sim"
)

// workerProc is one worker process as the lab process sees it.
type workerProc struct {
	slot   atomic.Int32 // 1-based (0: a spare not yet in one)
	serial int          // 1-based, in the order processes were started
	cmd    *exec.Cmd
	in     *lineWriter
	stdin  io.WriteCloser
	ready  chan struct{}
	exited chan struct{}
	err    error // why it failed to start, or exited early
}

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

// pool of worker processes with the model's dispatch rules (sim/worker.go):
// "queue" hands a request to the worker idle longest, interleaving slots so
// an idle worker goes before a second thread of a busy one; "round-robin"
// and "random" pick a worker and queue there; threads = 0 is unlimited.
type dispatcher struct {
	s      *sim.Scenario
	lp     *labProc
	rng    *rand.Rand
	mu     sync.Mutex
	procs  []*workerProc
	allMu  sync.Mutex
	all    []*workerProc // every process started, for shutdown
	busy   []int
	served []int
	free   []int // queue mode: free slots, longest idle first
	wait   []*request
	perW   [][]*request
	rr     int
	reqs   map[int]*request
	// spares are worker processes started and warmed up before the run,
	// each taking the slot of one that retires (pm.max_requests, CLI
	// mode) at once, as PHP-FPM forks a child on demand: started during
	// the run, a Go process's start-up held the next requests up by tens
	// of milliseconds and slowed the calls beside it.
	spares    []*workerProc
	spawned   int
	lingering int // retired processes waiting for the run's end (job.Linger)
}

// maxLinger bounds the retired worker processes left until the run ends;
// past it they exit when they retire.
const maxLinger = 16

// maxSpares bounds the spare worker processes started before a run.
const maxSpares = 16

// sparesWanted estimates how many workers retire during the run.
func (d *dispatcher) sparesWanted() int {
	s := d.s
	per := s.MaxRequests
	if s.Mode == "cli" {
		per = 1
	}
	if per <= 0 {
		return 0
	}
	n := s.Workers
	if s.Requests > 0 {
		n = s.Requests / per
	}
	return min(n, maxSpares)
}

func newDispatcher(lp *labProc, s *sim.Scenario, rng *rand.Rand) *dispatcher {
	d := &dispatcher{s: s, lp: lp, rng: rng, busy: make([]int, s.Workers), served: make([]int, s.Workers),
		perW: make([][]*request, s.Workers), reqs: map[int]*request{}}
	if s.Threads > 0 && s.Dispatch == "queue" {
		for t := 0; t < s.Threads; t++ {
			for w := range s.Workers {
				d.free = append(d.free, w)
			}
		}
	}
	return d
}

// start spawns every worker process and the spares, and waits until they
// are ready.
func (d *dispatcher) start(ctx context.Context) error {
	d.procs = make([]*workerProc, d.s.Workers)
	for i := range d.procs {
		p, err := d.spawn(i + 1)
		if err != nil {
			return err
		}
		d.procs[i] = p
	}
	for range d.sparesWanted() {
		p, err := d.spawn(0)
		if err != nil {
			return err
		}
		d.spares = append(d.spares, p)
	}
	for _, p := range slices.Concat(d.procs, d.spares) {
		select {
		case <-p.ready:
		case <-p.exited:
			return fmt.Errorf("harness: worker process %d exited before it was ready: %v", p.serial, p.err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// spawn starts the worker process for slot id (0: a spare) by re-executing
// this binary.
func (d *dispatcher) spawn(id int) (*workerProc, error) {
	lp := d.lp
	// The process stamps its events with worker 1; read puts its slot in.
	cfg := workerConfig{Setup: lp.job.Setup, Scenario: lp.job.Scenario, Worker: 1, Upstream: lp.upstreamAddr,
		DNS: lp.dnsAddr, Redis: lp.redisAddr, CAPEM: lp.job.Certs.CAPEM, Warm: &lp.job.Certs, Nice: lp.raised}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(lp.exe)
	cmd.Env = append(os.Environ(), envRole+"=worker")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	start := cmd.Start
	if lp.raised {
		start = func() error { return startLowPriority(cmd) } // see workerConfig.Nice
	}
	if err := start(); err != nil {
		return nil, fmt.Errorf("harness: cannot start worker process %s: %w", lp.exe, err)
	}
	p := &workerProc{cmd: cmd, in: newLineWriter(stdin), stdin: stdin, ready: make(chan struct{}), exited: make(chan struct{})}
	p.slot.Store(int32(id))
	d.allMu.Lock()
	d.spawned++
	p.serial = d.spawned
	d.all = append(d.all, p)
	d.allMu.Unlock()
	if err := p.in.send(&msg{Config: raw}); err != nil {
		cmd.Process.Kill()
	}
	go d.read(p, stdout)
	return p, nil
}

// read forwards a worker's events and completions.
func (d *dispatcher) read(p *workerProc, stdout io.Reader) {
	defer close(p.exited)
	lr := newLineReader(stdout)
	readyClosed := false
	for {
		m, err := lr.next()
		if err != nil {
			if err != io.EOF {
				p.err = err
			}
			break
		}
		switch {
		case m.Ev != nil:
			e := m.Ev.event()
			if e.Worker != 0 {
				e.Worker = int(p.slot.Load())
			}
			// Connection ids are the process's own: a replacement in the
			// same slot numbers its connections from 1 again.
			d.lp.emitWorker(-p.serial, &e)
		case m.Ready:
			if !readyClosed {
				close(p.ready)
				readyClosed = true
			}
		case m.Done > 0:
			d.mu.Lock()
			r := d.reqs[m.Done]
			delete(d.reqs, m.Done)
			d.mu.Unlock()
			if r != nil {
				if m.End != 0 {
					r.end = wallTime(m.End)
				}
				r.done <- m.Fail
			}
		case m.Error != "":
			p.err = fmt.Errorf("%s", m.Error)
		}
	}
	werr := p.cmd.Wait()
	if p.err == nil && werr != nil {
		p.err = werr
	}
	d.mu.Lock()
	pending := []*request{}
	for id, r := range d.reqs {
		if r.proc == p {
			pending = append(pending, r)
			delete(d.reqs, id)
		}
	}
	d.mu.Unlock()
	for _, r := range pending {
		d.lp.fail(fmt.Errorf("harness: worker %d exited with request %d in hand: %v", r.worker, r.id, p.err))
		r.done <- true
	}
}

// dispatch hands an arrived request to a worker, or queues it.
func (d *dispatcher) dispatch(r *request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.s
	if s.Threads > 0 && s.Dispatch == "queue" {
		if len(d.free) > 0 {
			w := d.free[0]
			d.free = d.free[1:]
			d.busy[w]++
			d.send(r, w)
			return
		}
		d.wait = append(d.wait, r)
		return
	}
	var w int
	switch s.Dispatch {
	case "random":
		w = d.rng.IntN(s.Workers)
	default:
		w = d.rr % s.Workers
		d.rr++
	}
	if s.Threads == 0 || d.busy[w] < s.Threads {
		d.busy[w]++
		d.send(r, w)
		return
	}
	d.perW[w] = append(d.perW[w], r)
}

// send gives r to the process in slot w (once it is ready); d.mu is held.
func (d *dispatcher) send(r *request, w int) {
	p := d.procs[w]
	r.worker, r.proc = w+1, p
	d.reqs[r.id] = r
	j := &job{Req: r.id, T0: d.lp.t0.UnixNano()}
	if !r.at.IsZero() {
		j.At = r.at.UnixNano()
	}
	go func() {
		select {
		case <-p.ready:
			p.in.send(&msg{Job: j})
		case <-p.exited:
		}
	}()
}

// finished frees worker w's slot after a request, replacing the process
// when pm.max_requests is reached (or after every request in CLI mode),
// and takes the next queued request.
func (d *dispatcher) finished(w int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.s
	d.busy[w]--
	d.served[w]++
	if s.Mode == "cli" || (s.MaxRequests > 0 && d.served[w] >= s.MaxRequests) {
		old := d.procs[w]
		linger := d.lingering < maxLinger
		if linger {
			d.lingering++
		}
		go old.in.send(&msg{Job: &job{Exit: true, Linger: linger}})
		if len(d.spares) > 0 {
			p := d.spares[0]
			d.spares = d.spares[1:]
			p.slot.Store(int32(w + 1))
			d.procs[w] = p
		} else if p, err := d.spawn(w + 1); err != nil {
			d.lp.fail(err)
		} else {
			d.procs[w] = p
		}
		d.served[w] = 0
	}
	if s.Threads > 0 && s.Dispatch == "queue" {
		if len(d.wait) > 0 {
			r := d.wait[0]
			d.wait = d.wait[1:]
			d.busy[w]++
			d.send(r, w)
			return
		}
		d.free = append(d.free, w)
		return
	}
	if len(d.perW[w]) > 0 {
		r := d.perW[w][0]
		d.perW[w] = d.perW[w][1:]
		d.busy[w]++
		d.send(r, w)
	}
}

// stop ends every worker process: stdin closed, then a kill after a grace
// period.
func (d *dispatcher) stop() {
	d.allMu.Lock()
	all := append([]*workerProc(nil), d.all...)
	d.allMu.Unlock()
	for _, p := range all {
		p.stdin.Close()
	}
	timeout := time.After(10 * time.Second)
	for _, p := range all {
		select {
		case <-p.exited:
		case <-timeout:
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
}

// dispatchLead is how long before a request reaches the workers its job is
// sent to one: a job crosses a pipe and wakes a process up (0.1–0.3 ms,
// more when the machine is busy), and the worker then starts the request
// at its arrival time exactly. Sent on arrival, every request would start
// that much late, and a pause or think time would last that much longer
// than the model's: the keep-alive race, which hangs on a few
// milliseconds, came out shifted.
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
	SleepUntil(g.dispatchAt(sent))
	g.mu.Lock()
	g.arrived++
	r := &request{id: g.arrived, user: user, sent: sent, at: at, done: make(chan bool, 1)}
	g.mu.Unlock()
	failed := g.serve(ctx, r)
	end := r.end
	if end.IsZero() {
		end = time.Now()
	}
	SleepUntil(end.Add(half))
	end = end.Add(half)
	e := &sim.Event{Kind: sim.KindRequest, At: g.lp.since(end), Req: r.id, Worker: r.worker, Start: g.lp.since(sent), Total: end.Sub(sent)}
	if failed {
		e.Error = "a call failed"
	}
	g.lp.emit(e)
	g.lp.progress()
	return end
}

func (g *loadGen) run(ctx context.Context, seed uint64) {
	s := g.s
	t0 := g.lp.t0
	var wg sync.WaitGroup
	if s.Load == "open" {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		var at time.Duration
		for g.canSend() {
			sent := t0.Add(at)
			if sleepCtx(ctx, g.dispatchAt(sent)) != nil {
				break
			}
			wg.Add(1)
			go func() { defer wg.Done(); g.one(ctx, -1, sent) }()
			gap := 1 / s.Rate
			if s.Arrival == "poisson" {
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
				if sleepCtx(ctx, g.dispatchAt(sent)) != nil {
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
