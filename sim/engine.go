// Package sim is connlab's discrete-event model of what a connection costs:
// DNS, TCP and TLS handshakes, round trips, keep-alive idle timeouts, worker
// processes with their own pools, TIME_WAIT and local-port exhaustion.
//
// It runs in virtual time (a time.Duration from the start of the run) and
// never sleeps: a 75 s keep-alive timeout costs nothing to simulate. Events
// at the same instant run in the order they were scheduled, and the only
// randomness comes from a seeded generator, so the same scenario and seed give
// the same output byte for byte.
//
// The package uses the standard library only.
package sim

import (
	"context"
	"errors"
	"math/bits"
	"time"

	"github.com/connlab/connlab/sim/internal/msgf"
)

// evKind is what a scheduled engine event does (chain_engine.go).
type evKind uint8

// item is one scheduled event. Ties at the same time run in scheduling order,
// which makes runs deterministic. Its kind rides in the low byte of kb, b
// (at most maxItemB) above it, so that an item is 16 bytes.
type item struct {
	at time.Duration
	a  int32
	kb uint32
}

// maxItemB is the largest b an item carries (a connection's generation
// wraps below it).
const maxItemB = 1<<24 - 1

func (it item) kind() evKind { return evKind(it.kb) }
func (it item) b() int32     { return int32(it.kb >> 8) }

// eventQueue is a radix heap: a monotone priority queue for a simulation
// whose clock never goes back. An item waits in the bucket numbered by the
// highest bit in which its time differs from the last time popped; bucket 0
// holds the items due at that time, in the order they were scheduled. Every
// bucket keeps scheduling order, so ties run first-scheduled first. Each
// item moves down at most 64 times, and pushes cost a few bit operations.
type eventQueue struct {
	last    uint64
	buckets [64][]item // times are not negative: they differ below bit 63
	full    uint64     // bit b: bucket b (b > 0) may hold items
	head    int        // next item of bucket 0
	stop    int        // clock.next calls settle when head reaches it
	front   []item     // bucket 0 as settle left it: what clock.next reads
}

func (q *eventQueue) push(it item) {
	b := bits.Len64(uint64(it.at) ^ q.last)
	q.buckets[b] = append(q.buckets[b], it)
	q.full |= 1 << b
}

// settle is the slow path of taking an item (clock.next), kept out of the
// loop's way. Once bucket 0 is consumed it refills it from the first bucket
// that holds items (false: none does, the queue is empty); when many events
// fell at one instant it reclaims bucket 0's consumed front. It sets stop,
// where it must be called again.
func (q *eventQueue) settle() bool {
	b0 := q.buckets[0]
	switch {
	case q.head < len(b0) && q.head >= 4096 && 2*q.head >= len(b0):
		n := copy(b0, b0[q.head:])
		q.buckets[0], q.head = b0[:n], 0
	case q.head == len(b0):
		q.buckets[0], q.head = b0[:0], 0
		if q.full&^1 == 0 {
			q.front, q.stop = q.buckets[0], 0
			return false
		}
		i := bits.TrailingZeros64(q.full &^ 1)
		src := q.buckets[i]
		minAt := src[0].at
		for _, it := range src[1:] {
			minAt = min(minAt, it.at)
		}
		q.last = uint64(minAt)
		for _, it := range src {
			b := bits.Len64(uint64(it.at) ^ q.last)
			q.buckets[b] = append(q.buckets[b], it)
			q.full |= 1 << b
		}
		q.buckets[i] = src[:0]
		q.full &^= 1 << i
	}
	q.front = q.buckets[0]
	n := len(q.front)
	q.stop = min(n, max(4096, (n+1)/2))
	return true
}

// clock is the engine's event loop: the queue, the time, and
// when the run stops.
type clock struct {
	q         eventQueue
	now       time.Duration
	stopAt    time.Duration // -1 until the load has ended; then the end of the linger
	processed int64         // events handled
}

// schedule queues an event at time at, or now if at has passed.
func (c *clock) schedule(at time.Duration, kind evKind, a, b int32) {
	if at < c.now {
		at = c.now
	}
	c.q.push(item{at: at, a: a, kb: uint32(b)<<8 | uint32(kind)})
}

// next takes the next event and moves the clock to it. It returns false
// when the run is over: no event is left, or the next one comes after the
// linger. The queue's fast path is written here, so that an event costs
// one call; the loops look at ctx every 4096 events themselves
// (cancelled).
func (c *clock) next() (item, bool) {
	q := &c.q
	if q.head >= q.stop && !q.settle() {
		return item{}, false
	}
	it := q.front[q.head]
	q.head++
	if c.stopAt >= 0 && it.at > c.stopAt {
		return item{}, false
	}
	c.now = it.at
	c.processed++
	return it, true
}

// loop is the event loop: it hands each event to step in
// time order until none is left, ctx ends, or step stops the run.
func (c *clock) loop(ctx context.Context, step func(item) (stop bool, err error)) error {
	for {
		it, ok := c.next()
		if !ok || c.cancelled(ctx) {
			return nil
		}
		if stop, err := step(it); stop || err != nil {
			return err
		}
	}
}

// cancelled reports, every 4096 events, whether ctx is done.
func (c *clock) cancelled(ctx context.Context) bool {
	return c.processed&0xfff == 0 && ctx.Err() != nil
}

// sampleAgain schedules the next time-series sample, unless it falls after
// the linger.
func (c *clock) sampleAgain(every time.Duration, kind evKind) {
	if c.stopAt < 0 || c.now+every <= c.stopAt {
		c.schedule(c.now+every, kind, 0, 0)
	}
}

// loadEnded starts the linger once the load has ended; it reports true
// when there is none and the loop ends now.
func (c *clock) loadEnded(linger time.Duration) bool {
	c.stopAt = c.now + linger
	return linger == 0
}

// end moves the clock to the end of the linger, where the last sample is
// taken. It returns ctx's error: a run stopped by ctx failed.
func (c *clock) end(ctx context.Context, linger time.Duration) error {
	if c.stopAt >= 0 && linger > 0 {
		c.now = c.stopAt
	}
	return ctx.Err()
}

// errTooMany is the error of a run whose load exceeds MaxRunRequests.
func errTooMany(s *Scenario) error {
	return msgf.Errorf("%w: %d requests sent before duration %s ended; lower concurrency or duration, or set requests",
		ErrTooManyRequests, MaxRunRequests, FormatDuration(s.Duration))
}

// Options control a run without changing what is modelled.
type Options struct {
	// Seed for the random generator; the same seed gives the same run.
	Seed uint64
	// Sink, if not nil, receives every event in time order. The pointer is
	// only valid during the call: copy what you keep.
	Sink func(*Event)
}

// Result is what one run of a scenario produced.
type Result struct {
	Summary Summary
	Series  Series
	// EngineEvents counts the scheduled events the engine processed.
	EngineEvents int64
}

// ErrTooManyRequests reports a run that would exceed MaxRunRequests.
var ErrTooManyRequests = errors.New("run exceeds the request limit")

// Run simulates s. It returns an error only for a scenario that fails
// Validate, a run that would exceed MaxRunRequests, or a cancelled ctx;
// failures the lesson is about (EADDRNOTAVAIL, keep-alive races) are data in
// the Result.
func Run(ctx context.Context, s Scenario, opt Options) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return runChain(ctx, s, opt)
}

// shareMasks are the masks of share_sets; a set that is
// not valid shares everything (Validate refuses it where it matters: with
// process reuse).
func shareMasks(sets [][]string) []uint8 {
	var masks []uint8
	for _, set := range sets {
		mask, err := ShareMask(set)
		if err != nil {
			mask = ShareDNS | ShareConnect | ShareSSLSession
		}
		masks = append(masks, mask)
	}
	return masks
}
