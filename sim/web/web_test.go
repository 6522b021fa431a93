package web

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456…"},
		{"가나다라마바사", 10, "가나…"}, // never half a rune
		{"abc", 0, ""},
		{"abcd", 2, "ab"},
	} {
		got := Clip(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
	if got := Clip(strings.Repeat("x", 16000), 64); len(got) > 64 {
		t.Errorf("Clip gave %d bytes", len(got))
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
