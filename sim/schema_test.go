package sim

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func fieldNames(fs []Field) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	slices.Sort(out)
	return out
}

func jsonKeys(t *testing.T, b []byte) []string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return slices.Sorted(maps.Keys(m))
}

func carries(f Field, k Kind) bool { return len(f.Kinds) == 0 || slices.Contains(f.Kinds, k.String()) }

// TestSchemaEventIsAppendJSON: for every kind, an event with each field its
// kind carries set writes exactly the schema's keys for that kind, in the
// full and the compact form. Adding a field to Event without its tags, or a
// key to AppendJSON without a field, fails here.
func TestSchemaEventIsAppendJSON(t *testing.T) {
	fields := NewSchema().Types["Event"]
	et := reflect.TypeFor[Event]()
	seen := map[string]bool{}
	for k := range Kind(len(kindNames)) {
		var e Event
		v := reflect.ValueOf(&e).Elem()
		var want []string
		for _, f := range fields {
			if !carries(f, k) {
				continue
			}
			want = append(want, f.Name)
			i := slices.IndexFunc(reflect.VisibleFields(et), func(sf reflect.StructField) bool { return jsonName(sf) == f.Name })
			if i < 0 {
				continue // a key no field holds (num_connects)
			}
			fv := v.Field(i)
			switch fv.Kind() {
			case reflect.Bool:
				fv.SetBool(true)
			case reflect.String:
				fv.SetString("x")
				if f.Enum != "" {
					fv.SetString(Enums()[f.Enum][0])
				}
			case reflect.Uint8: // Kind, and a chain's Hop
				fv.SetUint(uint64(k))
				if et.Field(i).Name != "Kind" {
					fv.SetUint(7)
				}
			default:
				fv.SetInt(7)
			}
		}
		slices.Sort(want)
		for _, b := range [][]byte{e.AppendJSON(nil), e.AppendCompactJSON(nil)} {
			got := jsonKeys(t, b)
			if !slices.Equal(got, want) {
				t.Errorf("%s event %s\nkeys   %q\nschema %q", k, b, got, want)
			}
			for _, g := range got {
				seen[g] = true
			}
		}
		if err := CheckEvent(&e); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	for _, f := range fields {
		if !seen[f.Name] {
			t.Errorf("schema key %s: no event writes it", f.Name)
		}
	}
}

// TestSchemaSummaryIsItsJSON: the schema lists the keys a Summary, a Stat
// and a Sample marshal to, and every Stat-typed key holds a Stat.
func TestSchemaSummaryIsItsJSON(t *testing.T) {
	sc := NewSchema()
	one := 1.0
	chain := Summary{FirstPortErrorS: &one, RecoveredS: &one, Chain: []string{"app"}, Hop: map[string]*HopSummary{"app": {}}, Tier: map[string]*TierSummary{"app": {}}}
	for name, v := range map[string]any{"Summary": chain, "Stat": Stat{}, "Sample": Sample{Hops: []HopSample{{}}},
		"HopSummary": HopSummary{}, "TierSummary": TierSummary{}, "HopSample": HopSample{}} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := jsonKeys(t, b), fieldNames(sc.Types[name]); !slices.Equal(got, want) {
			t.Errorf("%s JSON keys %q\nschema %q", name, got, want)
		}
	}
	for _, f := range sc.Types["Summary"] {
		if f.Type == "Stat" && f.Unit != "ms" {
			t.Errorf("summary %s: a Stat in %q", f.Name, f.Unit)
		}
		elem := strings.TrimSuffix(strings.TrimSuffix(f.Type, "[]"), "{}")
		if _, ok := sc.Types[elem]; !ok && !slices.Contains([]string{"integer", "number", "boolean", "string"}, elem) {
			t.Errorf("summary %s: type %s is not in the schema", f.Name, f.Type)
		}
	}
	for _, p := range sc.Phases {
		i := slices.IndexFunc(sc.Types["Event"], func(f Field) bool { return f.Name == p.JSON })
		if i < 0 || sc.Types["Event"][i].Unit != "ms" {
			t.Errorf("phase %s: no event key %s in ms", p.Key, p.JSON)
		}
	}
	// The schema is one JSON document.
	if _, err := json.Marshal(sc); err != nil {
		t.Fatal(err)
	}
}

// TestModelEventsFollowTheSchema: every event the model emits, over
// scenarios that produce every kind, carries only what its kind carries and
// only words of the vocabulary; a failed call's error is one of the kinds.
func TestModelEventsFollowTheSchema(t *testing.T) {
	ms := time.Millisecond
	race := Default() // the next request leaves within a round trip of the server's idle timer
	race.Requests, race.Reuse, race.RTT, race.KeepaliveTimeout = 3, ReuseProcess, 100*ms, time.Second
	race.ThinkTime, race.RetryOnRace = 950*ms, false
	dead := race // ... or after it: the server's FIN has arrived
	dead.ThinkTime, dead.Load, dead.Rate, dead.Arrival = 1200*ms, LoadOpen, 0.5, ArrivalPoisson
	ports := Default() // port exhaustion and tcp_tw_reuse
	ports.Requests, ports.Reuse, ports.PortRange, ports.Loopback, ports.Concurrency = 30, ReuseNone, PortRange{40000, 40003}, true, 2
	ports.ThinkTime = 300 * ms
	pool := Default() // a pool at its limit, recycled workers
	pool.Requests, pool.Reuse, pool.PoolMax, pool.PoolMaxIdle, pool.PoolFull = 30, ReusePool, 2, 1, PoolFullError
	pool.Concurrency, pool.Threads, pool.MaxRequests = 4, 4, 5
	scope := Default() // a request's handle, the server's request limit, 0-RTT
	scope.Reuse, scope.CallsPerRequest, scope.KeepaliveRequests, scope.EarlyData, scope.Cert = ReuseRequest, 3, 2, true, CertECDSAP256
	nginx := Default() // nginx's keepalive N
	nginx.Requests, nginx.Reuse, nginx.UpstreamKeepalive, nginx.Concurrency, nginx.Threads = 20, ReuseUpstreamKeepalive, 1, 3, 0
	closer := ports // the server closes first; TLS 1.2
	closer.Closer, closer.TLS, closer.PortRange = SideServer, TLS12, Default().PortRange
	idle := Default() // the client's timers
	idle.Requests, idle.Reuse, idle.MaxIdleAge, idle.ThinkTime = 3, ReuseProcess, 50*ms, 100*ms
	life := idle
	life.Requests, life.MaxIdleAge, life.MaxLifetime, life.ThinkTime = 6, 0, 150*ms, 60*ms
	cli := Default()
	cli.Mode, cli.Reuse = ModeCLI, ReuseProcess

	kinds := map[Kind]bool{}
	seen := map[string]bool{}
	stack := stackScenario(t) // a chain: its exchanges end with both sides closing
	stack.Duration, stack.Requests = 0, 400
	// A chain whose app server closes first, on 1000 ports: connect()
	// comes back to a port whose server TIME_WAIT a SYN takes over.
	over := stackScenario(t)
	set(t, &over, "port_range", "40000-40999", "tier.app.server_closes_first", 1.0, "tier.app.simultaneous_close", 0.0, "tier.app.reuse", "pool")
	over.Duration, over.Requests = 0, 3000
	for i, s := range []Scenario{race, dead, ports, pool, scope, nginx, closer, idle, life, cli, stack, over} {
		_, err := Run(context.Background(), s, Options{Seed: 1, Sink: func(e *Event) {
			kinds[e.Kind] = true
			seen[string(e.By)], seen[string(e.Reason)], seen[string(e.Handshake)] = true, true, true
			if err := CheckEvent(e); err != nil {
				t.Errorf("scenario %d: %v: %s", i+1, err, e.AppendJSON(nil))
			}
			k, ok := ErrorKindOf(e.Error)
			if e.Error != "" && !ok {
				t.Errorf("scenario %d: error %q is no ErrorKind", i+1, e.Error)
			}
			seen[string(k)] = true
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(kinds) != len(kindNames) {
		t.Errorf("kinds seen: %v", slices.Collect(maps.Keys(kinds)))
	}
	// Every word the model writes was written. The model records a
	// connection the server closed first by the server's close event only,
	// so its client-side reasons dead and reset stay inside it; reuse = none
	// closes with no-reuse before the call's handle ends; PHP's errors reject
	// a variant before it runs; the rest are the real run's own.
	notWritten := []string{string(ReasonDead), string(ReasonReset), string(ReasonEndOfCall),
		string(ReasonClosed), string(ReasonShutdown), string(ReasonWarmUp),
		string(ErrorShareEmpty), string(ErrorShareCookie), string(ErrorShareOption), string(ErrorShareType)}
	for _, typ := range []string{"Side", "CloseReason", "Handshake", "ErrorKind"} {
		for _, v := range Enums()[typ] {
			if seen[v] == slices.Contains(notWritten, v) {
				t.Errorf("%s %q: written %v", typ, v, seen[v])
			}
		}
	}
	bad := Event{Kind: KindIdle, By: "client"}
	if err := CheckEvent(&bad); err == nil {
		t.Error("an idle event with a side passed")
	}
	bad = Event{Kind: KindClose, By: "kernel"}
	if err := CheckEvent(&bad); err == nil {
		t.Error(`by = "kernel" passed`)
	}
}
