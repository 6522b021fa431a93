package sim

import (
	"math"
	"time"
)

// load is the traffic generator: closed-loop users (siege -c) or open-loop
// arrivals at a rate, for a number of requests or a duration.
type load struct {
	sent       int // requests sent so far
	arrived    int // requests that reached the workers so far
	inFlight   int // requests sent and not yet answered
	pending    int // arrival events scheduled and not yet processed
	userSent   []int
	nextOpen   time.Duration
	tooMany    bool
	lastSample Summary

	reqs     []request
	freeReqs []int32
}

// request is one web request and the state of its current call.
type request struct {
	id     int
	user   int32
	sent   time.Duration // when the user sent it
	worker int32
	owner  int32 // request-scoped cache owner (-1: none yet)
	failed bool

	call      int // current call, from 1
	callStart time.Duration
	waitFrom  time.Duration // start of a wait for a pool connection
	queued    time.Duration
	conn      int32
	newConn   bool
	retried   bool
	handshake Handshake
	nameLook  time.Duration // phases, from callStart
	connect   time.Duration
	appConn   time.Duration
	ready     time.Duration // absolute time the request bytes leave
	srvWork   time.Duration // server work for this call
	srvDone   time.Duration // absolute time the server finished
	failMsg   ErrorKind     // the call failed with this error
	portErr   bool          // ... because no local port was free
}

func (m *model) startLoad() {
	if m.s.Load == LoadOpen {
		m.scheduleOpenArrival()
		return
	}
	m.userSent = make([]int, m.s.Concurrency)
	for u := 0; u < m.s.Concurrency; u++ {
		m.send(int32(u), 0)
	}
}

// canSend reports whether another request may start at send time t.
func (m *model) canSend(t time.Duration) bool {
	if m.s.Requests > 0 && m.sent >= m.s.Requests {
		return false
	}
	if m.s.Duration > 0 && t >= m.s.Duration {
		return false
	}
	if m.sent >= MaxRunRequests {
		m.tooMany = true
		return false
	}
	return true
}

// send schedules user u's next request, sent at time t.
func (m *model) send(u int32, t time.Duration) {
	if !m.canSend(t) {
		return
	}
	m.sent++
	m.pending++
	m.schedule(t+m.crttHalf, evArrive, u, 0)
}

func (m *model) scheduleOpenArrival() {
	t := m.nextOpen
	if !m.canSend(t) {
		return
	}
	m.sent++
	m.pending++
	m.schedule(t+m.crttHalf, evArrive, -1, 0)
	gap := 1 / m.s.Rate
	if m.s.Arrival == ArrivalPoisson {
		gap = -math.Log(1-m.rng.Float64()) / m.s.Rate
	}
	m.nextOpen = t + time.Duration(gap*float64(time.Second))
}

func (m *model) loadDone() bool { return m.pending == 0 && m.inFlight == 0 }

// arrive: a request reaches the workers.
func (m *model) arrive(user int32) {
	m.pending--
	m.inFlight++
	m.arrived++
	r := m.newRequest(user)
	if user < 0 {
		m.scheduleOpenArrival()
	}
	m.dispatch(r)
}

func (m *model) newRequest(user int32) int32 {
	var ri int32
	if n := len(m.freeReqs); n > 0 {
		ri = m.freeReqs[n-1]
		m.freeReqs = m.freeReqs[:n-1]
	} else {
		m.reqs = append(m.reqs, request{})
		ri = int32(len(m.reqs) - 1)
	}
	m.reqs[ri] = request{id: m.arrived, user: user, sent: m.now - m.crttHalf, worker: -1, owner: -1, conn: -1}
	return ri
}

// startRequest runs on worker w once it has a free slot.
func (m *model) startRequest(ri int32, w int32) {
	r := &m.reqs[ri]
	r.worker = w
	if m.s.AppTime > 0 || m.s.CallsPerRequest == 0 {
		m.schedule(m.now+m.s.AppTime, evStartCall, ri, 0)
		return
	}
	m.beginCall(ri)
}

// nextCall starts the request's next call or finishes it.
func (m *model) nextCall(ri int32) {
	r := &m.reqs[ri]
	if r.call < m.s.CallsPerRequest && !r.failed {
		m.beginCall(ri)
		return
	}
	m.finishRequest(ri)
}

func (m *model) finishRequest(ri int32) {
	r := &m.reqs[ri]
	w := r.worker
	m.endRequestScope(ri)
	e := &m.ev
	*e = Event{Kind: KindRequest, At: m.now + m.crttHalf, Req: r.id, Worker: int(w) + 1, Start: r.sent, Total: m.now + m.crttHalf - r.sent}
	if r.failed {
		e.Error = string(ErrorCallFailed)
	}
	m.emit(e)
	m.inFlight--
	if r.user >= 0 {
		u := r.user
		m.userSent[u]++
		next := m.now + m.crttHalf + m.s.ThinkTime
		if m.s.PauseEvery > 0 && m.userSent[u]%m.s.PauseEvery == 0 {
			next += m.s.Pause
		}
		m.send(u, next)
	}
	m.freeReqs = append(m.freeReqs, ri)
	m.workerDone(w)
}
