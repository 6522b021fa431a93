package server

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// A client that floods cancels with a 16 KB id (the message just under the
// 16 KiB limit, so it is decoded), and never reads, is dropped: its
// messages over the socket's rate are refused, and past Strikes of them
// the socket is closed. The server's memory stays bounded meanwhile: no
// reply echoes the id, and every reply counts against the socket's bounded
// queue (web.TestConnQueue: a queue full of replies closes the socket).
func TestUnreadRepliesAreBounded(t *testing.T) {
	s := newTestServer(t, Options{})
	c, _, err := websocket.DefaultDialer.Dial(s.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	msg := []byte(`{"type":"cancel","id":"` + strings.Repeat("x", 16000) + `"}`)
	sent := 0
	var werr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); sent++ {
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if werr = c.WriteMessage(websocket.TextMessage, msg); werr != nil {
			break
		}
	}
	close(stop)
	<-sampled
	growth := int64(peak.Load()) - int64(before.HeapAlloc)
	t.Logf("%d messages (%d MB) sent before the server dropped the client (%v); heap grew by at most %.1f MB",
		sent, sent*len(msg)>>20, werr, float64(growth)/(1<<20))
	if werr == nil {
		t.Errorf("a client that never reads its replies was not dropped after %d messages", sent)
	}
	if growth > 64<<20 {
		t.Errorf("the server's heap grew by %.0f MB while a client did not read", float64(growth)/(1<<20))
	}
	// The server still serves others.
	fast := s.dial(t)
	send(t, fast, runReq{Type: "run", ID: "ok", Lab: "php-persistent-share", Block: "across-requests"})
	until(t, fast, "ok", "done")
}

// Ten clients that start the biggest model runs and never read do not
// slow down a client that reads: their runs pause (giving back their model
// slots) once their queues are full, so another page's ten-request run
// gets a slot at once, and no slot stays held. The bound is a liveness check, far above the few
// milliseconds such a run takes alone (BenchmarkFirstEvent measures).
func TestSilentClientsDoNotDelayOthers(t *testing.T) {
	s := newTestServer(t, Options{})
	began := time.Now()
	for i := range 10 {
		c, _, err := smallBufferDialer.Dial(s.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		send(t, c, runReq{Type: "run", ID: fmt.Sprint(i), Lab: "php-persistent-share", Block: "across-requests",
			Params: map[string]any{"requests": 200000}})
	}
	// The silent clients' runs compute until their queues are full, then
	// pause without a slot (on the code before this test, they held the
	// slots for seconds).
	for deadline := time.Now().Add(5 * time.Second); len(s.modelSem) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("slots free (%d held) after %v", len(s.modelSem), time.Since(began))
	fast := s.dial(t)
	for i := range 3 {
		id := fmt.Sprint("f", i)
		start := time.Now()
		send(t, fast, runReq{Type: "run", ID: id, Lab: "php-persistent-share", Block: "across-requests"})
		until(t, fast, id, "done")
		t.Logf("run %d: %v", i, time.Since(start))
		if d := time.Since(start); d > time.Second {
			t.Errorf("run %d took %s beside 10 silent clients", i, d)
		}
	}
	// The fast client's last run gives its slot back just after done.
	deadline := time.Now().Add(5 * time.Second)
	for len(s.modelSem) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(s.modelSem); n != 0 {
		t.Errorf("%d model slots held by clients that do not read", n)
	}
}

// A socket may send MessageBurst messages at once and MessageRate a second
// after that; the others are refused (an error for the first and every
// tenth), and after Strikes refusals the socket is closed.
func TestMessageRate(t *testing.T) {
	s := newTestServer(t, Options{Limits: Limits{MessageRate: 1, MessageBurst: 5, Strikes: 30}})
	c := s.dial(t)
	for range 40 {
		// The server may close the socket before the last ones are sent.
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"cancel","id":"x"}`)); err != nil {
			break
		}
	}
	var answered, refused int
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var m msg
		if err := c.ReadJSON(&m); err != nil {
			if strings.Contains(err.Error(), "timeout") {
				t.Fatal("the socket stayed open")
			}
			break
		}
		switch {
		case strings.Contains(m.Message, "no run with id"):
			answered++
		case strings.Contains(m.Message, "too many messages"):
			refused++
		case strings.Contains(m.Message, "too many refused messages"):
		default:
			t.Errorf("unexpected %+v", m)
		}
	}
	if answered < 5 || answered > 6 || refused != 3 { // refusals 1, 11 and 21 are told; the 30th closes
		t.Errorf("%d answered, %d refusals told", answered, refused)
	}
}
