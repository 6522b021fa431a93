package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// pair starts a server whose handler accepts one Conn with lim and
// handles its messages with handle; it returns the server's Conn, the
// client's side, and a channel that gets Run's result.
func pair(t *testing.T, lim ConnLimits, handle func(*Conn, Message)) (*Conn, *websocket.Conn, <-chan error) {
	t.Helper()
	accepted := make(chan *Conn, 1)
	ended := make(chan error, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, ConnOptions{Limits: lim, Dropped: func(key string, n int) []byte {
			return []byte(fmt.Sprintf(`{"type":"dropped","id":%q,"count":%d}`, key, n))
		}})
		if err != nil {
			return
		}
		accepted <- c
		ended <- c.Run(func(m Message) {
			if handle != nil {
				handle(c, m)
			}
		})
	}))
	t.Cleanup(hs.Close)
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return <-accepted, ws, ended
}

func readAll(t *testing.T, ws *websocket.Conn) (msgs []string, err error) {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, string(data))
	}
}

// idle accepts one Conn whose Run is not called, so its writer does not
// run and its queue can be inspected; the test may call Run itself.
func idle(t *testing.T, lim ConnLimits) (*Conn, *websocket.Conn) {
	t.Helper()
	accepted := make(chan *Conn, 1)
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, ConnOptions{Limits: lim, Dropped: func(key string, n int) []byte {
			return []byte(fmt.Sprintf(`{"type":"dropped","id":%q,"count":%d}`, key, n))
		}})
		if err != nil {
			return
		}
		accepted <- c
		<-release
	}))
	t.Cleanup(func() {
		close(release)
		hs.Close()
	})
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return <-accepted, ws
}

// The queue is bounded: droppable messages give way, oldest first; a reply
// that must arrive and finds no room closes the connection as a slow
// reader, at once; an empty queue takes one message of any size.
func TestConnQueue(t *testing.T) {
	const size = 100 + QueueOverhead
	lim := ConnLimits{QueueBytes: 10 * size}
	msg := func(i int) []byte { return []byte(fmt.Sprintf("%-100d", i)) }
	c, ws := idle(t, lim)
	for i := range 15 {
		if !c.Queue(Msg{Data: msg(i), Droppable: true, Key: "run"}) {
			t.Fatal("a droppable message refused")
		}
	}
	if c.Queued() != 10*size || c.drops["run"] != 5 || string(c.queue[0].Data) != string(msg(5)) {
		t.Errorf("queued %d bytes, %d dropped, oldest %q", c.Queued(), c.drops["run"], c.queue[0].Data)
	}
	for i := range 10 {
		if !c.Send(msg(100 + i)) {
			t.Fatalf("reply %d refused while droppable messages could give way", i)
		}
	}
	if c.drops["run"] != 15 || c.Queued() != 10*size {
		t.Errorf("%d dropped, %d bytes queued", c.drops["run"], c.Queued())
	}
	// A droppable message that finds only replies is itself dropped.
	if !c.Queue(Msg{Data: msg(0), Droppable: true, Key: "run"}) || c.drops["run"] != 16 {
		t.Errorf("a droppable message into a full queue: %d dropped", c.drops["run"])
	}
	if c.Send(msg(200)) {
		t.Error("a reply beyond the bound was queued")
	}
	if !errors.Is(context.Cause(c.Context()), ErrSlowReader) {
		t.Errorf("cause %v, want ErrSlowReader", context.Cause(c.Context()))
	}
	ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ws.ReadMessage(); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Errorf("the slow reader's socket: %v, want closed", err)
	}

	big, _ := idle(t, ConnLimits{QueueBytes: 200})
	if !big.Send(make([]byte, 500)) {
		t.Error("an empty queue refused one big reply")
	}
	if big.Send([]byte("x")) {
		t.Error("a queue over its bound took another reply")
	}
}

// Droppable messages dropped to make room are reported before the next
// message, once per key with their count.
func TestConnDropReport(t *testing.T) {
	c, ws := idle(t, ConnLimits{QueueBytes: 3 * (10 + QueueOverhead)})
	for i := range 3 {
		c.Queue(Msg{Data: []byte(fmt.Sprintf("batch%5d", i)), Droppable: true, Key: "a"})
	}
	c.Send([]byte("control-01")) // drops batch 0
	c.Send([]byte("control-02")) // drops batch 1
	go c.Run(func(Message) {})
	got, err := readUntil(t, ws, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"type":"dropped","id":"a","count":2}`, "batch    2", "control-01", "control-02"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q, want %q", got, want)
	}
	c.Close(ErrServerClosing)
}

func readUntil(t *testing.T, ws *websocket.Conn, n int) ([]string, error) {
	t.Helper()
	var out []string
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for len(out) < n {
		_, data, err := ws.ReadMessage()
		if err != nil {
			return out, err
		}
		out = append(out, string(data))
	}
	return out, nil
}

// Messages are handed over whole up to MessageBytes; a bigger one is
// reported as TooLarge and the connection stays; past HardMessageBytes the
// connection is closed with 1009.
func TestConnMessageLimits(t *testing.T) {
	var mu sync.Mutex
	var got []Message
	_, ws, ended := pair(t, ConnLimits{MessageBytes: 100, HardMessageBytes: 1000}, func(c *Conn, m Message) {
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
		c.Send([]byte("ok"))
	})
	ws.WriteMessage(websocket.TextMessage, []byte("hello"))
	ws.WriteMessage(websocket.BinaryMessage, []byte{1, 2})
	ws.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("x", 500)))
	if _, err := readUntil(t, ws, 3); err != nil {
		t.Fatal(err)
	}
	ws.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("x", 2000)))
	_, err := readAll(t, ws)
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Errorf("after a message over the hard limit: %v", err)
	}
	<-ended
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || string(got[0].Data) != "hello" || !got[1].Binary || !got[2].TooLarge || got[2].Data != nil {
		t.Errorf("handled %+v", got)
	}
}

// Finish writes what is queued, then closes; the peer leaving ends Run;
// the parent context ending closes the connection.
func TestConnFinishAndParent(t *testing.T) {
	c, ws, ended := pair(t, ConnLimits{}, nil)
	for i := range 5 {
		c.Send([]byte(fmt.Sprint("last ", i)))
	}
	c.Finish(errors.New("done"))
	msgs, err := readAll(t, ws)
	if len(msgs) != 5 || !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Errorf("after Finish: %q, %v", msgs, err)
	}
	<-ended

	_, ws2, ended2 := pair(t, ConnLimits{}, nil)
	ws2.Close()
	select {
	case <-ended2:
	case <-time.After(10 * time.Second):
		t.Error("Run did not end when the peer left")
	}

	parent, cancel := context.WithCancelCause(context.Background())
	accepted := make(chan *Conn, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, ConnOptions{Parent: parent})
		if err == nil {
			accepted <- c
			c.Run(func(Message) {})
		}
	}))
	defer hs.Close()
	ws3, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws3.Close()
	c3 := <-accepted
	cancel(ErrServerClosing)
	if _, err := readAll(t, ws3); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Errorf("parent ended: %v", err)
	}
	if !errors.Is(context.Cause(c3.Context()), ErrServerClosing) {
		t.Errorf("cause %v", context.Cause(c3.Context()))
	}
}
