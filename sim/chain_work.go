package sim

// A chain's tiers at work: their processes, threads and CPU.

import "time"

// cpu runs d of job ji's work on its worker process, which does one piece
// at a time in arrival order, then continues the job in phase ph.
func (m *chainModel) cpu(ji int32, d time.Duration, ph uint8) {
	j := &m.jobs[ji]
	j.phase = ph
	t := &m.tiers[j.tier]
	if t.wall {
		t.busy += d
		m.schedule(m.now+d, ckCPUDone, ji, 0)
		return
	}
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
func (m *chainModel) besideDone(ji int32) { m.pieceDone(ji) }

// pieceDone continues job ji after a piece of its work, by its phase.
func (m *chainModel) pieceDone(ji int32) {
	switch m.jobs[ji].phase {
	case phAccept:
		m.takeThread(ji)
	case phWork:
		m.afterCall(ji)
	case phConnect:
		m.connect(ji)
	}
}

func (m *chainModel) cpuDone(ji int32) {
	j := &m.jobs[ji]
	t := &m.tiers[j.tier]
	w := &t.workers[j.worker]
	w.cpuBusy = false
	if w.cpuQ.len() > 0 && !t.wall {
		seg := w.cpuQ.pop()
		n := &m.jobs[seg.job]
		n.queued += m.now - n.waitFrom
		w.cpuBusy = true
		t.busy += seg.dur
		m.runWork(seg.job, seg.dur)
	}
	m.pieceDone(ji)
}

// arrive: job ji's request reaches its tier, on a new connection (which
// the tier accepts first) or a kept one.
func (m *chainModel) arrive(ji int32) {
	j := &m.jobs[ji]
	if t := &m.tiers[j.tier]; j.newConn && t.s.ServerConnTime > 0 && !t.wall {
		m.connWork(ji, t, t.s.ServerConnTime, phAccept)
		return
	}
	m.takeThread(ji)
}

// connWork runs d of job ji's work to accept or open a connection on tier
// t: beside its process's one-at-a-time work (conn_parallel), or as part
// of it.
func (m *chainModel) connWork(ji int32, t *ctier, d time.Duration, ph uint8) {
	if t.s.ConnParallel {
		m.runBeside(ji, d, ph)
	} else {
		m.cpu(ji, d, ph)
	}
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
	m.cpu(ji, m.jobWork(ji, t), phWork)
}

// jobWork is job ji's work on tier t: drawn now, or when its request was
// sent on a tier whose work takes time (a chain of one's upstream draws
// it then).
func (m *chainModel) jobWork(ji int32, t *ctier) time.Duration {
	if t.wall {
		return m.jobs[ji].work
	}
	return m.work(t)
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
		m.finishRequest(ji, m.now, -1)
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
	if m.one && j.tier == 0 {
		m.directDone(ji)
		return
	}
	t.served++
	t.queue.Add(j.queued)
	j.srvDone = m.now
	extra := m.serve(j.conn, t, m.now)
	if t.s.MaxRequests > 0 && j.tier >= 0 {
		m.retire(t, j.worker)
	}
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
			m.cpu(n, m.jobWork(n, t), phWork)
		}
	}
	m.schedule(m.now+t.half+extra+t.s.ClientReadCPU, ckResponse, ji, 0)
}

// serve: tier t finished a request on connection ci at time done. The
// response's first byte reaches the caller half a round trip later; slow
// start adds a round trip for every further window (tcp.go), returned as
// extra, and the caller spends client_read_cpu on the rest.
func (m *chainModel) serve(ci int32, t *ctier, done time.Duration) (extra time.Duration) {
	c := &m.conns[ci]
	if c.served > 0 {
		c.cwnd = restartCwnd(&t.s, c.cwnd, done-c.srvIdleAt)
	}
	rounds, cwnd := transferRounds(t.s.ResponseBytes, t.s.MSS, c.cwnd)
	c.cwnd = cwnd
	c.served++
	extra = time.Duration(rounds-1) * t.s.RTT
	c.srvIdleAt = done + extra // the server's idle timer starts after the last byte
	return extra
}

// retire counts a request served by worker w of tier t and, at the tier's
// max_requests (pm.max_requests), replaces the worker with a fresh process,
// as PHP-FPM does: the kernel closes its sockets, so
// its pool or keep-alive cache for the next tier is gone (it closes
// first). The connections into it that a caller keeps are not closed by
// it here.
func (m *chainModel) retire(t *ctier, w int32) {
	wk := &t.workers[w]
	wk.served++
	if wk.served < t.s.MaxRequests {
		return
	}
	wk.served = 0
	m.dropWorkerOwners(t, w)
}

// dropWorkerOwners: worker w of tier t exits; its caches go with it.
func (m *chainModel) dropWorkerOwners(t *ctier, w int32) {
	for k, o := range t.workers[w].owners {
		if o >= 0 {
			t.workers[w].owners[k] = -1
			m.dropOwner(o, ReasonWorkerExit)
		}
	}
}
