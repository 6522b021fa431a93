package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The speed targets of sim serve, as benchmarks (go test -run '^$' -bench .
// ./sim/server). Each reports its own metric next to ns/op:
//   BenchmarkFirstEvent          first-event-ms (p50, p90): ≤ 150 ms
//   BenchmarkEventsToOneClient   events/s: ≥ 50,000
//   BenchmarkConcurrentClients   delay-p50-ms, delay-p99-ms over 200 clients: p99 ≤ 100 ms
//                                (the "read" case; "decode" adds the clients' own JSON decoding)

// benchRun sends a run and reads to its done, returning the time to the
// first events message, the events received and the batches' delivery
// delays (receipt minus the server's server_ms).
// With parse false the client only reads each message's type, event
// count and server_ms, as cheaply as it can: the measure is then the
// server's, not this client's JSON decoder's.
func benchRun(c *websocket.Conn, req runReq, parse bool) (first time.Duration, events int, delays []time.Duration, err error) {
	data, _ := json.Marshal(req)
	start := time.Now()
	if err := c.WriteMessage(websocket.TextMessage, data); err != nil {
		return 0, 0, nil, err
	}
	var m struct {
		Type   string            `json:"type"`
		Events []json.RawMessage `json:"events"`
	}
	for {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, msg, err := c.ReadMessage()
		if err != nil {
			return 0, 0, nil, err
		}
		now := time.Now()
		m.Events = m.Events[:0]
		n := 0
		if !parse && bytes.HasPrefix(msg, []byte(`{"type":"events"`)) {
			m.Type = "events"
			n = bytes.Count(msg, []byte(`{"kind":`))
		} else if err := json.Unmarshal(msg, &m); err != nil {
			return 0, 0, nil, err
		} else {
			n = len(m.Events)
		}
		switch m.Type {
		case "events":
			if first == 0 {
				first = now.Sub(start)
			}
			events += n
			at, err := serverTime(msg)
			if err != nil {
				return 0, 0, nil, err
			}
			delays = append(delays, now.Sub(at))
		case "error":
			return 0, 0, nil, fmt.Errorf("error: %s", msg)
		case "done":
			return first, events, delays, nil
		}
	}
}

func serverTime(msg []byte) (time.Time, error) {
	i := bytes.LastIndex(msg, []byte(`"server_ms":`))
	if i < 0 {
		return time.Time{}, fmt.Errorf("no server_ms in %.200s", msg)
	}
	s := msg[i+len(`"server_ms":`):]
	if j := bytes.IndexByte(s, '}'); j >= 0 {
		s = s[:j]
	}
	ms, err := strconv.ParseFloat(string(s), 64)
	return time.UnixMicro(int64(ms * 1000)), err
}

func quantile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(p*float64(len(s)-1))]) / 1e6
}

// Time from sending `run` to the first events message, for the lab block
// with the most requests per variant (idle-timeouts "race", 3 × 20,000).
func BenchmarkFirstEvent(b *testing.B) {
	s := newTestServer(b, Options{})
	c := s.dial(b)
	var firsts []time.Duration
	for i := 0; b.Loop(); i++ {
		first, _, _, err := benchRun(c, runReq{Type: "run", ID: fmt.Sprint(i), Lab: "idle-timeouts", Block: "race"}, true)
		if err != nil {
			b.Fatal(err)
		}
		firsts = append(firsts, first)
	}
	b.ReportMetric(quantile(firsts, 0.5), "first-event-ms-p50")
	b.ReportMetric(quantile(firsts, 0.9), "first-event-ms-p90")
}

// Events delivered to one page per second, from run to done, the page
// decoding every message: 2 variants × 20,000 events (the per-variant
// cap) of 20,000 requests each.
func BenchmarkEventsToOneClient(b *testing.B) {
	s := newTestServer(b, Options{})
	c := s.dial(b)
	total := 0
	var elapsed time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		_, n, _, err := benchRun(c, runReq{Type: "run", ID: fmt.Sprint(i), Lab: "php-persistent-share", Block: "across-requests",
			Params: map[string]any{"requests": 20000}}, true)
		if err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		total += n
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(total)/float64(b.N), "events/run")
}

// 200 pages run a block at the same moment (a classroom pressing Run):
// the delay between the server closing a batch and the page receiving it,
// over every batch of every client. The clients share the 2 cores with the
// server: "read" clients only find each message's type, event count and
// server_ms (the server's delivery, as browsers on other machines would
// see it); "decode" clients also decode every message with encoding/json,
// which takes a large share of the same cores.
func BenchmarkConcurrentClients(b *testing.B) {
	for _, mode := range []struct {
		name  string
		parse bool
	}{{"read", false}, {"decode", true}} {
		b.Run(mode.name, func(b *testing.B) { benchClients(b, 200, mode.parse) })
	}
}

func benchClients(b *testing.B, clients int, parse bool) {
	s := newTestServer(b, Options{})
	conns := make([]*websocket.Conn, clients)
	for i := range conns {
		conns[i] = s.dial(b)
	}
	var all, firsts []time.Duration
	var failed error
	events := 0
	var elapsed time.Duration
	for i := 0; b.Loop(); i++ {
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for j, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				first, n, d, err := benchRun(c, runReq{Type: "run", ID: fmt.Sprint(i, "-", j), Lab: "php-persistent-share", Block: "across-requests",
					Params: map[string]any{"requests": 200}}, parse)
				mu.Lock()
				if err != nil {
					failed = err
				}
				all = append(all, d...)
				firsts = append(firsts, first)
				events += n
				mu.Unlock()
			}()
		}
		wg.Wait()
		elapsed += time.Since(start)
		if failed != nil {
			b.Fatal(failed)
		}
	}
	b.ReportMetric(quantile(all, 0.5), "delay-p50-ms")
	b.ReportMetric(quantile(all, 0.99), "delay-p99-ms")
	b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	b.ReportMetric(quantile(firsts, 0.5), "first-event-ms-p50")
	b.ReportMetric(quantile(firsts, 0.99), "first-event-ms-p99")
}
