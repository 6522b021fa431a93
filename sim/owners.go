package sim

import "time"

// owner is one cache: a curl easy handle or share handle, a pool, or nginx's
// per-worker keep-alive cache. It keeps idle connections (most recently used
// last), the DNS answer and a TLS session.
type owner struct {
	idle    []int32
	open    int // connections it owns, idle or in use
	waiters ring[int32]
	dnsAt   time.Duration // when the cached answer was resolved
	hasDNS  bool
	hasTLS  bool
	alive   bool
}

type connState uint8

const (
	connActive connState = iota
	connIdle
	connClosed
)

// ownerSlots holds the cache owners of a run in slots
// recycled through a free list.
type ownerSlots struct {
	owners     []owner
	freeOwners []int32
}

// newOwner takes a slot for a new, empty owner, keeping a recycled slot's
// idle list's memory.
func (m *ownerSlots) newOwner() int32 {
	var o int32
	if n := len(m.freeOwners); n > 0 {
		o = m.freeOwners[n-1]
		m.freeOwners = m.freeOwners[:n-1]
		idle := m.owners[o].idle[:0]
		m.owners[o] = owner{idle: idle}
	} else {
		m.owners = append(m.owners, owner{})
		o = int32(len(m.owners) - 1)
	}
	m.owners[o].alive = true
	return o
}

// takeSlot takes a slot of items from the free list, or a new one at the
// end: jobs and connections live in slots recycled this way, so that a
// million-call run keeps only what is in flight.
func takeSlot[T any](items *[]T, free *[]int32) int32 {
	if n := len(*free); n > 0 {
		i := (*free)[n-1]
		*free = (*free)[:n-1]
		return i
	}
	var zero T
	*items = append(*items, zero)
	return int32(len(*items) - 1)
}
