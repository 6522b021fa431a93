package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/pki"
)

// fullEvent sets every field of a sim.Event to a non-zero value of its
// own, by reflection, so a field added to sim.Event is covered at once.
func fullEvent(t *testing.T) sim.Event {
	t.Helper()
	var e sim.Event
	v := reflect.ValueOf(&e).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(int64(1001*(i+1) + 7)) // durations too: odd nanoseconds
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(uint64(i%5 + 1))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString("value of " + v.Type().Field(i).Name + " \"quoted\" ü")
		case reflect.Float32, reflect.Float64:
			f.SetFloat(float64(i) + 0.25)
		default:
			t.Fatalf("sim.Event.%s is a %s: teach fullEvent a non-zero value for it", v.Type().Field(i).Name, f.Type())
		}
	}
	return e
}

// roundTrip sends e through a Writer and a Reader, as a child process does.
func roundTrip(t *testing.T, e sim.Event) (sim.Event, string) {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Event(&e); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	line := buf.String()
	m, err := NewReader(&buf).Next()
	if err != nil {
		t.Fatal(err)
	}
	if m.Ev == nil {
		t.Fatalf("no event in %s", line)
	}
	return *m.Ev, line
}

// TestEventRoundTrip: every field of sim.Event crosses the wire unchanged,
// set all at once and one at a time (a key left out when zero must not
// take another field with it).
func TestEventRoundTrip(t *testing.T) {
	full := fullEvent(t)
	got, line := roundTrip(t, full)
	if !reflect.DeepEqual(got, full) {
		t.Errorf("round trip lost fields:\n sent %+v\n got  %+v\n line %s", full, got, line)
	}
	fv := reflect.ValueOf(full)
	for i := range fv.NumField() {
		var one sim.Event
		reflect.ValueOf(&one).Elem().Field(i).Set(fv.Field(i))
		if got, line := roundTrip(t, one); !reflect.DeepEqual(got, one) {
			t.Errorf("%s alone: sent %+v, got %+v (%s)", fv.Type().Field(i).Name, one, got, line)
		}
	}
	if _, line := roundTrip(t, sim.Event{}); line != `{"ev":{"k":0}}`+"\n" {
		t.Errorf("zero event: %s, want only k", line)
	}
}

// TestEventKeys holds the keys of today's fields to what other worker
// implementations read, and the values to their encoding (kind a number,
// times integer nanoseconds).
func TestEventKeys(t *testing.T) {
	e := sim.Event{Kind: sim.KindCall, At: 5 * time.Millisecond, Req: 2, Call: 3, Worker: 4, Conn: 5,
		NewConn: true, Reused: true, Retried: true, Start: 1, Queue: 2, NameLookup: 3, Connect: 4,
		AppConnect: 5, StartTransfer: 6, Total: 7, Handshake: "full", LocalPort: 40000, By: "client",
		Reason: "idle-timeout", Error: "x"}
	_, line := roundTrip(t, e)
	const want = `{"ev":{"k":0,"at":5000000,"r":2,"c":3,"w":4,"n":5,"nc":true,"ru":true,"rt":true,"s":1,"q":2,"nl":3,"co":4,"ac":5,"st":6,"t":7,"hs":"full","lp":40000,"by":"client","rs":"idle-timeout","er":"x"}}` + "\n"
	if line != want {
		t.Errorf("wire line\n got  %s want %s", line, want)
	}
	if k := EventKey("SomeNewField"); k != "some_new_field" {
		t.Errorf("default key %q", k)
	}
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMessageKeys holds the keys of the control messages.
func TestMessageKeys(t *testing.T) {
	for _, c := range []struct {
		m    Msg
		want string
	}{
		{Msg{Config: json.RawMessage(`{"a":1}`)}, `{"config":{"a":1}}`},
		{Msg{Progress: "p"}, `{"progress":"p"}`},
		{Msg{Result: &Report{}}, `{"result":{"time_wait_peak":0,"server_time_wait_peak":0,"open_peak":0,"components":null,"wall_s":0}}`},
		{Msg{Error: "e"}, `{"error":"e"}`},
		{Msg{Ready: true}, `{"ready":true}`},
		{Msg{Done: 3, Fail: true, End: 9}, `{"done":3,"fail":true,"end":9}`},
		{Msg{Job: &Job{Req: 1, T0: 2, At: 3, Exit: true, Linger: true}}, `{"job":{"req":1,"t0":2,"at":3,"exit":true,"linger":true}}`},
		{Msg{Job: &Job{Req: 1, T0: 2}}, `{"job":{"req":1,"t0":2}}`},
	} {
		if got := marshal(t, &c.m); got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
	}
}

// TestWorkerConfigKeys holds the worker's configuration to its documented
// keys, and the scenario in it to Go field names with durations in
// nanoseconds.
func TestWorkerConfigKeys(t *testing.T) {
	cfg := WorkerConfig{Setup: sim.SetupHTTP, Scenario: sim.Default(), Worker: 1, Upstream: "127.0.0.1:1", DNS: "127.0.0.1:2",
		Redis: "127.0.0.1:3", CAPEM: []byte("ca"), Warm: &pki.Certs{CAPEM: []byte("ca")}, Nice: true}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(marshal(t, cfg)), &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"ca", "dns", "nice", "redis", "scenario", "setup", "upstream", "warm", "worker"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	var scn map[string]any
	json.Unmarshal(doc["scenario"], &scn)
	if scn["RTT"] != float64(20*time.Millisecond) || scn["Reuse"] != "request" || scn["Workers"] != float64(1) {
		t.Errorf("scenario: RTT %v, Reuse %v, Workers %v", scn["RTT"], scn["Reuse"], scn["Workers"])
	}
	var back WorkerConfig
	if err := json.Unmarshal([]byte(marshal(t, cfg)), &back); err != nil || !reflect.DeepEqual(back, cfg) {
		t.Errorf("config round trip: %v\n%+v\n%+v", err, back, cfg)
	}
}

// TestReaderBounds: a line longer than MaxLine is an error, not memory.
func TestReaderBounds(t *testing.T) {
	long := strings.Repeat("x", MaxLine+1)
	if _, err := NewReader(strings.NewReader(long + "\n")).Next(); err == nil || err == io.EOF {
		t.Errorf("a %d-byte line: %v", len(long), err)
	}
	if _, err := NewReader(strings.NewReader("{not json\n")).Next(); err == nil || !strings.Contains(err.Error(), "bad message") {
		t.Errorf("bad line: %v", err)
	}
}

// BenchmarkEventLine encodes and decodes a call's event as the processes
// do, once each.
func BenchmarkEventLine(b *testing.B) {
	e := sim.Event{Kind: sim.KindCall, At: 5 * time.Millisecond, Req: 2, Call: 1, Worker: 1, Conn: 5, NewConn: true,
		Start: 1234567, NameLookup: 10000000, Connect: 30000000, StartTransfer: 51000000, Total: 51200000, LocalPort: 40000}
	b.ReportAllocs()
	for b.Loop() {
		line, err := encode(&Msg{Ev: &e})
		if err != nil {
			b.Fatal(err)
		}
		var m Msg
		if err := decode(line, &m); err != nil || *m.Ev != e {
			b.Fatal(err)
		}
	}
}

// TestStartUseUnknown: a run delay or steal the kernel does not keep is
// said to be unknown, in the line and in JSON, not given as 0.
func TestStartUseUnknown(t *testing.T) {
	wait, steal := 16.8, 0.0
	known := &StartUse{CPUMS: 40, Faults: 3, RunDelayMS: &wait, StealMS: &steal}
	if s := known.String(); !strings.Contains(s, "waited 16.8 ms for a CPU") || !strings.Contains(s, "took 0 ms (steal)") {
		t.Errorf("known: %q", s)
	}
	unknown := &StartUse{CPUMS: 40, Faults: 3}
	s := unknown.String()
	if strings.Contains(s, " ms for a CPU") || strings.Contains(s, "(steal)") || strings.Count(s, "not known") != 2 {
		t.Errorf("unknown: %q", s)
	}
	b, err := json.Marshal(unknown)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "run_delay_ms") || strings.Contains(string(b), "steal_ms") {
		t.Errorf("unknown in JSON: %s", b)
	}
	b, _ = json.Marshal(known)
	if !strings.Contains(string(b), `"steal_ms":0`) {
		t.Errorf("a known 0 steal left out of JSON: %s", b)
	}
}
