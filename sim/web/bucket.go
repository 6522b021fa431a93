package web

import "time"

// A Bucket limits the messages of one connection: Burst at once, Rate a
// second kept up (a token bucket). The zero value allows nothing; it is
// used by one goroutine (the read pump).
type Bucket struct {
	Rate  float64 // tokens a second
	Burst int     // tokens at most

	tokens float64
	last   time.Time
}

// NewBucket returns a full bucket.
func NewBucket(rate float64, burst int) *Bucket {
	return &Bucket{Rate: rate, Burst: burst, tokens: float64(burst), last: time.Now()}
}

// Allow spends one token; false when there is none.
func (b *Bucket) Allow() bool {
	now := time.Now()
	b.tokens = min(float64(b.Burst), b.tokens+now.Sub(b.last).Seconds()*b.Rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
