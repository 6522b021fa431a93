package sim

import "time"

// The machine's CPUs. With cpus = 0 every process of a chain gets a CPU
// whenever it has work (each tier's process still does one piece at a
// time). With cpus = N, every piece of work (a tier's request, an accept, a
// connect, the load generator's turn) also needs one of the machine's N
// CPUs, less the cpu_background that other programs take: the runnable
// pieces share what is left equally, at most one CPU each, as Linux's
// scheduler shares CPUs between runnable threads of equal priority
// (processor sharing). On a busy machine a process then waits for a CPU
// although it has work: the app serves fewer requests a second than its
// CPU time per request allows, and the load generator answers later, so
// more of nginx's kept connections sit idle at once.
//
// Processor sharing in virtual work: every runnable piece advances at the
// same rate r = min(1, capacity/n), so a piece that starts when each has
// done v of work ends when each has done v + its work. The pieces wait in
// a heap by that finish tag; one engine event is pending, for the head.

// machine is the shared CPUs of a chain run.
type machine struct {
	capacity float64       // CPUs left for the chain
	v        float64       // work each runnable piece has done (ns)
	last     time.Duration // when v was brought up to date
	heap     []machPiece
	gen      int32 // generation of the pending ckMachDone event
	seq      uint64
}

// machPiece is one runnable piece of work: a tier's job's, or the load
// generator's turn for a request (the load's job).
type machPiece struct {
	finish float64
	seq    uint64 // ties end in start order
	id     int32  // the job
	load   bool   // the load's turn: the request goes out when it ends
	beside bool   // work beside its process's one piece at a time (conn_parallel)
}

func (mc *machine) rate() float64 {
	n := float64(len(mc.heap))
	if n == 0 {
		return 0
	}
	return min(1, mc.capacity/n)
}

func (mc *machine) advance(now time.Duration) {
	mc.v += mc.rate() * float64(now-mc.last)
	mc.last = now
}

func (mc *machine) less(i, j int) bool {
	a, b := &mc.heap[i], &mc.heap[j]
	return a.finish < b.finish || (a.finish == b.finish && a.seq < b.seq)
}

func (mc *machine) push(p machPiece) {
	mc.heap = append(mc.heap, p)
	for i := len(mc.heap) - 1; i > 0; {
		parent := (i - 1) / 2
		if !mc.less(i, parent) {
			break
		}
		mc.heap[i], mc.heap[parent] = mc.heap[parent], mc.heap[i]
		i = parent
	}
}

func (mc *machine) pop() machPiece {
	top := mc.heap[0]
	n := len(mc.heap) - 1
	mc.heap[0] = mc.heap[n]
	mc.heap = mc.heap[:n]
	for i := 0; ; {
		l, r, s := 2*i+1, 2*i+2, i
		if l < n && mc.less(l, s) {
			s = l
		}
		if r < n && mc.less(r, s) {
			s = r
		}
		if s == i {
			break
		}
		mc.heap[i], mc.heap[s] = mc.heap[s], mc.heap[i]
		i = s
	}
	return top
}

// runWork runs d of job ji's work: at once on a CPU of its own without
// shared CPUs, or as a piece sharing the machine's.
func (m *chainModel) runWork(ji int32, d time.Duration) {
	if m.mach == nil {
		m.schedule(m.now+d, ckCPUDone, ji, 0)
		return
	}
	m.machStart(machPiece{id: ji}, d)
}

// runLoad runs the load generator's turn (load_cpu) for its request ji,
// before the request goes out.
func (m *chainModel) runLoad(ji int32, d time.Duration) {
	if m.mach == nil {
		m.schedule(m.now+d, ckLoadDone, ji, 0)
		return
	}
	m.machStart(machPiece{id: ji, load: true}, d)
}

func (m *chainModel) machStart(p machPiece, d time.Duration) {
	mc := m.mach
	mc.advance(m.now)
	mc.seq++
	p.seq, p.finish = mc.seq, mc.v+float64(d)
	mc.push(p)
	m.machNext()
}

// machNext schedules the end of the piece that finishes first.
func (m *chainModel) machNext() {
	mc := m.mach
	mc.gen++
	if len(mc.heap) == 0 {
		return
	}
	left := (mc.heap[0].finish - mc.v) / mc.rate()
	at := m.now + time.Duration(max(0, left)+0.999) // round up: never end early
	m.schedule(at, ckMachDone, mc.gen, 0)
}

// machDone ends the pieces whose work is done, then lets each go on.
func (m *chainModel) machDone(gen int32) {
	mc := m.mach
	if gen != mc.gen {
		return
	}
	mc.advance(m.now)
	var done [8]machPiece
	ended := done[:0]
	for len(mc.heap) > 0 && mc.heap[0].finish <= mc.v+0.5 {
		ended = append(ended, mc.pop())
	}
	if len(mc.heap) == 0 {
		mc.v, mc.last = 0, m.now // keep the tags small
	}
	m.machNext()
	for _, p := range ended {
		switch {
		case p.load:
			m.callBegin(p.id)
		case p.beside:
			m.besideDone(p.id)
		default:
			m.cpuDone(p.id)
		}
	}
}
