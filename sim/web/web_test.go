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

func TestBucket(t *testing.T) {
	b := NewBucket(1000, 5)
	n := 0
	for b.Allow() {
		n++
		if n > 100 {
			break
		}
	}
	if n < 5 || n > 7 { // the burst, and what a microsecond or two refills
		t.Errorf("%d allowed at once, want the burst of 5", n)
	}
	time.Sleep(20 * time.Millisecond) // 20 tokens' worth, capped at 5
	n = 0
	for b.Allow() && n < 100 {
		n++
	}
	if n < 5 || n > 7 {
		t.Errorf("%d allowed after a pause, want 5", n)
	}
}
