package sim

import "math/rand/v2"

// desk hands arriving requests to worker processes that take them from one
// listen queue (PHP-FPM's children, php -S): by free thread slot, longest
// idle first (dispatch = queue), or in turn or at random, each worker
// then queueing its own. Both engines' first tier of workers use it.
type desk struct {
	threads int
	mode    Dispatch
	busy    []int
	served  []int
	own     []ring[int32] // round-robin and random: requests queued at each worker
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

func newDesk(workers, threads int, mode Dispatch) desk {
	d := desk{threads: threads, mode: mode, busy: make([]int, workers), served: make([]int, workers), own: make([]ring[int32], workers)}
	if d.queued() {
		// Interleaved, so that a request goes to a worker with nothing to
		// do before it goes to a second thread of a busy one.
		d.slots = int64(threads) * int64(workers)
	}
	return d
}

func (d *desk) queued() bool { return d.threads > 0 && d.mode == DispatchQueue }

// freeSlot takes the free thread slot idle longest, or reports none.
func (d *desk) freeSlot() (int32, bool) {
	if d.slotsUsed < d.slots {
		w := int32(d.slotsUsed % int64(len(d.busy)))
		d.slotsUsed++
		return w, true
	}
	if d.freeSlots.len() > 0 {
		return d.freeSlots.pop(), true
	}
	return 0, false
}

// admit takes request r: the worker that starts it now, or -1 when it
// waits for one.
func (d *desk) admit(r int32, rng *rand.Rand) int32 {
	if d.queued() {
		if w, ok := d.freeSlot(); ok {
			d.busy[w]++
			return w
		}
		d.waiting.push(r)
		return -1
	}
	var w int32
	switch d.mode {
	case DispatchRandom:
		w = int32(rng.IntN(len(d.busy)))
	default: // round-robin, and queue with unlimited threads
		w = int32(d.rr % len(d.busy))
		d.rr++
	}
	if d.threads == 0 || d.busy[w] < d.threads {
		d.busy[w]++
		return w
	}
	d.own[w].push(r)
	return -1
}

// leave frees a slot of worker w after a request; it reports whether the
// worker has now served max (> 0) requests, and is replaced.
func (d *desk) leave(w int32, max int) (replaced bool) {
	d.busy[w]--
	d.served[w]++
	if max > 0 && d.served[w] >= max {
		d.served[w] = 0
		return true
	}
	return false
}

// nextFor is the queued request worker w starts after leave, or -1.
func (d *desk) nextFor(w int32) int32 {
	if d.queued() {
		if d.waiting.len() > 0 {
			d.busy[w]++
			return d.waiting.pop()
		}
		d.freeSlots.push(w)
		return -1
	}
	if d.own[w].len() > 0 {
		d.busy[w]++
		return d.own[w].pop()
	}
	return -1
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
