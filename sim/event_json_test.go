package sim

import (
	"encoding/json"
	"reflect"
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
