package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Engine events (engine.go's queue).
const (
	ckSend       evKind = iota // user a sends its next request (-1: an open-loop arrival)
	ckArrive                   // job a's request reaches its tier
	ckCPUDone                  // job a's piece of work ends
	ckResponse                 // job a's response reaches its caller
	ckIdle                     // server idle timer of connection a, generation b
	ckTWEnd                    // TIME_WAIT expiry on hop a, side b
	ckSample                   // time-series sample
	ckMachDone                 // the shared CPUs' first piece ends (generation a)
	ckLoadDone                 // the load generator's turn for request a ends (no shared CPUs)
	ckLoadGate                 // the load generator stalls (a = 1) or runs again (a = 0): load_stall
	ckBesideDone               // job a's work beside its process's (conn_parallel) ends
	ckRaceSeen                 // job a's call learns its kept connection was closed (the race)
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

	// A chain of one (chain_one.go): the load reaches the first tier
	// through desk, loadHalf after it is sent, and col counts its hop.
	one      bool
	desk     desk
	loadHalf time.Duration
	col      Collector

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
	wall    bool   // its work takes time, not a CPU: a chain of one's tiers
	policy  policy // how it keeps its connections to the next tier
	// shareMasks are its share_sets, cycled over requests (reuse = process)
	shareMasks []uint8

	served int
	busy   time.Duration // work done by all its workers
	queue  Quantiles     // what each request waited for a thread and for its process
}

type cworker struct {
	served  int // requests since it started (max_requests)
	threads int // requests in progress
	threadQ ring[int32]
	cpuBusy bool
	cpuQ    ring[cpuSeg]
	// owners are its caches for the next tier (-1: none yet): [0] its pool
	// or keep-alive cache; with reuse = process, one per share mask (the
	// CURL_LOCK_DATA_* set of a persistent share handle), as a single
	// hop's worker has them.
	owners [8]int32
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
	lookups          int // DNS lookups a new connection waited for
	tlsFull          int // TLS handshakes, full and resumed (0-RTT too)
	tlsResumed       int
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
	callDone  time.Duration // the tier it called finished its current call
	work      time.Duration // its work, drawn when sent (a tier whose work takes time)
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
	var names []string
	var tiers []Scenario
	if len(s.Tiers) == 0 {
		w, u := oneHopTiers(&s)
		names, tiers = []string{"workers", "upstream"}, []Scenario{w, u}
		m.one, m.loadHalf = true, s.ClientRTT/2
		m.desk = newDesk(s.Workers, s.Threads, s.Dispatch)
	} else {
		for i := range s.Tiers {
			names, tiers = append(names, s.Tiers[i].Name), append(tiers, s.TierScenario(i))
		}
	}
	n := len(tiers)
	m.tiers = make([]ctier, n)
	m.hops = make([]chop, n)
	for i, ts := range tiers {
		t := &m.tiers[i]
		t.s, t.name, t.half = ts, names[i], ts.RTT/2
		t.next = i+1 < n && ts.CallsPerRequest > 0
		t.policy = policyOf(ts.Reuse)
		t.shareMasks = shareMasks(ts.ShareSets)
		t.wall = m.one
		t.workers = make([]cworker, ts.Workers)
		for w := range t.workers {
			for k := range t.workers[w].owners {
				t.workers[w].owners[k] = -1
			}
		}
		hp := &m.hops[i]
		// Each hop has its own destination, so its own search; a chain
		// of one's hop is seeded with the run's seed.
		seed := opt.Seed + uint64(i)*0x9e3779b97f4a7c15
		if m.one {
			seed = opt.Seed
		}
		hp.configure(s.PortRange, m.twReuse, seed)
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

// chainSteps does what each kind of event does.
var chainSteps = [...]func(m *chainModel, a, b int32){
	ckSend:       func(m *chainModel, a, _ int32) { m.userSend(a) },
	ckArrive:     func(m *chainModel, a, _ int32) { m.arrive(a) },
	ckCPUDone:    func(m *chainModel, a, _ int32) { m.cpuDone(a) },
	ckResponse:   (*chainModel).responseOrAnswer,
	ckIdle:       (*chainModel).idleTimer,
	ckTWEnd:      func(m *chainModel, a, b int32) { m.timeWaitEnd(int(a), side(b)) },
	ckSample:     func(m *chainModel, _, _ int32) { m.sample(); m.sampleAgain(m.s.SeriesInterval, ckSample) },
	ckMachDone:   func(m *chainModel, a, _ int32) { m.machDone(a) },
	ckLoadDone:   func(m *chainModel, a, _ int32) { m.callBegin(a) },
	ckLoadGate:   func(m *chainModel, a, _ int32) { m.loadGate(a == 1) },
	ckBesideDone: func(m *chainModel, a, _ int32) { m.besideDone(a) },
	ckRaceSeen:   func(m *chainModel, a, _ int32) { m.raceSeen(a) },
}

// step handles one event; it reports when the run stops (an error: at
// once, without the linger).
func (m *chainModel) step(it item) (bool, error) {
	chainSteps[it.kind()](m, it.a, it.b())
	if m.tooMany {
		return true, errTooMany(&m.s)
	}
	return m.stopAt < 0 && m.pending == 0 && m.inFlight == 0 && m.loadEnded(m.s.Linger), nil
}

// responseOrAnswer: job a's response reaches its caller, or (b = 1) the
// answer to job a's call, from a tier that needed no job for it.
func (m *chainModel) responseOrAnswer(a, b int32) {
	if b == 1 {
		j := &m.jobs[a]
		m.answered(a, int(j.tier)+1, j.callConn, false)
		return
	}
	m.response(a)
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
	m.schedule(t+m.loadHalf, ckSend, u, 0)
}

// scheduleOpen queues the next open-loop arrival.
func (m *chainModel) scheduleOpen() {
	t := m.nextOpen
	if !m.canSend(t) {
		return
	}
	m.sent++
	m.pending++
	m.schedule(t+m.loadHalf, ckSend, -1, 0)
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
	tier := int8(-1)
	if m.one {
		tier = 0 // the request is the workers' job: no hop of its own
	}
	ji := m.newJob(tier, -1)
	j := &m.jobs[ji]
	j.user, j.req, j.start = u, m.arrived, m.now-m.loadHalf
	if u < 0 {
		m.scheduleOpen()
	}
	if m.one {
		if w := m.desk.admit(ji, m.rng); w >= 0 {
			m.startDirect(ji, w)
		}
		return
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
	ji := takeSlot(&m.jobs, &m.freeJobs)
	j := &m.jobs[ji]
	*j = cjob{} // cleared in place: a literal with fields is built aside and copied
	j.tier, j.parent = tier, parent
	j.user, j.worker, j.conn, j.callConn, j.owner = -1, -1, -1, -1, -1
	return ji
}

// finishRequest: the load's request ji has its answer at time at (now,
// but for a chain of one's), from worker w of the first tier (-1: not
// known).
func (m *chainModel) finishRequest(ji int32, at time.Duration, w int32) {
	j := &m.jobs[ji]
	if j.owner >= 0 {
		m.dropOwner(j.owner, ReasonEndOfRequest)
		j = &m.jobs[ji]
	}
	m.requests++
	total := at - j.start
	if j.failed {
		m.failed++
	} else if !m.one { // a chain of one's collector has its responses
		m.respQ.Add(total)
	}
	if !m.started || j.start < m.firstStart {
		m.firstStart, m.started = j.start, true
	}
	m.lastEnd = max(m.lastEnd, at)
	if m.counted() {
		e := &m.ev // field by field: a literal is built aside and copied
		*e = Event{}
		e.Kind, e.At, e.Req, e.Worker, e.Start, e.Total = KindRequest, at, j.req, int(w)+1, j.start, total
		if j.failed {
			e.Error = string(ErrorCallFailed)
		}
		m.emit()
	}
	m.inFlight--
	if u := j.user; u >= 0 {
		m.userSent[u]++
		next := at + m.s.ThinkTime
		if m.s.PauseEvery > 0 && m.userSent[u]%m.s.PauseEvery == 0 {
			next += m.s.Pause
		}
		m.queueSend(u, next)
	}
	m.freeJobs = append(m.freeJobs, ji)
}
