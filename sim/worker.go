package sim

// workers are the client's processes (PHP-FPM children, php -S workers,
// nginx workers). Each serves up to Threads requests at once and owns its
// own caches, so N workers keep N separate pools.
type workers struct {
	ws []worker
	// Dispatch "queue": free thread slots, longest idle first. The
	// slots no request has used yet come first, in turn over the workers
	// (the k-th is worker k mod workers); they are counted, not listed,
	// so that workers × threads (up to 10^9) costs nothing until requests
	// use them. freeSlots lists the slots requests have given back.
	slots, slotsUsed int64
	freeSlots        ring[int32]
	waiting          ring[int32] // dispatch "queue": requests waiting for any worker
	rr               int
}

type worker struct {
	busy    int
	served  int
	waiting ring[int32] // round-robin and random: requests queued at this worker
	// owners holds the worker's process-scoped cache owners: index 0 is the
	// pool (reuse = pool or upstream-keepalive), 1..15 are persistent share
	// handles by option mask. -1: not created yet.
	owners [16]int32
}

func (m *model) initWorkers() {
	m.ws = make([]worker, m.s.Workers)
	for i := range m.ws {
		m.ws[i].owners = noOwners
	}
	if m.s.Threads > 0 && m.s.Dispatch == DispatchQueue {
		// Interleaved, so that a request goes to a worker with nothing to
		// do before it goes to a second thread of a busy one.
		m.slots = int64(m.s.Threads) * int64(len(m.ws))
	}
}

// freeSlot takes the free thread slot idle longest, or reports none.
func (m *workers) freeSlot() (int32, bool) {
	if m.slotsUsed < m.slots {
		w := int32(m.slotsUsed % int64(len(m.ws)))
		m.slotsUsed++
		return w, true
	}
	if m.freeSlots.len() > 0 {
		return m.freeSlots.pop(), true
	}
	return 0, false
}

var noOwners = [16]int32{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}

// dispatch hands an arrived request to a worker or queues it.
func (m *model) dispatch(ri int32) {
	if m.s.Threads > 0 && m.s.Dispatch == DispatchQueue {
		if w, ok := m.freeSlot(); ok {
			m.ws[w].busy++
			m.startRequest(ri, w)
			return
		}
		m.waiting.push(ri)
		return
	}
	var w int32
	switch m.s.Dispatch {
	case DispatchRandom:
		w = int32(m.rng.IntN(len(m.ws)))
	default: // round-robin, and queue with unlimited threads
		w = int32(m.rr % len(m.ws))
		m.rr++
	}
	wk := &m.ws[w]
	if m.s.Threads == 0 || wk.busy < m.s.Threads {
		wk.busy++
		m.startRequest(ri, w)
		return
	}
	wk.waiting.push(ri)
}

// workerDone frees a slot of worker w after a request, recycling the worker
// when pm.max_requests is reached (or after every request in CLI mode, where
// each request is its own process), then takes the next queued request.
func (m *model) workerDone(w int32) {
	wk := &m.ws[w]
	wk.busy--
	wk.served++
	if m.s.Mode == ModeCLI || (m.s.MaxRequests > 0 && wk.served >= m.s.MaxRequests) {
		m.recycleWorker(w)
	}
	if m.s.Threads > 0 && m.s.Dispatch == DispatchQueue {
		if m.waiting.len() > 0 {
			wk.busy++
			m.startRequest(m.waiting.pop(), w)
			return
		}
		m.freeSlots.push(w)
		return
	}
	if wk.waiting.len() > 0 {
		wk.busy++
		m.startRequest(wk.waiting.pop(), w)
	}
}

// recycleWorker replaces worker w with a fresh process: the kernel closes its
// sockets, so its process-scoped pools are gone (the client closes first).
func (m *model) recycleWorker(w int32) {
	wk := &m.ws[w]
	for i, o := range wk.owners {
		if o >= 0 {
			wk.owners[i] = -1
			m.dropOwner(o, ReasonWorkerExit)
		}
	}
	wk.served = 0
}

// ring is a growable FIFO queue.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (q *ring[T]) len() int { return q.size }

func (q *ring[T]) push(v T) {
	if q.size == len(q.buf) {
		n := max(8, 2*len(q.buf))
		nb := make([]T, n)
		for i := 0; i < q.size; i++ {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

func (q *ring[T]) pop() T {
	v := q.buf[q.head]
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return v
}

func (q *ring[T]) peek() T { return q.buf[q.head] }
