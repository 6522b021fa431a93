package roles

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
	"strconv"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/pki"
	"github.com/connlab/connlab/sim/harness/servers"
	"github.com/connlab/connlab/sim/harness/wire"
)

// labProc is the process that runs one variant: in a private network and
// PID namespace when the kernel allows, so its sockets, sysctls and
// children are its own, and all of them die with it.
type labProc struct {
	job wire.LabJob
	out *wire.Writer
	exe string
	t0  time.Time
	// raised: this process runs at nice -20, so its workers can start at 19
	// and raise theirs when ready (wire.WorkerConfig.Nice)
	raised bool
	// tableErr: why the process could not move to a network namespace
	// with a TCP table of its own (kernel.ExecOwnTable)
	tableErr error

	upstreamAddr, dnsAddr, redisAddr string

	mu        sync.Mutex
	connIDs   map[[2]int]int
	nextConn  int
	open      int
	openPeak  int
	sawOpen   bool
	err       error
	done      int
	lastNote  time.Time
	wallStart time.Time
	lag       netem.Lag // since the run's start: this process's and its workers'
	// use: what this process used in the run's first wire.StartWindow
	// (see noteUse); useGen tells a timer of an earlier start apart
	useAt    kernel.Usage
	use      *wire.StartUse
	useGen   int
	useTimer *time.Timer
	// shareAt: the machine's and the run's CPU time when the process
	// began, for what other programs took during the run and the
	// measurements before it (wire.Share)
	shareAt kernel.Share
	shareOK bool

	// A setup whose workers are not the harness's own sets these:
	// workerCommand makes a worker process and its config line, and
	// beforeRun runs once the workers are ready, before the run; php is
	// what PHP workers said.
	workerCommand func(low bool) (*exec.Cmd, []byte, error)
	beforeRun     func(ctx context.Context, d *dispatcher) error
	php           *phpState
}

func (lp *labProc) since(t time.Time) time.Duration { return t.Sub(lp.t0) }

// start sets the run's time 0: what the process fell behind its emulated
// network before it (warm-ups, measures) is not the run's.
func (lp *labProc) start(t0 time.Time) {
	netem.TakeLag()
	u, ok := kernel.ReadUsage()
	lp.mu.Lock()
	lp.lag = netem.Lag{}
	lp.useGen++
	lp.useAt, lp.use = u, nil
	if lp.useTimer != nil {
		lp.useTimer.Stop()
		lp.useTimer = nil
	}
	if ok {
		gen := lp.useGen
		lp.useTimer = time.AfterFunc(wire.StartWindow, func() { lp.noteUse(gen) })
	}
	lp.mu.Unlock()
	lp.t0 = t0
}

// noteUse records what the process used since the run of generation gen
// started, at the end of wire.StartWindow.
func (lp *labProc) noteUse(gen int) {
	u, ok := kernel.ReadUsage()
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if ok && gen == lp.useGen {
		lp.recordUse(u)
	}
}

// recordUse records u, less what had been used at the run's start, as the
// run's start use, unless it has one; lp.mu is held.
func (lp *labProc) recordUse(u kernel.Usage) {
	if lp.use == nil {
		d := u.Sub(lp.useAt)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		lp.use = &wire.StartUse{CPUMS: ms(d.CPU), Faults: d.Faults, DiskFaults: d.Disk}
		if d.HasRunDelay {
			v := ms(d.RunDelay)
			lp.use.RunDelayMS = &v
		}
		if d.HasSteal {
			v := ms(d.Steal)
			lp.use.StealMS = &v
		}
	}
}

// noteLag adds a worker's (or this process's) lag to the run's.
func (lp *labProc) noteLag(l netem.Lag) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	lp.lag = lp.lag.Add(l)
}

// emit sends an event to the parent and follows the open connections.
func (lp *labProc) emit(e *sim.Event) {
	lp.mu.Lock()
	switch {
	case e.Kind == sim.KindOpen:
		lp.sawOpen = true
		lp.open++
		lp.openPeak = max(lp.openPeak, lp.open)
	case e.Kind == sim.KindClose && e.Conn != 0:
		lp.open--
	}
	lp.mu.Unlock()
	lp.out.Event(e)
}

// emitWorker renumbers the connection ids of one source (an in-process
// worker, or a worker process: any number unique to it) into one sequence.
func (lp *labProc) emitWorker(w int, e *sim.Event) {
	if e.Conn != 0 {
		lp.mu.Lock()
		k := [2]int{w, e.Conn}
		id, ok := lp.connIDs[k]
		if !ok {
			lp.nextConn++
			id = lp.nextConn
			lp.connIDs[k] = id
		}
		lp.mu.Unlock()
		e.Conn = id
	}
	lp.emit(e)
}

// serverEvent stamps an upstream's socket event with the run's clock.
func (lp *labProc) serverEvent(e *sim.Event) {
	e.At = lp.since(time.Now())
	lp.emit(e)
}

func (lp *labProc) fail(err error) {
	lp.mu.Lock()
	if lp.err == nil {
		lp.err = err
	}
	lp.mu.Unlock()
}

// progress reports the count of finished requests about once a second.
func (lp *labProc) progress() {
	lp.mu.Lock()
	lp.done++
	now := time.Now()
	send := now.Sub(lp.lastNote) >= time.Second
	if send {
		lp.lastNote = now
	}
	n := lp.done
	lp.mu.Unlock()
	if send {
		lp.out.Send(&wire.Msg{Progress: fmt.Sprintf("%s/%s: %d of %d requests", lp.job.Block, lp.job.Variant, n, lp.job.Scenario.Requests)})
	}
}

// labMain is a lab process: a job on stdin, events, progress and a report
// on stdout.
func labMain(stdin io.Reader, stdout io.Writer) error {
	// Before anything is read: on success this process starts over.
	tableErr := kernel.ExecOwnTable()
	out := wire.NewWriter(stdout)
	m, err := wire.NewReader(stdin).Next()
	if err != nil {
		return err
	}
	lp := &labProc{out: out, connIDs: map[[2]int]int{}, wallStart: time.Now(), lastNote: time.Now(), tableErr: tableErr}
	if err := json.Unmarshal(m.Config, &lp.job); err != nil {
		return fmt.Errorf("harness: lab process: bad job: %v", err)
	}
	stop := make(chan struct{})
	go out.FlushEvery(50*time.Millisecond, stop)
	rep, err := lp.run(context.Background())
	close(stop)
	if err == nil {
		err = lp.err
	}
	if err != nil {
		out.Send(&wire.Msg{Error: err.Error()})
		return err
	}
	return out.Send(&wire.Msg{Result: rep})
}

// run prepares the lab process (priority, namespace, the TLS handshake's
// CPU) and runs the variant on its setup.
func (lp *labProc) run(ctx context.Context) (*wire.Report, error) {
	job := &lp.job
	s := &job.Scenario
	st, ok := setups[job.Setup]
	if !ok {
		return nil, fmt.Errorf("harness: unknown setup %q", job.Setup)
	}
	rep := &wire.Report{}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	lp.exe = exe
	// The machine's share from here: the measurements the model is given
	// (a TLS handshake's CPU, the workers' warm-up measures) are made on
	// the same machine as the run, and a busy one skews both.
	lp.shareAt, lp.shareOK = kernel.ReadShare(lp.job.ParentPID)
	lp.start(time.Now())
	if slackErr != nil {
		rep.Notes = append(rep.Notes, "the processes' timer slack could not be lowered ("+slackErr.Error()+"): timed waits in the kernel may end that much late")
	}
	if err := kernel.RaisePriority(); err != nil {
		rep.Notes = append(rep.Notes, "ran at normal CPU priority (raising it was refused: "+err.Error()+"); a busy machine slows real runs down")
	} else {
		lp.raised = true
		rep.Components = append(rep.Components, "CPU priority nice -20 (lab process, workers and servers)")
	}

	if job.Isolated {
		if err := kernel.LoopbackUp(); err != nil {
			return nil, err
		}
		switch n, err := kernel.SetUpOwnTable(); {
		case err != nil:
			return nil, fmt.Errorf("harness: the network namespace's own TCP table: %w", err)
		case n > 0:
			rep.Components = append(rep.Components, fmt.Sprintf("a TCP socket table of its own in the network namespace (%d buckets): reading the sockets does not walk the host's", n))
		case lp.tableErr != nil:
			rep.Notes = append(rep.Notes, fmt.Sprintf("the network namespace shares the host's TCP socket table (%v): every reading of the sockets walks all of it, a few ms of CPU", lp.tableErr))
		}
		// The servers take their ports from a range the clients' range
		// cannot overlap.
		lo, hi := 60000, 65535
		if s.PortRange.Hi >= 60000 {
			lo, hi = 1024, 9999
		}
		if err := kernel.WriteSysctl("net/ipv4/ip_local_port_range", fmt.Sprintf("%d %d", lo, hi)); err != nil {
			return nil, err
		}
	}
	if s.TLS != sim.TLSNone && !st.ownTLS && (s.HandshakeCPU == 0 || s.TLSResume && s.ResumeCPU == 0) {
		idle := quietSpell(s)
		hs, err := servers.MeasureHandshake(&job.Certs, s.TLS, s.Cert, idle)
		if err != nil {
			return nil, fmt.Errorf("harness: measuring a TLS handshake: %w", err)
		}
		when := ""
		if idle > 0 {
			when = fmt.Sprintf(" after %s idle, as this run's calls come after quiet spells", sim.FormatDuration(idle))
		}
		if s.HandshakeCPU == 0 {
			rep.HandshakeCPU = hs.Full
			rep.Components = append(rep.Components, fmt.Sprintf("Go crypto/tls: a full TLS %s handshake (%s) costs %s of CPU here%s; the model is given the same (handshake_cpu), not OpenSSL's speed", s.TLS, s.Cert, sim.FormatDuration(hs.Full), when))
		}
		if s.TLSResume && s.ResumeCPU == 0 {
			rep.ResumeCPU = hs.Resumed
			rep.Components = append(rep.Components, fmt.Sprintf("Go crypto/tls: a resumed TLS %s handshake costs %s of CPU here%s; the model is given the same (resume_cpu)", s.TLS, sim.FormatDuration(hs.Resumed), when))
		}
	}
	var cleanup []func()
	defer func() {
		for _, f := range slices.Backward(cleanup) {
			f()
		}
	}()
	return st.run(lp, ctx, rep, &cleanup)
}

// Quiet spells: a worker that waits about minQuiet or more between calls
// (a slow open loop, users who think or pause) meets each handshake with
// cold caches, and the handshake is measured after as long an idle pause,
// up to maxQuiet (each of the measurement's handshakes waits it out).
const (
	minQuiet = 20 * time.Millisecond
	maxQuiet = 250 * time.Millisecond
)

// quietSpell returns how long a worker of s typically waits between
// calls, up to maxQuiet, or 0 when that is under minQuiet: with an open
// loop the gap between a worker's arrivals (workers / rate), with a
// closed one the pause taken every pause_every requests or else each
// user's think time shared over the worker's users.
func quietSpell(s *sim.Scenario) time.Duration {
	var gap time.Duration
	switch {
	case s.Load == sim.LoadOpen && s.Rate > 0:
		gap = time.Duration(float64(max(s.Workers, 1)) / s.Rate * float64(time.Second))
	case s.Load == sim.LoadOpen:
	case s.PauseEvery > 0 && s.Pause > 0:
		gap = s.Pause
	case s.ThinkTime > 0:
		gap = s.ThinkTime * time.Duration(max(s.Workers, 1)) / time.Duration(max(s.Concurrency, 1))
	}
	if gap < minQuiet {
		return 0
	}
	return min(gap, maxQuiet)
}

// startHTTP starts the http setup's servers: the upstream, and the DNS
// server when the scenario has lookups.
func (lp *labProc) startHTTP(rep *wire.Report, cleanup *[]func()) (port int, err error) {
	job := &lp.job
	s := &job.Scenario
	if s.DNS > 0 {
		d, err := servers.StartDNS("", 0) // the workers hold its answers (resolver.hold)
		if err != nil {
			return 0, err
		}
		*cleanup = append(*cleanup, d.Close)
		lp.dnsAddr = d.Addr
		rep.Components = append(rep.Components, fmt.Sprintf("DNS: miekg/dns on %s, answers %s, each answer held %s at the resolver's end", d.Addr, pki.APIHost, sim.FormatDuration(s.DNS)))
	}
	up, err := lp.startUpstream(servers.OwnClients, rep, cleanup)
	if err != nil {
		return 0, err
	}
	lp.upstreamAddr = up.Addr()
	return up.Port(), nil
}

// startUpstream starts the upstream for clients who, and lists it.
func (lp *labProc) startUpstream(who servers.Clients, rep *wire.Report, cleanup *[]func()) (*servers.Upstream, error) {
	s := &lp.job.Scenario
	cfg := servers.ConfigFor(s, s.RTT, who)
	cfg.Seed = lp.job.Seed
	up, err := servers.StartUpstream("", cfg, &lp.job.Certs, lp.serverEvent)
	if err != nil {
		return nil, err
	}
	*cleanup = append(*cleanup, up.Close)
	rep.Components = append(rep.Components, up.String())
	return up, nil
}

// startRedis starts the redis setup's server: miniredis, or redis-server
// when asked for.
func (lp *labProc) startRedis(rep *wire.Report, cleanup *[]func()) (port int, err error) {
	job := &lp.job
	r, err := servers.StartRedis(slices.Contains(job.Real, "redis"), job.Scenario.RTT, job.Dir)
	if err != nil {
		return 0, err
	}
	*cleanup = append(*cleanup, r.Close)
	lp.redisAddr = r.Addr
	rep.Components = append(rep.Components, "Redis: "+r.Desc+" on "+r.Addr+", go-redis v9 clients")
	return r.Port(), nil
}

// runWorkers runs a variant on worker processes calling the servers that
// start started, whose port's sockets are counted.
func (lp *labProc) runWorkers(ctx context.Context, rep *wire.Report, cleanup *[]func(), start func(*wire.Report, *[]func()) (int, error)) (*wire.Report, error) {
	s := &lp.job.Scenario
	serverPort, err := start(rep, cleanup)
	if err != nil {
		return nil, err
	}
	if err := lp.setPorts(rep); err != nil {
		return nil, err
	}
	d := newDispatcher(lp, s, rand.New(rand.NewPCG(lp.job.Seed, 1)))
	d.command = lp.workerCommand
	*cleanup = append(*cleanup, d.stop)
	if err := d.start(ctx); err != nil {
		return nil, err
	}
	if lp.beforeRun != nil {
		if err := lp.beforeRun(ctx, d); err != nil {
			return nil, err
		}
	}
	rep.Components = append(rep.Components, fmt.Sprintf("%d worker process(es), pid namespace: %v", s.Workers, lp.job.Isolated))
	settle(labWarmHeap)
	lp.start(time.Now().Add(dispatchLead)) // the first jobs leave now
	smp := kernel.StartSampler(serverPort, 20*time.Millisecond, lp.since, lp.emit)
	gen := &loadGen{s: s, lp: lp, lead: dispatchLead, serve: func(ctx context.Context, r *request) bool {
		d.dispatch(r)
		failed := <-r.done
		d.finished(r.worker - 1)
		return failed
	}}
	gen.run(ctx, lp.job.Seed)
	return lp.finish(rep, smp)
}

// setPorts narrows the clients' port range and sets tcp_tw_reuse, in the
// private namespace only, after the servers have their ports.
func (lp *labProc) setPorts(rep *wire.Report) error {
	job := &lp.job
	s := &job.Scenario
	if !job.Isolated {
		rep.Notes = append(rep.Notes, "no private network namespace: the host's port range and tcp_tw_reuse apply; TIME_WAIT is counted on the server's port")
		return nil
	}
	if err := kernel.WriteSysctl("net/ipv4/ip_local_port_range", fmt.Sprintf("%d %d", s.PortRange.Lo, s.PortRange.Hi)); err != nil {
		return err
	}
	if err := kernel.WriteSysctl("net/ipv4/tcp_tw_reuse", strconv.Itoa(job.KernelTWReuse)); err != nil {
		return err
	}
	rep.Components = append(rep.Components, fmt.Sprintf("private network namespace: ip_local_port_range %d-%d, tcp_tw_reuse %d", s.PortRange.Lo, s.PortRange.Hi, job.KernelTWReuse))
	return nil
}

func (lp *labProc) finish(rep *wire.Report, smp *kernel.Sampler) (*wire.Report, error) {
	s := &lp.job.Scenario
	tw, stw, open, err := smp.Finish(max(s.RTT, s.ClientRTT)/2+10*time.Millisecond, 2*max(s.RTT, s.ClientRTT)+100*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("harness: reading /proc/net/tcp: %w", err)
	}
	if end, ok := kernel.ReadShare(lp.job.ParentPID); ok && lp.shareOK {
		u := end.Sub(lp.shareAt)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		rep.Share = &wire.Share{WallMS: ms(u.Wall), RunCPUMS: ms(u.Run), Procs: u.Procs, OthersCPUMS: ms(u.Others), OthersProcs: u.OtherProcs,
			StealMS: ms(u.Steal), OthersCPUs: math.Round(u.OthersCPUs()*100) / 100}
	}
	lp.noteLag(netem.TakeLag())
	u, ok := kernel.ReadUsage()
	lp.mu.Lock()
	if ok && lp.useTimer != nil {
		lp.recordUse(u) // a run shorter than the window: what it used
	}
	rep.Start = lp.use
	rep.LagMS, rep.LateReads = float64(lp.lag.Max.Microseconds())/1000, lp.lag.Late
	rep.WriteLagMS, rep.LateWrites = float64(lp.lag.WriteMax.Microseconds())/1000, lp.lag.LateWrites
	rep.TimeWaitPeak, rep.ServerTimeWaitPeak, rep.OpenPeak = tw, stw, lp.openPeak
	if !lp.sawOpen {
		rep.OpenPeak = open // nginx: no open events, only the sampled sockets
	}
	lp.mu.Unlock()
	rep.WallS = time.Since(lp.wallStart).Seconds()
	return rep, nil
}
