package runsvc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
)

// outbox is a BatchOut that keeps what it is handed, each batch closed
// without server_ms as the page's model closes it.
type outbox struct {
	msgs []string
}

func (o *outbox) Open() []byte { return nil }

func (o *outbox) Batch(data []byte) {
	o.msgs = append(o.msgs, string(AppendEventsTail(data)))
}

func (o *outbox) Send(msg any) {
	b, _ := json.Marshal(msg)
	o.msgs = append(o.msgs, string(b))
}

// A batcher cuts a variant's events at Size per message and Events per
// variant (then one truncated), starts a message at each variant, stops a
// variant past Requests requests (once), and with OnlyDrawn leaves out
// request and idle events.
func TestBatcher(t *testing.T) {
	o := &outbox{}
	b := NewBatcher("r", Limits{ModelRequests: 3, ModelEvents: 5, BatchEvents: 2}, o)
	call := &sim.Event{Kind: sim.KindCall}
	for range 3 {
		if err := b.Add("a", call); err != nil {
			t.Fatal(err)
		}
	}
	b.Add("b", call) // a new variant: a's batch of one goes
	for range 6 {
		b.Add("a", call) // a's sent 3 → 5, then truncated
	}
	b.Flush()
	var got []string
	for _, m := range o.msgs {
		var x struct {
			Type, Variant string
			Events        []json.RawMessage
		}
		if err := json.Unmarshal([]byte(m), &x); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		switch x.Type {
		case "events":
			got = append(got, x.Variant+":"+strings.Repeat("e", len(x.Events)))
		default:
			got = append(got, m)
		}
	}
	want := []string{"a:ee", "a:e", "b:e", "a:ee", `{"type":"truncated","id":"r","variant":"a","sent":5}`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got  %q\nwant %q", got, want)
	}

	req := &sim.Event{Kind: sim.KindRequest}
	var errs []error
	for range 6 {
		if err := b.Add("c", req); err != nil {
			errs = append(errs, err)
		}
	}
	var fe *FieldError
	if len(errs) != 1 || !errors.As(errs[0], &fe) || fe.Field != "duration" || !strings.Contains(fe.Msg, `variant "c" sent more than 3 requests`) {
		t.Errorf("past 3 requests: %v", errs)
	}

	o.msgs = nil
	d := NewBatcher("r", Limits{ModelRequests: 10, ModelEvents: 10, BatchEvents: 10}, o)
	d.OnlyDrawn = true
	for _, k := range []sim.Kind{sim.KindRequest, sim.KindIdle, sim.KindCall, sim.KindOpen} {
		d.Add("a", &sim.Event{Kind: k})
	}
	d.Flush()
	if len(o.msgs) != 1 || strings.Count(o.msgs[0], `"kind"`) != 2 || strings.Contains(o.msgs[0], `"request"`) || strings.Contains(o.msgs[0], `"idle"`) {
		t.Errorf("only drawn: %q", o.msgs)
	}
}

// The head and tail of an events message, with and without server_ms.
func TestEventsHeadTail(t *testing.T) {
	b := AppendEventsHead(nil, `i"d`, "v")
	if got, want := string(AppendEventsTail(b)), `{"type":"events","id":"i\"d","variant":"v","events":[]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	tail := string(AppendEventsTailAt(nil, time.UnixMicro(1_700_000_000_123_456)))
	if tail != `],"server_ms":1700000000123.456}` || len(tail) > len(EventsTailMax) {
		t.Errorf("tail %s", tail)
	}
}
