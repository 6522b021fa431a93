package roles

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/wire"
)

// workerProc is one worker process as the lab process sees it.
type workerProc struct {
	slot   atomic.Int32 // 1-based (0: a spare not yet in one)
	serial int          // 1-based, in the order processes were started
	cmd    *exec.Cmd
	in     *wire.Writer
	stdin  io.WriteCloser
	ready  chan struct{}
	exited chan struct{}
	err    error // why it failed to start, or exited early
}

// dispatcher runs the pool of worker processes with the model's dispatch
// rules (sim/worker.go):
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
	// the run, a Go process's start-up would hold the next requests up and
	// slow the calls beside it.
	spares    []*workerProc
	spawned   int
	lingering int // retired processes waiting for the run's end (wire.Job.Linger)
	// command makes a worker process and its config line; nil: this
	// binary as the harness's own worker (spawn). low: it starts at the
	// lowest priority (during a run) and should raise it when ready.
	command func(low bool) (*exec.Cmd, []byte, error)
	// running: the run has begun (start has returned).
	running bool
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
	if s.Mode == sim.ModeCLI {
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
	if d.queued() {
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
	d.mu.Lock()
	d.running = true
	d.mu.Unlock()
	return nil
}

// spawn starts the worker process for slot id (0: a spare) by re-executing
// this binary.
func (d *dispatcher) spawn(id int) (*workerProc, error) {
	lp := d.lp
	var cmd *exec.Cmd
	var raw []byte
	var err error
	// The harness's own workers always start low and rise when ready;
	// another program (a PHP runtime, seconds of warm-up) starts low only
	// when it replaces one during the run, so that before the run the
	// workers warm up at the lab process's priority.
	low := lp.raised && (d.command == nil || d.running)
	if d.command != nil {
		cmd, raw, err = d.command(low)
	} else {
		cmd, raw, err = lp.ownWorker()
	}
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = kernel.ChildAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	start := cmd.Start
	if low {
		start = func() error { return kernel.StartLowPriority(cmd) } // see wire.WorkerConfig.Nice
	}
	if err := start(); err != nil {
		return nil, fmt.Errorf("harness: cannot start worker process %s: %w", lp.exe, err)
	}
	p := &workerProc{cmd: cmd, in: wire.NewWriter(stdin), stdin: stdin, ready: make(chan struct{}), exited: make(chan struct{})}
	p.slot.Store(int32(id))
	d.allMu.Lock()
	d.spawned++
	p.serial = d.spawned
	d.all = append(d.all, p)
	d.allMu.Unlock()
	if err := p.in.Send(&wire.Msg{Config: raw}); err != nil {
		cmd.Process.Kill()
	}
	go d.read(p, stdout)
	return p, nil
}

// ownWorker is the harness's own worker process: this binary, told what
// the scenario and servers are.
func (lp *labProc) ownWorker() (*exec.Cmd, []byte, error) {
	// The process stamps its events with worker 1; read puts its slot in.
	cfg := wire.WorkerConfig{Setup: lp.job.Setup, Scenario: lp.job.Scenario, Worker: 1, Upstream: lp.upstreamAddr,
		DNS: lp.dnsAddr, Redis: lp.redisAddr, CAPEM: lp.job.Certs.CAPEM, Warm: &lp.job.Certs, Nice: lp.raised}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	return exec.Command(lp.exe, Command, RoleWorker), raw, nil
}

// read forwards a worker's events and completions.
func (d *dispatcher) read(p *workerProc, stdout io.Reader) {
	defer close(p.exited)
	lr := wire.NewReader(stdout)
	readyClosed := false
	for {
		m, err := lr.Next()
		if err != nil {
			if err != io.EOF {
				p.err = err
			}
			break
		}
		switch {
		case m.Ev != nil:
			e := *m.Ev
			if e.Worker != 0 {
				e.Worker = int(p.slot.Load())
			}
			// Connection ids are the process's own: a replacement in the
			// same slot numbers its connections from 1 again.
			d.lp.emitWorker(-p.serial, &e)
		case m.Ready:
			if m.Info != nil {
				d.lp.workerInfo(p.serial, m.Info, false)
			}
			if !readyClosed {
				close(p.ready)
				readyClosed = true
			}
		case m.Info != nil:
			d.lp.workerInfo(p.serial, m.Info, true)
		case m.Check != nil:
			d.lp.workerCheck(m.Check)
		case m.Done > 0:
			d.lp.noteLag(netem.Lag{Max: time.Duration(m.LagUS) * time.Microsecond, Late: m.Late,
				WriteMax: time.Duration(m.WriteLagUS) * time.Microsecond, LateWrites: m.LateWrites})
			d.mu.Lock()
			r := d.reqs[m.Done]
			delete(d.reqs, m.Done)
			d.mu.Unlock()
			if r != nil {
				if m.End != 0 {
					r.end = wire.WallTime(m.End)
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

// queued: requests wait in one queue for a free slot of any worker (see
// dispatcher); otherwise each worker has a queue of its own.
func (d *dispatcher) queued() bool { return d.s.Threads > 0 && d.s.Dispatch == sim.DispatchQueue }

// dispatch hands an arrived request to a worker, or queues it.
func (d *dispatcher) dispatch(r *request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.s
	if d.queued() {
		if len(d.free) == 0 {
			d.wait = append(d.wait, r)
			return
		}
		w := d.free[0]
		d.free = d.free[1:]
		d.assign(r, w)
		return
	}
	var w int
	switch s.Dispatch {
	case sim.DispatchRandom:
		w = d.rng.IntN(s.Workers)
	default:
		w = d.rr % s.Workers
		d.rr++
	}
	if s.Threads == 0 || d.busy[w] < s.Threads {
		d.assign(r, w)
		return
	}
	d.perW[w] = append(d.perW[w], r)
}

// assign takes a slot of worker w for r and sends it; d.mu is held.
func (d *dispatcher) assign(r *request, w int) {
	d.busy[w]++
	d.send(r, w)
}

// send gives r to the process in slot w (once it is ready); d.mu is held.
func (d *dispatcher) send(r *request, w int) {
	p := d.procs[w]
	r.worker, r.proc = w+1, p
	d.reqs[r.id] = r
	j := &wire.Job{Req: r.id, T0: d.lp.t0.UnixNano()}
	if !r.at.IsZero() {
		j.At = r.at.UnixNano()
	}
	go func() {
		select {
		case <-p.ready:
			p.in.Send(&wire.Msg{Job: j})
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
	if s.Mode == sim.ModeCLI || (s.MaxRequests > 0 && d.served[w] >= s.MaxRequests) {
		old := d.procs[w]
		linger := d.lingering < maxLinger
		if linger {
			d.lingering++
		}
		go old.in.Send(&wire.Msg{Job: &wire.Job{Exit: true, Linger: linger}})
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
	if d.queued() {
		if len(d.wait) == 0 {
			d.free = append(d.free, w)
			return
		}
		r := d.wait[0]
		d.wait = d.wait[1:]
		d.assign(r, w)
		return
	}
	if len(d.perW[w]) > 0 {
		r := d.perW[w][0]
		d.perW[w] = d.perW[w][1:]
		d.assign(r, w)
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
