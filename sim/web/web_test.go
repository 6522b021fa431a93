package web

import (
	"net/http/httptest"
	"testing"
	"time"
)

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin, host string
		ok           bool
	}{
		{"", "127.0.0.1:8080", true},
		{"http://127.0.0.1:8080", "127.0.0.1:8080", true},
		{"https://LOCALHOST:8080", "localhost:8080", true},
		{"http://127.0.0.1:9999", "127.0.0.1:8080", false},
		{"http://evil.example", "127.0.0.1:8080", false},
		{"null", "127.0.0.1:8080", false},
		{"file:///x", "127.0.0.1:8080", false},
		{"http://%zz", "127.0.0.1:8080", false},
	} {
		r := httptest.NewRequest("GET", "/ws", nil)
		r.Host = tc.host
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if got := SameOrigin(r); got != tc.ok {
			t.Errorf("Origin %q, Host %q: %v, want %v", tc.origin, tc.host, got, tc.ok)
		}
	}
}

// TestBucket: a full bucket allows its burst at once, and after a pause
// the burst again, not what the pause would have refilled. While a loop
// spends tokens the bucket refills one a millisecond: on a quiet machine
// the loop takes microseconds (5 to 7 allowed), but a thread that other
// programs keep from the CPU for a few milliseconds meanwhile is rightly
// given more, so the bound is the burst plus what the loop's time refills.
func TestBucket(t *testing.T) {
	start := time.Now()
	b := NewBucket(1000, 5)
	spend := func() (n, most int) {
		for b.Allow() && n <= 100 {
			n++
		}
		return n, b.Burst + int(time.Since(start).Seconds()*b.Rate)
	}
	if n, most := spend(); n < 5 || n > most {
		t.Errorf("%d allowed at once, want the burst of 5 (at most %d, with what its time refilled)", n, most)
	}
	time.Sleep(20 * time.Millisecond) // 20 tokens' worth, capped at 5
	start = time.Now()
	if n, most := spend(); n < 5 || n > most {
		t.Errorf("%d allowed after a pause, want 5 (at most %d, with what its time refilled)", n, most)
	}
}
