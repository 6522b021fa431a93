package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Engine events of a chain (engine.go's queue, kinds of their own).
const (
	ckSend       evKind = 64 + iota // user a sends its next request (-1: an open-loop arrival)
	ckArrive                        // job a's request reaches its tier
	ckCPUDone                       // job a's piece of work ends
	ckResponse                      // job a's response reaches its caller
	ckIdle                          // server idle timer of connection a, generation b
	ckTWEnd                         // TIME_WAIT expiry on hop a, side b
	ckSample                        // time-series sample
	ckMachDone                      // the shared CPUs' first piece ends (generation a)
	ckLoadDone                      // the load generator's turn for request a ends (no shared CPUs)
	ckLoadGate                      // the load generator stalls (a = 1) or runs again (a = 0): load_stall
	ckBesideDone                    // job a's work beside its process's (conn_parallel) ends
	ckRaceSeen                      // job a's call learns its kept connection was closed (the race)
)

// Job phases: what a job does when its piece of work ends.
const (
	phAccept  uint8 = iota // accepted its connection: take a thread
	phWork                 // did its own work: call the next tier or answer
	phConnect              // did the work of opening a connection: connect
)

// chainModel is the state of one run of a chain.
type chainModel struct {
	s Scenario
	clock
	rng   *rand.Rand
	sink  func(*Event)
	ev    Event
	tiers []ctier
	hops  []chop
	mach  *machine // the shared CPUs (nil: a CPU per process)

	// The load generator's stalls (load_stalls): off the CPUs, its
	// requests wait in stalled until it runs again.
	stallSigma float64 // of the stalls' log-normal lengths
	stallOn    float64 // mean time between stalls, ns
	loadOff    bool
	stalled    []int32

	jobs       []cjob
	freeJobs   []int32
	conns      []cconn
	freeConns  []int32
	ownerSlots // the chain uses an owner's idle list, open count and waiters
	connIDs    int
	twReuse    bool

	// The load.
	sent, arrived, inFlight, pending int
	userOwner                        []int32 // each user's connection to the first tier (client keep-alive)
	userSent                         []int
	nextOpen                         time.Duration
	tooMany                          bool

	// Results.
	respQ               Quantiles
	requests, failed    int
	firstStart, lastEnd time.Duration
	started             bool
	firstPortErr        *float64
	series              Series
	lastSample          [3]int // requests, connects, errors at the last sample
	open, openPeak      int
	tw, twPeak          [2]int
}

// ctier is one tier at run time.
type ctier struct {
	s       Scenario
	name    string
	half    time.Duration // one way over the hop into it
	workers []cworker
	rr      int
	next    bool   // it calls the next tier
	policy  policy // how it keeps its connections to the next tier

	served int
	busy   time.Duration // work done by all its workers
	queue  Quantiles     // what each request waited for a thread and for its process
}

type cworker struct {
	threads int // requests in progress
	threadQ ring[int32]
	cpuBusy bool
	cpuQ    ring[cpuSeg]
	pool    int32 // its pool or keep-alive cache for the next tier (-1: none yet)
}

type cpuSeg struct {
	job int32
	dur time.Duration
}

// chop is one hop: the connections into one tier.
type chop struct {
	tcpSockets       // ports and TIME_WAIT (sockets.go)
	open, openPeak   int
	idle, idlePeak   int
	ports, portsPeak int // local ports the client holds: open connections and its TIME_WAIT sockets
	both             int
	connects, reused int
	calls, errors    int
	portErrors       int
	races            int
	closedBy         [2]int
	serverAcc        float64 // error diffusion of server_closes_first
	bothAcc          float64 // ... and of simultaneous_close
	call             Quantiles
}

// cjob is one request at one tier; tier -1 is the load's own request.
type cjob struct {
	tier      int8
	phase     uint8
	newConn   bool // its connection was opened for it: its tier accepts it first
	failed    bool
	hasThread bool
	callNew   bool // its current call opened a connection
	callRetry bool
	parent    int32
	user      int32
	worker    int32
	conn      int32 // the connection into its tier that carries it (-1: the load's request)
	callConn  int32 // the connection of its current call
	owner     int32 // request-scoped cache of its calls (-1: none)
	calls     int32 // calls made to the next tier so far
	req       int
	start     time.Duration // reached its tier (the load's request: sent)
	waitFrom  time.Duration
	queued    time.Duration
	callStart time.Duration
	callWait  time.Duration // waited for a pool connection
	lookup    time.Duration // its current call's DNS lookup, before its new connection
	resolved  time.Duration // ... which ended then
	connected time.Duration // its current call's new connection was up (TCP)
	secured   time.Duration // ... and its TLS handshake done (0: none)
	handshake Handshake     // that handshake's kind
	srvDone   time.Duration // its tier finished it
	failMsg   string
}

type cconn struct {
	id        int
	gen       int32
	hop       int8
	state     connState
	owner     int32
	worker    int32 // worker of the accepting tier that serves it
	port      int32
	served    int
	cwnd      int // the server's congestion window, in segments
	created   time.Duration
	lastUsed  time.Duration
	srvIdleAt time.Duration
	timerAt   time.Duration
	// The server closed it on its idle timer at srvClosedAt; its FIN is
	// on the way, or the client has not looked since.
	srvClosed   bool
	srvClosedAt time.Duration
}

func runChain(ctx context.Context, s Scenario, opt Options) (*Result, error) {
	m := newChain(s, opt)
	if err := m.run(ctx); err != nil {
		return nil, err
	}
	return m.result(), nil
}

func newChain(s Scenario, opt Options) *chainModel {
	m := &chainModel{
		s:       s,
		rng:     rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15)),
		sink:    opt.Sink,
		twReuse: s.TWReuse == 1 || (s.TWReuse == 2 && s.Loopback),
	}
	m.stopAt = -1
	n := len(s.Tiers)
	m.tiers = make([]ctier, n)
	m.hops = make([]chop, n)
	for i := range m.tiers {
		ts := s.TierScenario(i)
		t := &m.tiers[i]
		t.s, t.name, t.half = ts, s.Tiers[i].Name, ts.RTT/2
		t.next = i+1 < n && ts.CallsPerRequest > 0
		t.policy = policyOf(ts.Reuse)
		if t.policy == polProcess {
			t.policy = polPool // kept by the process across requests
		}
		t.workers = make([]cworker, ts.Workers)
		for w := range t.workers {
			t.workers[w].pool = -1
		}
		hp := &m.hops[i]
		// Each hop has its own destination, so its own search.
		hp.configure(s.PortRange, m.twReuse, opt.Seed+uint64(i)*0x9e3779b97f4a7c15)
		hp.serverAcc, hp.bothAcc = 0.5, 0.5 // round the shares' counts
	}
	if s.CPUs > 0 {
		m.mach = &machine{capacity: float64(s.CPUs) - s.CPUBackground}
	}
	m.series.Interval = s.SeriesInterval
	return m
}

func (m *chainModel) run(ctx context.Context) error {
	m.startLoad()
	m.startStalls()
	m.schedule(m.s.SeriesInterval, ckSample, 0, 0)
	if err := m.loop(ctx, m.step); err != nil {
		return err
	}
	err := m.end(ctx, m.s.Linger)
	m.sample()
	return err
}

// chainSteps does what each kind of event does, by kind - ckSend.
var chainSteps = [...]func(m *chainModel, a, b int32){
	ckSend - ckSend:       func(m *chainModel, a, _ int32) { m.userSend(a) },
	ckArrive - ckSend:     func(m *chainModel, a, _ int32) { m.arrive(a) },
	ckCPUDone - ckSend:    func(m *chainModel, a, _ int32) { m.cpuDone(a) },
	ckResponse - ckSend:   func(m *chainModel, a, _ int32) { m.response(a) },
	ckIdle - ckSend:       (*chainModel).idleTimer,
	ckTWEnd - ckSend:      func(m *chainModel, a, b int32) { m.timeWaitEnd(int(a), side(b)) },
	ckSample - ckSend:     func(m *chainModel, _, _ int32) { m.sample(); m.sampleAgain(m.s.SeriesInterval, ckSample) },
	ckMachDone - ckSend:   func(m *chainModel, a, _ int32) { m.machDone(a) },
	ckLoadDone - ckSend:   func(m *chainModel, a, _ int32) { m.callBegin(a) },
	ckLoadGate - ckSend:   func(m *chainModel, a, _ int32) { m.loadGate(a == 1) },
	ckBesideDone - ckSend: func(m *chainModel, a, _ int32) { m.besideDone(a) },
	ckRaceSeen - ckSend:   func(m *chainModel, a, _ int32) { m.raceSeen(a) },
}

// step handles one event; it reports when the run stops (an error: at
// once, without the linger).
func (m *chainModel) step(it item) (bool, error) {
	chainSteps[it.kind-ckSend](m, it.a, it.b)
	if m.tooMany {
		return true, errTooMany(&m.s)
	}
	return m.stopAt < 0 && m.pending == 0 && m.inFlight == 0 && m.loadEnded(m.s.Linger), nil
}

// ---- The load.

func (m *chainModel) startLoad() {
	if m.s.Load == "open" {
		m.scheduleOpen()
		return
	}
	m.userSent = make([]int, m.s.Concurrency)
	m.userOwner = make([]int32, m.s.Concurrency)
	for u := range m.userOwner {
		m.userOwner[u] = -1
	}
	for u := 0; u < m.s.Concurrency; u++ {
		m.queueSend(int32(u), 0)
	}
}

func (m *chainModel) canSend(t time.Duration) bool {
	switch {
	case m.s.Requests > 0 && m.sent >= m.s.Requests:
		return false
	case m.s.Duration > 0 && t >= m.s.Duration:
		return false
	case m.sent >= MaxRunRequests:
		m.tooMany = true
		return false
	}
	return true
}

func (m *chainModel) queueSend(u int32, t time.Duration) {
	if !m.canSend(t) {
		return
	}
	m.sent++
	m.pending++
	m.schedule(t, ckSend, u, 0)
}

// scheduleOpen queues the next open-loop arrival.
func (m *chainModel) scheduleOpen() {
	t := m.nextOpen
	if !m.canSend(t) {
		return
	}
	m.sent++
	m.pending++
	m.schedule(t, ckSend, -1, 0)
	gap := 1 / m.s.Rate
	if m.s.Arrival == "poisson" {
		gap = -math.Log(1-m.rng.Float64()) / m.s.Rate
	}
	m.nextOpen = t + time.Duration(gap*float64(time.Second))
}

// userSend: user u (-1: an open-loop arrival) sends a request now: the
// load's job, which makes one call to the first tier.
func (m *chainModel) userSend(u int32) {
	m.pending--
	m.inFlight++
	m.arrived++
	ji := m.newJob(-1, -1)
	j := &m.jobs[ji]
	j.user, j.req, j.start = u, m.arrived, m.now
	if u < 0 {
		m.scheduleOpen()
	}
	if m.loadOff {
		m.stalled = append(m.stalled, ji)
		return
	}
	m.loadTurn(ji)
}

func (m *chainModel) expo(mean float64) float64 { return -math.Log(1-m.rng.Float64()) * mean }

// startStalls starts the load generator's stalls: load_stalls a second,
// each as long as a draw from the log-normal distribution through the
// median load_stall and the 99th percentile load_stall_p99; between them
// it runs for an exponential time with the mean that makes their rate
// right.
func (m *chainModel) startStalls() {
	if m.s.LoadStalls <= 0 || m.s.LoadStall <= 0 {
		return
	}
	if p99 := m.s.LoadStallP99; p99 > m.s.LoadStall {
		m.stallSigma = math.Log(float64(p99)/float64(m.s.LoadStall)) / 2.3263
	}
	meanStall := float64(m.s.LoadStall) * math.Exp(m.stallSigma*m.stallSigma/2)
	m.stallOn = max(float64(10*time.Microsecond), 1e9/m.s.LoadStalls-meanStall)
	m.loadGate(false)
}

// loadGate stalls the load generator (off) or lets it run again, then
// schedules the next change while the load still has requests to send.
func (m *chainModel) loadGate(off bool) {
	m.loadOff = off
	var next time.Duration
	if off {
		next = time.Duration(float64(m.s.LoadStall) * math.Exp(m.stallSigma*m.rng.NormFloat64()))
	} else {
		next = time.Duration(m.expo(m.stallOn))
		waiting := m.stalled
		m.stalled = nil
		for _, ji := range waiting {
			m.loadTurn(ji)
		}
		m.stalled = waiting[:0]
	}
	if m.stopAt >= 0 || (m.pending == 0 && m.inFlight == 0 && m.sent > 0) {
		return
	}
	a := int32(0)
	if !off {
		a = 1
	}
	m.schedule(m.now+next, ckLoadGate, a, 0)
}

// loadTurn: the load generator's own work for request ji (load_cpu), then
// the request goes out.
func (m *chainModel) loadTurn(ji int32) {
	if d := m.s.LoadCPU; d > 0 {
		m.runLoad(ji, d)
		return
	}
	m.callBegin(ji)
}

func (m *chainModel) newJob(tier int8, parent int32) int32 {
	var ji int32
	if n := len(m.freeJobs); n > 0 {
		ji = m.freeJobs[n-1]
		m.freeJobs = m.freeJobs[:n-1]
	} else {
		m.jobs = append(m.jobs, cjob{})
		ji = int32(len(m.jobs) - 1)
	}
	m.jobs[ji] = cjob{tier: tier, parent: parent, user: -1, worker: -1, conn: -1, callConn: -1, owner: -1}
	return ji
}

// finishRequest: the load's request ji has its answer now.
func (m *chainModel) finishRequest(ji int32) {
	j := &m.jobs[ji]
	if j.owner >= 0 {
		m.dropOwner(j.owner, ReasonEndOfRequest)
		j = &m.jobs[ji]
	}
	m.requests++
	total := m.now - j.start
	if j.failed {
		m.failed++
	} else {
		m.respQ.Add(total)
	}
	if !m.started || j.start < m.firstStart {
		m.firstStart, m.started = j.start, true
	}
	m.lastEnd = max(m.lastEnd, m.now)
	if m.sink != nil {
		m.ev = Event{Kind: KindRequest, At: m.now, Req: j.req, Start: j.start, Total: total}
		if j.failed {
			m.ev.Error = "a call failed"
		}
		m.sink(&m.ev)
	}
	m.inFlight--
	if u := j.user; u >= 0 {
		m.userSent[u]++
		next := m.now + m.s.ThinkTime
		if m.s.PauseEvery > 0 && m.userSent[u]%m.s.PauseEvery == 0 {
			next += m.s.Pause
		}
		m.queueSend(u, next)
	}
	m.freeJobs = append(m.freeJobs, ji)
}

// ---- Work on a tier's processes.

// cpu runs d of job ji's work on its worker process, which does one piece
// at a time in arrival order, then continues the job in phase ph.
func (m *chainModel) cpu(ji int32, d time.Duration, ph uint8) {
	j := &m.jobs[ji]
	j.phase = ph
	t := &m.tiers[j.tier]
	w := &t.workers[j.worker]
	if w.cpuBusy {
		j.waitFrom = m.now
		w.cpuQ.push(cpuSeg{ji, d})
		return
	}
	w.cpuBusy = true
	t.busy += d
	m.runWork(ji, d)
}

// runBeside runs d of job ji's work beside its worker process's one piece
// at a time (conn_parallel: a system call, with the interpreter's lock
// released), on the shared CPUs if any, then continues the job in phase
// ph.
func (m *chainModel) runBeside(ji int32, d time.Duration, ph uint8) {
	j := &m.jobs[ji]
	j.phase = ph
	m.tiers[j.tier].busy += d
	if m.mach == nil {
		m.schedule(m.now+d, ckBesideDone, ji, 0)
		return
	}
	m.machStart(machPiece{id: ji, beside: true}, d)
}

// besideDone: job ji's work beside its process's has ended.
func (m *chainModel) besideDone(ji int32) {
	switch m.jobs[ji].phase {
	case phAccept:
		m.takeThread(ji)
	case phConnect:
		m.connect(ji)
	}
}

func (m *chainModel) cpuDone(ji int32) {
	j := &m.jobs[ji]
	t := &m.tiers[j.tier]
	w := &t.workers[j.worker]
	w.cpuBusy = false
	if w.cpuQ.len() > 0 {
		seg := w.cpuQ.pop()
		n := &m.jobs[seg.job]
		n.queued += m.now - n.waitFrom
		w.cpuBusy = true
		t.busy += seg.dur
		m.runWork(seg.job, seg.dur)
	}
	switch m.jobs[ji].phase {
	case phAccept:
		m.takeThread(ji)
	case phWork:
		m.afterCall(ji)
	case phConnect:
		m.connect(ji)
	}
}

// arrive: job ji's request reaches its tier, on a new connection (which
// the tier accepts first) or a kept one.
func (m *chainModel) arrive(ji int32) {
	j := &m.jobs[ji]
	if t := &m.tiers[j.tier]; j.newConn && t.s.ServerConnTime > 0 {
		if t.s.ConnParallel {
			m.runBeside(ji, t.s.ServerConnTime, phAccept)
		} else {
			m.cpu(ji, t.s.ServerConnTime, phAccept)
		}
		return
	}
	m.takeThread(ji)
}

func (m *chainModel) takeThread(ji int32) {
	j := &m.jobs[ji]
	t := &m.tiers[j.tier]
	w := &t.workers[j.worker]
	if t.s.Threads > 0 && w.threads >= t.s.Threads {
		j.waitFrom = m.now
		w.threadQ.push(ji)
		return
	}
	w.threads++
	j.hasThread = true
	m.cpu(ji, m.work(t), phWork)
}

// work is a request's work on tier t: server_time, varied uniformly by
// server_jitter.
func (m *chainModel) work(t *ctier) time.Duration {
	d := t.s.ServerTime
	if f := t.s.ServerJitter; f > 0 {
		d += time.Duration((2*m.rng.Float64() - 1) * f * float64(d))
	}
	return d
}

// afterCall: job ji has done its own work or a call has returned: the next
// call, or the answer.
func (m *chainModel) afterCall(ji int32) {
	j := &m.jobs[ji]
	if j.tier < 0 {
		m.finishRequest(ji)
		return
	}
	if t := &m.tiers[j.tier]; t.next && !j.failed && int(j.calls) < t.s.CallsPerRequest {
		m.callBegin(ji)
		return
	}
	m.finishJob(ji)
}

// finishJob: job ji's tier has its answer, which leaves now.
func (m *chainModel) finishJob(ji int32) {
	j := &m.jobs[ji]
	t := &m.tiers[j.tier]
	if j.owner >= 0 {
		m.dropOwner(j.owner, ReasonEndOfRequest) // redis.Redis() freed when the view returns
		j = &m.jobs[ji]
		j.owner = -1
	}
	t.served++
	t.queue.Add(j.queued)
	j.srvDone = m.now
	// The response's first byte reaches the caller half a round trip
	// from now; slow start adds a round trip for every further window
	// (tcp.go, as for a single hop), and the caller spends client_read_cpu
	// on the rest.
	c := &m.conns[j.conn]
	if c.served > 0 {
		c.cwnd = restartCwnd(&t.s, c.cwnd, m.now-c.srvIdleAt)
	}
	rounds, cwnd := transferRounds(t.s.ResponseBytes, t.s.MSS, c.cwnd)
	c.cwnd = cwnd
	c.served++
	extra := time.Duration(rounds-1) * t.s.RTT
	c.srvIdleAt = m.now + extra // the server's idle timer starts after the last byte
	if j.hasThread {
		j.hasThread = false
		w := &t.workers[j.worker]
		w.threads--
		if w.threadQ.len() > 0 {
			n := w.threadQ.pop()
			nj := &m.jobs[n]
			nj.queued += m.now - nj.waitFrom
			nj.hasThread = true
			w.threads++
			m.cpu(n, m.work(t), phWork)
		}
	}
	m.schedule(m.now+t.half+extra+t.s.ClientReadCPU, ckResponse, ji, 0)
}

// ---- Calls to the next tier.

// callerPolicy is how the side that connects over hop h keeps connections.
func (m *chainModel) callerPolicy(h int) policy {
	if h == 0 {
		if m.s.ClientKeepalive {
			return polPool
		}
		return polNone
	}
	return m.tiers[h-1].policy
}

// callerScenario is the scenario of the side that connects over hop h.
func (m *chainModel) callerScenario(h int) *Scenario {
	if h == 0 {
		return &m.s
	}
	return &m.tiers[h-1].s
}

// ownerOf returns the cache that keeps job ji's connections over hop h: a
// user's own connection, a worker's pool or keep-alive cache, or one for
// the request (or, without reuse, the call).
func (m *chainModel) ownerOf(ji int32, h int) int32 {
	j := &m.jobs[ji]
	if pol := m.callerPolicy(h); pol == polPool || pol == polUpstream {
		if h == 0 && j.user >= 0 {
			o := m.userOwner[j.user]
			if o < 0 {
				o = m.newOwner()
				m.userOwner[j.user] = o
			}
			return o
		}
		if h > 0 {
			w := &m.tiers[j.tier].workers[j.worker]
			if w.pool < 0 {
				o := m.newOwner()
				m.tiers[j.tier].workers[j.worker].pool = o
				return o
			}
			return w.pool
		}
	}
	if j.owner < 0 {
		o := m.newOwner()
		m.jobs[ji].owner = o
		return o
	}
	return j.owner
}

// callBegin starts job ji's next call to the next tier.
func (m *chainModel) callBegin(ji int32) {
	j := &m.jobs[ji]
	j.calls++
	j.callStart, j.callNew, j.callRetry, j.callWait, j.callConn = m.now, false, false, 0, -1
	j.lookup, j.secured, j.handshake = 0, 0, ""
	m.acquire(ji)
}

// acquire finds job ji's call a connection: a kept one, a place in the
// pool's queue, or a new one.
func (m *chainModel) acquire(ji int32) {
	h := int(m.jobs[ji].tier) + 1
	pol := m.callerPolicy(h)
	o := m.ownerOf(ji, h)
	cs := m.callerScenario(h)
	if pol != polNone {
		ci, raced, seen := m.takeIdle(o, h)
		if raced {
			// The request went out on a connection the server had just
			// closed; the client learns it when the server's FIN arrives,
			// then sends the call again or fails it (raceSeen).
			m.jobs[ji].callRetry = true
			m.hops[h].races++
			m.schedule(seen, ckRaceSeen, ji, 0)
			return
		} else if ci >= 0 {
			m.hops[h].reused++
			m.sendRequest(ji, ci, m.now)
			return
		}
	}
	if pol == polPool && cs.PoolMax > 0 && m.owners[o].open >= cs.PoolMax {
		if cs.PoolFull == "error" {
			m.failCall(ji, ErrorPoolFull)
			return
		}
		m.jobs[ji].waitFrom = m.now
		m.owners[o].waiters.push(ji)
		return
	}
	m.openConn(ji, o)
}

// raceSeen: job ji's call has learnt that the connection it was sent on
// was closed (the keep-alive race): it is sent again on a new connection,
// or fails where the client does not replay it.
func (m *chainModel) raceSeen(ji int32) {
	h := int(m.jobs[ji].tier) + 1
	if !m.callerScenario(h).RetryOnRace {
		m.failCall(ji, ErrorRace)
		return
	}
	m.openConn(ji, m.ownerOf(ji, h))
}

// openConn opens a connection for job ji's call, kept by owner o: a local
// port, the caller's own work to open it, then the TCP handshake.
func (m *chainModel) openConn(ji, o int32) {
	j := &m.jobs[ji]
	h := int(j.tier) + 1
	hp := &m.hops[h]
	port, ok := m.allocPort(h)
	if !ok {
		hp.portErrors++
		if m.firstPortErr == nil {
			t := roundS(m.now)
			m.firstPortErr = &t
		}
		if m.sink != nil {
			m.ev = Event{Kind: KindPortError, At: m.now, Hop: uint8(h + 1), Req: j.req, Call: int(j.calls), Error: string(ErrorNoPort)}
			m.sink(&m.ev)
		}
		m.failCall(ji, ErrorNoPort)
		return
	}
	ci := m.newConn(h, o, port)
	j = &m.jobs[ji]
	j.callNew, j.callConn = true, ci
	// The lookup comes first; connect() waits it out.
	j.lookup = resolve(&m.owners[o], &m.tiers[h].s, m.now)
	j.resolved = m.now + j.lookup
	hp.connects++
	if m.sink != nil {
		m.ev = Event{Kind: KindOpen, At: j.resolved, Hop: uint8(h + 1), Req: j.req, Call: int(j.calls), Worker: int(j.worker) + 1,
			Conn: m.conns[ci].id, LocalPort: int(port)}
		m.sink(&m.ev)
	}
	if h > 0 {
		if t := &m.tiers[h-1]; t.s.ClientConnTime > 0 {
			if t.s.ConnParallel {
				m.runBeside(ji, t.s.ClientConnTime, phConnect)
			} else {
				m.cpu(ji, t.s.ClientConnTime, phConnect)
			}
			return
		}
	}
	m.connect(ji)
}

// connect: after the DNS lookup (openConn), the TCP handshake of job ji's
// new connection takes one round trip, then the hop's TLS handshake, if it has one (tlsHandshake: its
// round trips and CPU, resumed when the connection's owner holds a
// session); the request follows at once.
func (m *chainModel) connect(ji int32) {
	j := &m.jobs[ji]
	h := int(j.tier) + 1
	t := &m.tiers[h]
	ready := m.now + j.lookup + 2*t.half + t.s.ConnectCPU
	j.connected = ready
	if t.s.TLS != TLSNone {
		ow := &m.owners[m.conns[j.callConn].owner]
		hs := tlsHandshake(&t.s, ow.hasTLS)
		ow.hasTLS = true
		ready += time.Duration(hs.rtts)*2*t.half + hs.cpu
		j.secured, j.handshake = ready, hs.kind
	}
	m.sendRequest(ji, j.callConn, ready)
}

// sendRequest sends job ji's call on connection ci at time ready: the
// called tier's job reaches it half a round trip later.
func (m *chainModel) sendRequest(ji, ci int32, ready time.Duration) {
	j := &m.jobs[ji]
	j.callConn = ci
	h := int(j.tier) + 1
	c := &m.conns[ci]
	c.state = connActive
	ki := m.newJob(int8(h), ji)
	j = &m.jobs[ji]
	k := &m.jobs[ki]
	k.req, k.conn, k.worker, k.newConn = j.req, ci, m.conns[ci].worker, j.callNew
	k.start = ready + m.tiers[h].s.ClientCPU + m.tiers[h].half // the caller's own work before the request leaves
	m.hops[h].calls++
	m.schedule(k.start, ckArrive, ki, 0)
}

// failCall ends job ji's call at once with an error (no connection).
func (m *chainModel) failCall(ji int32, msg ErrorKind) {
	j := &m.jobs[ji]
	h := int(j.tier) + 1
	m.hops[h].errors++
	m.hops[h].calls++ // a call, as its event says, though it never reached the tier
	j.failed = true
	if m.sink != nil {
		m.ev = Event{Kind: KindCall, At: m.now, Hop: uint8(h + 1), Req: j.req, Call: int(j.calls), Worker: int(j.worker) + 1,
			Retried: j.callRetry, Start: j.callStart, Total: m.now - j.callStart, Error: string(msg)}
		m.sink(&m.ev)
	}
	m.afterCall(ji)
}

// response: the answer of job ki reaches its caller now. The caller keeps
// or closes the connection and goes on.
func (m *chainModel) response(ki int32) {
	k := &m.jobs[ki]
	ji, h, ci, failed := k.parent, int(k.tier), k.conn, k.failed
	srvDone := k.srvDone
	m.freeJobs = append(m.freeJobs, ki)
	j := &m.jobs[ji]
	hp := &m.hops[h]
	total := m.now - j.callStart
	if failed {
		j.failed = true
		hp.errors++
	} else {
		hp.call.Add(total)
	}
	if m.sink != nil {
		e := Event{Kind: KindCall, At: m.now, Hop: uint8(h + 1), Req: j.req, Call: int(j.calls), Worker: int(j.worker) + 1,
			Conn: m.conns[ci].id, LocalPort: int(m.conns[ci].port), NewConn: j.callNew, Reused: !j.callNew,
			Retried: j.callRetry, Start: j.callStart, Queue: j.callWait, StartTransfer: srvDone + m.tiers[h].half - j.callStart,
			Total: total}
		if j.callNew {
			e.NameLookup = j.resolved - j.callStart
			e.Connect = j.connected - j.callStart
			if j.secured > 0 {
				e.AppConnect, e.Handshake = j.secured-j.callStart, j.handshake
			}
		}
		if failed {
			e.Error = "the called tier failed"
		}
		m.ev = e
		m.sink(&m.ev)
	}
	m.endExchange(ci, h)
	m.afterCall(ji)
}

// endExchange decides what becomes of connection ci after an exchange:
// kept by its owner, or closed by both ends at once when the caller does
// not keep connections (HTTP/1.0, Connection: close) or the server does
// not (its keepalive_requests reached; 1: it never keeps one).
func (m *chainModel) endExchange(ci int32, h int) {
	c := &m.conns[ci]
	c.lastUsed = m.now
	srv := &m.tiers[h].s
	if m.callerPolicy(h) == polNone || (srv.KeepaliveRequests > 0 && c.served >= srv.KeepaliveRequests) {
		hp := &m.hops[h]
		hp.bothAcc += srv.SimultaneousClose
		hp.serverAcc += srv.ServerClosesFirst
		switch {
		case hp.bothAcc >= 1:
			hp.bothAcc--
			m.closeConn(ci, sideClient, true, ReasonSimultaneous)
		case hp.serverAcc >= 1:
			hp.serverAcc--
			m.closeConn(ci, sideServer, false, ReasonEndOfExchange)
		default:
			m.closeConn(ci, sideClient, false, ReasonEndOfExchange)
		}
		return
	}
	m.release(ci)
}

// release returns connection ci to its owner: to a waiting call, to the
// idle list (closing the least recently used beyond nginx's keepalive N),
// or closed when the owner keeps no more.
func (m *chainModel) release(ci int32) {
	c := &m.conns[ci]
	o := c.owner
	ow := &m.owners[o]
	h := int(c.hop)
	cs := m.callerScenario(h)
	if !ow.alive {
		m.closeConn(ci, sideClient, false, ReasonEndOfRequest)
		return
	}
	if ow.waiters.len() > 0 {
		wj := ow.waiters.pop()
		m.jobs[wj].callWait = m.now - m.jobs[wj].waitFrom
		m.hops[h].reused++
		m.sendRequest(wj, ci, m.now)
		return
	}
	pol := m.callerPolicy(h)
	if pol == polPool && cs.PoolMaxIdle > 0 && len(ow.idle) >= cs.PoolMaxIdle {
		m.closeConn(ci, sideClient, false, ReasonIdleFull)
		return
	}
	c.state = connIdle
	ow.idle = append(ow.idle, ci)
	hp := &m.hops[h]
	hp.idle++
	if m.sink != nil {
		m.ev = Event{Kind: KindIdle, At: m.now, Hop: uint8(h + 1), Conn: c.id, LocalPort: int(c.port)}
		m.sink(&m.ev)
	}
	if to := m.tiers[h].s.KeepaliveTimeout; to > 0 && c.timerAt == 0 {
		// One pending timer per connection; an older one moves itself.
		c.timerAt = c.srvIdleAt + to
		m.schedule(c.timerAt, ckIdle, ci, c.gen)
	}
	if pol == polUpstream && len(ow.idle) > cs.UpstreamKeepalive {
		lru := ow.idle[0]
		copy(ow.idle, ow.idle[1:])
		ow.idle = ow.idle[:len(ow.idle)-1]
		hp.idle--
		m.closeConn(lru, sideClient, false, ReasonEvict)
	}
	hp.idlePeak = max(hp.idlePeak, hp.idle)
}

// takeIdle pops owner o's most recently used idle connection that can
// carry a request over hop h now, closing those that cannot (findIdle);
// -1 when none is left. raced: the server is closing the one taken as the
// request goes out (the keep-alive race), which the client learns at seen,
// when the server's FIN arrives.
func (m *chainModel) takeIdle(o int32, h int) (ci int32, raced bool, seen time.Duration) {
	cs := m.callerScenario(h)
	half := m.tiers[h].half
	for {
		ow := &m.owners[o]
		n := len(ow.idle)
		if n == 0 {
			return -1, false, 0
		}
		ci = ow.idle[n-1]
		ow.idle = ow.idle[:n-1]
		m.hops[h].idle--
		c := &m.conns[ci]
		closeAt, closing := m.serverCloseTime(c)
		switch findIdle(idleConn{c.lastUsed, c.created, closeAt, closing}, m.now, half, cs.MaxIdleAge, cs.MaxLifetime) {
		case idleDead:
			m.closeConn(ci, sideServer, false, ReasonDead)
		case idleTooOld:
			m.closeConn(ci, sideClient, false, ReasonMaxIdleAge)
		case idleTooLong:
			m.closeConn(ci, sideClient, false, ReasonMaxLifetime)
		case idleRaced:
			if !c.srvClosed {
				m.serverClose(ci, closeAt)
			}
			// The request meets a closed socket: the server answers with
			// a reset, which ends its socket without a TIME_WAIT.
			m.closeConn(ci, sideServer, false, ReasonReset)
			return -1, true, closeAt + half
		default:
			c.state = connActive
			return ci, false, 0
		}
	}
}

// serverCloseTime is when the server closes c if nothing arrives: its
// keep-alive timer, unless it already closed.
func (m *chainModel) serverCloseTime(c *cconn) (time.Duration, bool) {
	if c.srvClosed {
		return c.srvClosedAt, true
	}
	if to := m.tiers[c.hop].s.KeepaliveTimeout; to > 0 {
		return c.srvIdleAt + to, true
	}
	return 0, false
}

// serverClose records the server closing idle connection ci on its timer
// at time at: the client learns it when the FIN arrives.
func (m *chainModel) serverClose(ci int32, at time.Duration) {
	c := &m.conns[ci]
	c.srvClosed, c.srvClosedAt = true, at
	c.gen++
	if m.sink != nil {
		m.ev = Event{Kind: KindClose, At: at, Hop: uint8(c.hop + 1), Conn: c.id, LocalPort: int(c.port), By: SideServer, Reason: ReasonIdleTimeout}
		m.sink(&m.ev)
	}
}

// idleTimer fires when connection ci may have sat idle for the server's
// keep-alive timeout; if it was used since, it moves to the new deadline.
// At the deadline the server closes it; half a round trip later its FIN
// reaches the caller, which drops it there if it watches its idle
// connections (nginx, pools), else finds it dead when it next looks
// (takeIdle).
func (m *chainModel) idleTimer(ci, gen int32) {
	c := &m.conns[ci]
	if c.gen != gen {
		return
	}
	c.timerAt = 0
	if c.state != connIdle {
		return // busy: release sets the timer again
	}
	h := int(c.hop)
	pol := m.callerPolicy(h)
	watched := pol == polPool || pol == polUpstream
	if c.srvClosed {
		if !watched {
			return
		}
		ow := &m.owners[c.owner]
		for i, x := range ow.idle {
			if x == ci {
				ow.idle = append(ow.idle[:i], ow.idle[i+1:]...)
				m.hops[h].idle--
				break
			}
		}
		m.closeConn(ci, sideServer, false, ReasonDead)
		return
	}
	if deadline := c.srvIdleAt + m.tiers[h].s.KeepaliveTimeout; m.now < deadline {
		c.timerAt = deadline
		m.schedule(deadline, ckIdle, ci, gen)
		return
	}
	m.serverClose(ci, m.now)
	if watched {
		m.schedule(m.now+m.tiers[h].half, ckIdle, ci, c.gen) // when the FIN arrives
	}
}

// dropOwner closes owner o's idle connections (the client closes first);
// those in use are closed when their call ends.
func (m *chainModel) dropOwner(o int32, reason CloseReason) {
	ow := &m.owners[o]
	ow.alive = false
	for _, ci := range ow.idle {
		m.hops[m.conns[ci].hop].idle--
		m.closeConn(ci, sideClient, false, reason)
	}
	ow = &m.owners[o]
	ow.idle = ow.idle[:0]
	for ow.waiters.len() > 0 {
		m.acquire(ow.waiters.pop())
		ow = &m.owners[o]
	}
	if ow.open == 0 {
		m.freeOwners = append(m.freeOwners, o)
	}
}

// ---- Connections, ports and TIME_WAIT.

func (m *chainModel) newConn(h int, o int32, port int32) int32 {
	var ci int32
	if n := len(m.freeConns); n > 0 {
		ci = m.freeConns[n-1]
		m.freeConns = m.freeConns[:n-1]
	} else {
		m.conns = append(m.conns, cconn{})
		ci = int32(len(m.conns) - 1)
	}
	t := &m.tiers[h]
	// Connections go to the tier's workers in turn, to one at random, or
	// by the shares a real run measured.
	w := int32(t.rr % len(t.workers))
	t.rr++
	switch {
	case len(t.s.WorkerShares) > 0:
		w = pickShare(t.s.WorkerShares, m.rng.Float64())
	case t.s.Dispatch == DispatchRandom:
		w = int32(m.rng.IntN(len(t.workers)))
	}
	m.connIDs++
	m.conns[ci] = cconn{id: m.connIDs, gen: m.conns[ci].gen + 1, hop: int8(h), state: connActive, owner: o,
		worker: w, port: port, created: m.now, cwnd: t.s.InitCwnd}
	m.owners[o].open++
	hp := &m.hops[h]
	hp.open++
	hp.openPeak = max(hp.openPeak, hp.open)
	hp.ports++
	hp.portsPeak = max(hp.portsPeak, hp.ports)
	m.open++
	m.openPeak = max(m.openPeak, m.open)
	return ci
}

// pickShare picks the worker whose share holds x, a draw in [0, 1): the
// shares are weights, so x is scaled by their sum. Workers beyond the
// list take none.
func pickShare(shares []float64, x float64) int32 {
	sum := 0.0
	for _, f := range shares {
		sum += f
	}
	x *= sum
	last := int32(0)
	for i, f := range shares {
		if f <= 0 {
			continue
		}
		last = int32(i)
		if x < f {
			return last
		}
		x -= f
	}
	return last // rounding at the top end
}

// allocPort finds a local port for a connection over hop h, by the
// kernel's search (tcpSockets.connect), which may take over a TIME_WAIT
// socket of either side on the port it lands on.
func (m *chainModel) allocPort(h int) (int32, bool) {
	hp := &m.hops[h]
	port, clientTW, serverTW, ok := hp.connect(m.now)
	if !ok {
		return 0, false
	}
	if clientTW {
		m.tw[sideClient]--
		hp.ports--
		if m.sink != nil {
			m.ev = Event{Kind: KindTimeWaitEnd, At: m.now, Hop: uint8(h + 1), LocalPort: int(port), By: SideClient, Reason: ReasonReused}
			m.sink(&m.ev)
		}
	}
	if serverTW {
		m.tw[sideServer]--
		if m.sink != nil {
			m.ev = Event{Kind: KindTimeWaitEnd, At: m.now, Hop: uint8(h + 1), LocalPort: int(port), By: SideServer, Reason: ReasonTakenOver}
			m.sink(&m.ev)
		}
	}
	return port, true
}

// closeConn ends connection ci: the side first closes first and holds the
// TIME_WAIT (the client's holds its port); with both, the FINs crossed and
// each side holds one.
func (m *chainModel) closeConn(ci int32, first side, both bool, reason CloseReason) {
	c := &m.conns[ci]
	h := int(c.hop)
	hp := &m.hops[h]
	c.state = connClosed
	c.gen++
	if both {
		hp.both++
	} else {
		hp.closedBy[first]++
	}
	// A connection the server closed on its timer had its close event
	// then (serverClose).
	if m.sink != nil && !(first == sideServer && c.srvClosed) {
		// A simultaneous close (both) is the connecting side's close event
		// with reason simultaneous; each side's TIME_WAIT has its own.
		m.ev = Event{Kind: KindClose, At: m.now, Hop: uint8(h + 1), Conn: c.id, LocalPort: int(c.port), By: first.word(), Reason: reason}
		m.sink(&m.ev)
	}
	// A reset ends the server's socket without a TIME_WAIT.
	if (first == sideServer || both) && reason != ReasonReset {
		m.enterTimeWait(h, sideServer, c.port)
	}
	if first == sideClient || both {
		m.enterTimeWait(h, sideClient, c.port)
	} else {
		hp.search.free(int(c.port))
		hp.ports--
	}
	hp.open--
	m.open--
	o := c.owner
	ow := &m.owners[o]
	ow.open--
	m.freeConns = append(m.freeConns, ci)
	if ow.waiters.len() > 0 && ow.alive {
		wj := ow.waiters.pop()
		m.jobs[wj].callWait = m.now - m.jobs[wj].waitFrom
		m.openConn(wj, o)
		return
	}
	if !ow.alive && ow.open == 0 && len(ow.idle) == 0 {
		m.freeOwners = append(m.freeOwners, o)
	}
}

func (m *chainModel) enterTimeWait(h int, s side, port int32) {
	hp := &m.hops[h]
	before := hp.twLive[s]
	if hp.tcpSockets.enterTimeWait(s, m.now, port) {
		m.schedule(hp.nextExpiry(s), ckTWEnd, int32(h), int32(s))
	}
	m.tw[s] += hp.twLive[s] - before
	m.twPeak[s] = max(m.twPeak[s], m.tw[s])
	if m.sink != nil {
		m.ev = Event{Kind: KindTimeWait, At: m.now, Hop: uint8(h + 1), LocalPort: int(port), By: s.word()}
		m.sink(&m.ev)
	}
}

// timeWaitEnd expires hop h's TIME_WAIT sockets on side s that are due,
// freeing the client's ports, and queues one event for the next.
func (m *chainModel) timeWaitEnd(h int, s side) {
	hp := &m.hops[h]
	for {
		port, ok := hp.expireOne(s, m.now)
		if !ok {
			break
		}
		if s == sideClient {
			hp.ports--
		}
		m.tw[s]--
		if m.sink != nil {
			m.ev = Event{Kind: KindTimeWaitEnd, At: m.now, Hop: uint8(h + 1), LocalPort: int(port), By: s.word()}
			m.sink(&m.ev)
		}
	}
	if hp.more(s) {
		m.schedule(hp.nextExpiry(s), ckTWEnd, int32(h), int32(s))
	}
}
