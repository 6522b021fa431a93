package server

import (
	"context"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// A client is one WebSocket connection. Its read pump (the HTTP handler's
// goroutine) decodes messages and starts runs; its write pump is the only
// goroutine that writes to the connection. Everything else (runs, the hub)
// hands messages to the write pump through send, which never blocks: the
// queue of event batches is bounded, and when it is full the oldest batch is
// dropped and counted (a `dropped` message tells the page). Control
// messages (started, stats, done, error…) are never dropped; they are few per
// run.
type client struct {
	s      *Server
	conn   *websocket.Conn
	ctx    context.Context // cancelled when the client leaves or the server stops
	cancel context.CancelFunc

	mu         sync.Mutex
	queue      []outMsg
	batchBytes int            // bytes of event batches in queue
	dropped    map[string]int // run id → batches dropped, not yet reported
	dropOrder  []string       // run ids in the order their first drop happened
	notify     chan struct{}  // cap 1: the queue has something
	space      chan struct{}  // cap 1: the write pump took a batch
	runs       map[string]*run
	modelTurn  chan struct{} // cap 1: held by the model run of c computing
}

type outMsg struct {
	data  []byte
	run   string // run id, for event batches
	batch bool   // an event batch: may be dropped
}

func newClient(s *Server, conn *websocket.Conn) *client {
	ctx, cancel := context.WithCancel(s.ctx)
	return &client{
		s: s, conn: conn, ctx: ctx, cancel: cancel,
		dropped: map[string]int{},
		notify:  make(chan struct{}, 1),
		space:   make(chan struct{}, 1),
		runs:    map[string]*run{},

		modelTurn: make(chan struct{}, 1),
	}
}

// send queues a control message. It never blocks.
func (c *client) send(data []byte) {
	c.mu.Lock()
	if c.ctx.Err() == nil {
		c.queue = append(c.queue, outMsg{data: data})
	}
	c.mu.Unlock()
	c.wake()
}

// sendBatch closes an event batch of run id (appendBatchTail: the time it
// enters the queue) and queues it. A model run passes its
// patience in wait: while the queue holds more than ModelQueue bytes of
// batches it waits for the write pump to make room, for at most *wait in
// total (decreased by the time spent), so a client that reads a bit slower
// than the model computes slows the model down instead of losing events,
// and its batches stay fresh. A real run passes no patience (a measurement
// cannot pause). Past the patience, or beyond ClientBuffer bytes, the
// oldest batches are dropped.
func (c *client) sendBatch(id string, data []byte, wait *time.Duration) {
	lim := c.s.limits
	c.mu.Lock()
	for c.batchBytes > 0 && c.batchBytes+len(data) > lim.ModelQueue && *wait > 0 && c.ctx.Err() == nil {
		c.mu.Unlock()
		start := time.Now()
		t := time.NewTimer(*wait)
		select {
		case <-c.space:
		case <-t.C:
		case <-c.ctx.Done():
		}
		t.Stop()
		*wait -= time.Since(start)
		c.mu.Lock()
	}
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		putBuf(data)
		return
	}
	data = appendBatchTail(data, time.Now())
	for c.batchBytes > 0 && c.batchBytes+len(data) > lim.ClientBuffer {
		c.dropOldestLocked()
	}
	c.queue = append(c.queue, outMsg{data: data, run: id, batch: true})
	c.batchBytes += len(data)
	c.mu.Unlock()
	c.wake()
}

// waitDrained waits until the write pump has taken every queued batch, for
// at most *wait (decreased by the time spent).
func (c *client) waitDrained(wait *time.Duration) {
	for *wait > 0 {
		c.mu.Lock()
		empty := c.batchBytes == 0
		c.mu.Unlock()
		if empty || c.ctx.Err() != nil {
			return
		}
		start := time.Now()
		t := time.NewTimer(*wait)
		select {
		case <-c.space:
		case <-t.C:
		case <-c.ctx.Done():
		}
		t.Stop()
		*wait -= time.Since(start)
	}
}

func (c *client) dropOldestLocked() {
	for i, m := range c.queue {
		if !m.batch {
			continue
		}
		c.batchBytes -= len(m.data)
		if c.dropped[m.run] == 0 {
			c.dropOrder = append(c.dropOrder, m.run)
		}
		c.dropped[m.run]++
		putBuf(m.data)
		c.queue = append(c.queue[:i], c.queue[i+1:]...)
		return
	}
}

func (c *client) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// next takes the next message to write: a `dropped` report first, when
// batches were dropped since the last one.
func (c *client) next() (outMsg, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.dropOrder) > 0 {
		id := c.dropOrder[0]
		c.dropOrder = c.dropOrder[1:]
		n := c.dropped[id]
		delete(c.dropped, id)
		return outMsg{data: droppedMsg(id, n)}, true
	}
	if len(c.queue) == 0 {
		return outMsg{}, false
	}
	m := c.queue[0]
	c.queue[0] = outMsg{}
	c.queue = c.queue[1:]
	if m.batch {
		c.batchBytes -= len(m.data)
		select {
		case c.space <- struct{}{}:
		default:
		}
	}
	return m, true
}

// writePump writes queued messages and pings until the client's context
// ends, then says goodbye and closes the connection (which ends the read
// pump).
func (c *client) writePump() {
	ping := time.NewTicker(c.s.limits.PingPeriod)
	defer func() {
		ping.Stop()
		c.conn.Close()
	}()
	write := func(typ int, data []byte) error {
		c.conn.SetWriteDeadline(time.Now().Add(c.s.limits.WriteWait))
		return c.conn.WriteMessage(typ, data)
	}
	for {
		select {
		case <-c.notify:
			for {
				m, ok := c.next()
				if !ok {
					break
				}
				err := write(websocket.TextMessage, m.data)
				if m.batch {
					putBuf(m.data)
				}
				if err != nil {
					c.cancel()
					return
				}
			}
		case <-ping.C:
			if err := write(websocket.PingMessage, nil); err != nil {
				c.cancel()
				return
			}
		case <-c.ctx.Done():
			c.conn.SetWriteDeadline(time.Now().Add(time.Second))
			c.conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""))
			return
		}
	}
}

// readPump reads client messages until the connection fails or closes.
func (c *client) readPump() {
	lim := c.s.limits
	c.conn.SetReadLimit(lim.HardMessageBytes)
	c.conn.SetReadDeadline(time.Now().Add(lim.PongWait))
	c.conn.SetPongHandler(func(string) error {
		c.conn.SetReadDeadline(time.Now().Add(lim.PongWait))
		return nil
	})
	for {
		typ, r, err := c.conn.NextReader()
		if err != nil {
			return
		}
		c.conn.SetReadDeadline(time.Now().Add(lim.PongWait))
		data, err := io.ReadAll(io.LimitReader(r, int64(lim.MessageBytes)+1))
		if err != nil {
			return
		}
		if len(data) > lim.MessageBytes {
			// Read the rest, up to the hard limit past which gorilla
			// closes the connection (close code 1009).
			if _, err := io.Copy(io.Discard, r); err != nil {
				return
			}
			c.send(errorMsg("", "", "message too large: at most "+kib(lim.MessageBytes)+" per message"))
			continue
		}
		if typ != websocket.TextMessage {
			c.send(errorMsg("", "", "want JSON text frames, got a binary frame"))
			continue
		}
		c.handle(data)
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func getBuf() []byte { return (*bufPool.Get().(*[]byte))[:0] }

func putBuf(b []byte) {
	if cap(b) > 1<<20 {
		return
	}
	b = b[:0]
	bufPool.Put(&b)
}

// kib formats a byte count for messages: "16 KiB".
func kib(n int) string {
	if n%1024 == 0 {
		return strconv.Itoa(n/1024) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
