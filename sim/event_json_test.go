package sim

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// TestAppendCompactJSON: the compact form is the full one without the
// fields that are false, zero or empty, and a reused call's is a third
// shorter.
func TestAppendCompactJSON(t *testing.T) {
	ms := time.Millisecond
	events := []Event{
		{Kind: KindCall, At: 93 * ms, Req: 2, Call: 1, Worker: 1, Conn: 1, Reused: true, Start: 79 * ms, StartTransfer: 14 * ms, Total: 14 * ms, LocalPort: 32768},
		{Kind: KindCall, At: 92 * ms, Req: 1, Call: 1, Worker: 1, Conn: 1, NewConn: true, NameLookup: 30 * ms, Connect: 42 * ms, AppConnect: 66 * ms, StartTransfer: 80 * ms, Total: 92 * ms, Handshake: "full", LocalPort: 32768},
		{Kind: KindCall, At: 5 * ms, Req: 3, Call: 1, Worker: 2, Error: "EADDRNOTAVAIL"},
		{Kind: KindRequest, At: 93 * ms, Req: 1, Worker: 1, Total: 93 * ms},
		{Kind: KindClose, At: 93 * ms, Conn: 1, LocalPort: 32768, By: "client", Reason: "end-of-request"},
	}
	for _, e := range events {
		full, compact := e.AppendJSON(nil), e.AppendCompactJSON(nil)
		var f, c map[string]any
		if err := json.Unmarshal(full, &f); err != nil {
			t.Fatalf("%s: %v", full, err)
		}
		if err := json.Unmarshal(compact, &c); err != nil {
			t.Fatalf("%s: %v", compact, err)
		}
		for k, v := range f {
			if v == false || v == 0.0 || v == "" {
				delete(f, k)
			}
		}
		if !reflect.DeepEqual(f, c) {
			t.Errorf("compact %s\n   full %s", compact, full)
		}
	}
	reused := &events[0]
	if f, c := len(reused.AppendJSON(nil)), len(reused.AppendCompactJSON(nil)); float64(c) > 0.67*float64(f) {
		t.Errorf("a reused call: %d bytes compact, %d full", c, f)
	}
}

// TestAppendMS: the event's milliseconds are written from the integer
// microseconds; the bytes are those of strconv's shortest float formatting
// of float64(µs)/1000, which encoding/json would write for the same value.
func TestAppendMS(t *testing.T) {
	want := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d/time.Microsecond)/1000, 'f', -1, 64)
	}
	check := func(d time.Duration) {
		t.Helper()
		if got := string(appendMS(nil, d)); got != want(d) {
			t.Fatalf("appendMS(%d ns) = %s, want %s", int64(d), got, want(d))
		}
	}
	for _, us := range []int64{0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1010, 1100, 12345, 999999, 1e6, 123456789,
		1e15 - 1, 1e15, 1e15 + 1, 1 << 53} {
		for _, sign := range []int64{1, -1} {
			check(time.Duration(sign * us * 1000))
			check(time.Duration(sign*us*1000 + sign*999)) // sub-µs nanoseconds are dropped
		}
	}
	check(math.MinInt64)
	check(math.MaxInt64)
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		check(time.Duration(r.Int64N(2e15) - 1e15 + r.Int64N(1000)))
		check(time.Duration(r.Int64N(2e9)))
	}
}
