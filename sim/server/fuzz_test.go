package server

import (
	"encoding/json"
	"testing"

	"github.com/connlab/connlab/sim/internal/runsvc"
)

// FuzzMessage feeds a page's message to the decoder and, for a run, to
// the checks a run passes before it starts. Whatever the bytes, nothing
// panics, a decoded message has an id of at most 64 bytes and a known
// type, and the error reply is a small JSON object that echoes no more
// than an id of 64 bytes: a client cannot make a reply grow with what it
// sends. The seed corpus (testdata/fuzz/FuzzMessage) holds the hostile
// messages a hostile client was seen to send.
func FuzzMessage(f *testing.F) {
	f.Add([]byte(`{"type":"run","id":"1","lab":"php-persistent-share","block":"across-requests","params":{"rtt":"20ms"}}`))
	s := New(Options{Labs: []string{labsDir}, Logf: func(string, ...any) {}})
	f.Cleanup(s.Close)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, reply := decode(data)
		if reply == nil && m != nil && m.Type == "run" {
			if _, err := s.planner.Plan(m); err != nil {
				reply = errorOf(m.ID, err)
			}
		}
		if m == nil && reply == nil {
			t.Fatal("neither a message nor an error")
		}
		if m != nil && (len(m.ID) > runsvc.MaxID || (m.Type != "run" && m.Type != "cancel")) {
			t.Fatalf("decoded %q with a %d-byte id", m.Type, len(m.ID))
		}
		if reply == nil {
			return
		}
		var e runsvc.Error
		if err := json.Unmarshal(reply, &e); err != nil || e.Type != "error" {
			t.Fatalf("reply %q: %v", reply, err)
		}
		if len(reply) > 1024 || len(e.ID) > runsvc.MaxID || len(e.Field) > maxField {
			t.Fatalf("a %d-byte reply to a %d-byte message: %.200s", len(reply), len(data), reply)
		}
	})
}
