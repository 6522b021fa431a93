package web

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// ConnLimits bound one WebSocket connection. Zero fields take
// DefaultConnLimits' values.
type ConnLimits struct {
	// MessageBytes is the largest message handed to the handler whole; a
	// bigger one is read, discarded and reported as Message.TooLarge.
	MessageBytes int
	// HardMessageBytes: past this a message closes the connection (close
	// code 1009). At least MessageBytes.
	HardMessageBytes int64
	// QueueBytes bounds the replies waiting for the peer, counted with
	// QueueOverhead bytes per message. Past it, the oldest droppable
	// messages go first; when only replies that must arrive are left, the
	// peer is not reading and the connection is closed (ErrSlowReader).
	QueueBytes int
	// PingPeriod: a ping every so often; PongWait: a connection that sends
	// nothing (not even a pong) for this long is closed.
	PingPeriod time.Duration
	PongWait   time.Duration
	// WriteWait: a write that takes longer closes the connection.
	WriteWait time.Duration
	// SocketBuffer is the kernel's send buffer (SO_SNDBUF; Linux doubles
	// it): small, so a peer that falls behind meets the bounded queue soon
	// rather than megabytes of socket buffer that only delay.
	SocketBuffer int
}

// DefaultConnLimits are the limits of a connection whose ConnLimits fields
// are zero.
var DefaultConnLimits = ConnLimits{
	MessageBytes:     16 << 10,
	HardMessageBytes: 1 << 20,
	QueueBytes:       1 << 20,
	PingPeriod:       30 * time.Second,
	PongWait:         60 * time.Second,
	WriteWait:        10 * time.Second,
	SocketBuffer:     128 << 10,
}

// QueueOverhead is what one queued message costs besides its bytes, so a
// flood of tiny replies meets the bound too.
const QueueOverhead = 64

// WithDefaults fills the zero fields of l from DefaultConnLimits.
func (l ConnLimits) WithDefaults() ConnLimits {
	d := DefaultConnLimits
	if l.MessageBytes <= 0 {
		l.MessageBytes = d.MessageBytes
	}
	if l.HardMessageBytes <= 0 {
		l.HardMessageBytes = max(d.HardMessageBytes, int64(l.MessageBytes))
	}
	l.HardMessageBytes = max(l.HardMessageBytes, int64(l.MessageBytes))
	if l.QueueBytes <= 0 {
		l.QueueBytes = d.QueueBytes
	}
	if l.PingPeriod <= 0 {
		l.PingPeriod = d.PingPeriod
	}
	if l.PongWait <= 0 {
		l.PongWait = d.PongWait
	}
	if l.WriteWait <= 0 {
		l.WriteWait = d.WriteWait
	}
	if l.SocketBuffer <= 0 {
		l.SocketBuffer = d.SocketBuffer
	}
	return l
}

// ErrSlowReader is why a connection whose queue of replies is full was
// closed.
var ErrSlowReader = errors.New("the peer does not read its replies: its queue is full")

// ErrServerClosing is the cause of connections closed because the server
// stops.
var ErrServerClosing = errors.New("the server is stopping")

// A Msg is one reply to queue.
type Msg struct {
	Data []byte
	// Droppable messages (event batches) may be dropped, oldest first, to
	// make room; Key groups them for the report (a run's id).
	Droppable bool
	Key       string
	// Pooled: Data came from Buffer and goes back to the pool once written
	// or dropped.
	Pooled bool
}

// A Message is one message read from the peer.
type Message struct {
	Data     []byte
	Binary   bool // a binary frame (Data holds it)
	TooLarge bool // over MessageBytes: Data is nil
}

// A Conn is one WebSocket connection, shaped like gorilla/websocket's chat
// example: Run's goroutine is the read pump, one writer goroutine is the
// only one that writes, and everything else hands it replies through
// Send or Queue, which never block. The queue is bounded (QueueBytes):
// droppable messages give way first, and a peer that does not take its
// other replies is dropped, never allowed to hold memory or block anyone.
type Conn struct {
	ws      *websocket.Conn
	lim     ConnLimits
	ctx     context.Context
	cancel  context.CancelCauseFunc
	dropped func(key string, n int) []byte

	mu        sync.Mutex
	queue     []Msg
	queued    int            // bytes in queue, with QueueOverhead each
	drops     map[string]int // key → droppable messages dropped, not yet reported
	dropOrder []string
	finish    bool          // Finish: write what is queued, then close
	taken     chan struct{} // closed (and replaced) when the writer takes a message
	notify    chan struct{} // cap 1: the queue has something
}

// ConnOptions configure Accept.
type ConnOptions struct {
	Limits ConnLimits
	// Parent ends the connection when it ends (the server's lifetime).
	Parent context.Context
	// Dropped builds the report sent before the next message when
	// droppable messages of key were dropped (nil: no report).
	Dropped func(key string, n int) []byte
}

var upgrader = websocket.Upgrader{
	ReadBufferSize:   4096,
	WriteBufferSize:  32 << 10,
	WriteBufferPool:  &sync.Pool{},
	HandshakeTimeout: 10 * time.Second,
	CheckOrigin:      SameOrigin,
}

// Accept upgrades the request to a WebSocket, refusing (403) an Origin
// other than the page's own (SameOrigin). On error the response has been
// written.
func Accept(w http.ResponseWriter, r *http.Request, opt ConnOptions) (*Conn, error) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil, err
	}
	return newConn(ws, opt), nil
}

func newConn(ws *websocket.Conn, opt ConnOptions) *Conn {
	parent := opt.Parent
	if parent == nil {
		parent = context.Background()
	}
	c := &Conn{ws: ws, lim: opt.Limits.WithDefaults(), dropped: opt.Dropped,
		drops: map[string]int{}, taken: make(chan struct{}), notify: make(chan struct{}, 1)}
	c.ctx, c.cancel = context.WithCancelCause(parent)
	if tc, ok := ws.NetConn().(*net.TCPConn); ok {
		tc.SetWriteBuffer(c.lim.SocketBuffer)
	}
	// Once the connection ends, a write still waiting on a peer that does
	// not read gets closeGrace, not WriteWait, so the server's shutdown
	// does not wait on it.
	context.AfterFunc(c.ctx, func() { ws.NetConn().SetWriteDeadline(time.Now().Add(closeGrace)) })
	return c
}

// closeGrace is how long the writer may still write once the connection
// ends: the replies Finish leaves, a close frame.
const closeGrace = time.Second

// Context ends when the connection does; context.Cause says why.
func (c *Conn) Context() context.Context { return c.ctx }

// Close ends the connection now: queued replies are discarded, the writer
// sends a close frame and closes the socket, the read pump ends. A peer
// closed for not reading (ErrSlowReader) gets no close frame: its socket
// is closed at once, which also ends a write that waits on it.
func (c *Conn) Close(cause error) {
	c.cancel(cause)
	if errors.Is(cause, ErrSlowReader) {
		c.ws.NetConn().Close()
	}
}

// Finish ends the connection after the replies already queued are written
// (within a second).
func (c *Conn) Finish(cause error) {
	c.mu.Lock()
	c.finish = true
	c.mu.Unlock()
	c.cancel(cause)
}

// Send queues a reply that must arrive. It never blocks; false when the
// connection is closed or was just closed because its queue is full.
func (c *Conn) Send(data []byte) bool { return c.Queue(Msg{Data: data}) }

// Queue queues m (see Msg). It never blocks. A droppable message that finds
// the queue full of replies that must arrive is itself dropped; any other
// message then closes the connection (ErrSlowReader) and Queue returns
// false. An empty queue takes any one message, however big.
func (c *Conn) Queue(m Msg) bool {
	size := len(m.Data) + QueueOverhead
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		recycle(m)
		return false
	}
	for c.queued > 0 && c.queued+size > c.lim.QueueBytes && c.dropOldestLocked() {
	}
	if c.queued > 0 && c.queued+size > c.lim.QueueBytes {
		if m.Droppable {
			c.countDropLocked(m.Key)
			c.mu.Unlock()
			recycle(m)
			c.wake()
			return true
		}
		c.mu.Unlock()
		recycle(m)
		c.Close(ErrSlowReader)
		return false
	}
	c.queue = append(c.queue, m)
	c.queued += size

	c.mu.Unlock()
	c.wake()
	return true
}

// Queued is the number of bytes waiting for the peer (QueueOverhead
// included).
func (c *Conn) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queued
}

// Taken returns a channel closed the next time the writer takes a message
// from the queue: wait on it, then look at Queued again.
func (c *Conn) Taken() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.taken
}

func (c *Conn) dropOldestLocked() bool {
	for i, m := range c.queue {
		if !m.Droppable {
			continue
		}
		c.queued -= len(m.Data) + QueueOverhead
		c.countDropLocked(m.Key)
		recycle(m)
		c.queue = append(c.queue[:i], c.queue[i+1:]...)
		return true
	}
	return false
}

func (c *Conn) countDropLocked(key string) {
	if c.dropped == nil {
		return
	}
	if c.drops[key] == 0 {
		c.dropOrder = append(c.dropOrder, key)
	}
	c.drops[key]++
}

func (c *Conn) wake() {
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// next takes the next message to write: a drop report first, when
// droppable messages were dropped since the last one.
func (c *Conn) next() (Msg, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.dropOrder) > 0 {
		key := c.dropOrder[0]
		c.dropOrder = c.dropOrder[1:]
		n := c.drops[key]
		delete(c.drops, key)
		return Msg{Data: c.dropped(key, n)}, true
	}
	if len(c.queue) == 0 || (c.ctx.Err() != nil && !c.finish) {
		return Msg{}, false
	}
	m := c.queue[0]
	c.queue[0] = Msg{}
	c.queue = c.queue[1:]
	c.queued -= len(m.Data) + QueueOverhead
	close(c.taken)
	c.taken = make(chan struct{})
	return m, true
}

// Run is the read pump: it hands each message to handle until the peer
// leaves, a read fails or the connection is closed, then waits for the
// writer to end and returns the cause. Call it once, from the HTTP
// handler's goroutine; handle runs on it.
func (c *Conn) Run(handle func(Message)) error {
	lim := c.lim
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writePump()
	}()
	c.ws.SetReadLimit(lim.HardMessageBytes)
	c.ws.SetReadDeadline(time.Now().Add(lim.PongWait))
	c.ws.SetPongHandler(func(string) error {
		c.ws.SetReadDeadline(time.Now().Add(lim.PongWait))
		return nil
	})
	var err error
	for c.ctx.Err() == nil {
		var typ int
		var r io.Reader
		if typ, r, err = c.ws.NextReader(); err != nil {
			break
		}
		c.ws.SetReadDeadline(time.Now().Add(lim.PongWait))
		var data []byte
		if data, err = io.ReadAll(io.LimitReader(r, int64(lim.MessageBytes)+1)); err != nil {
			break
		}
		if len(data) > lim.MessageBytes {
			// Read the rest, up to the hard limit past which gorilla
			// closes the connection (close code 1009).
			if _, err = io.Copy(io.Discard, r); err != nil {
				break
			}
			handle(Message{TooLarge: true, Binary: typ == websocket.BinaryMessage})
			continue
		}
		handle(Message{Data: data, Binary: typ == websocket.BinaryMessage})
	}
	if err == nil {
		err = io.EOF
	}
	c.cancel(err)
	<-writerDone
	return context.Cause(c.ctx)
}

// writePump writes queued messages and pings until the connection's
// context ends, then sends a close frame and closes the socket (which ends
// the read pump).
func (c *Conn) writePump() {
	ping := time.NewTicker(c.lim.PingPeriod)
	defer func() {
		ping.Stop()
		c.ws.Close()
		c.mu.Lock()
		for _, m := range c.queue {
			recycle(m)
		}
		c.queue, c.queued = nil, 0
		c.mu.Unlock()
	}()
	write := func(typ int, data []byte, deadline time.Time) error {
		if end := time.Now().Add(closeGrace); c.ctx.Err() != nil && end.Before(deadline) {
			deadline = end
		}
		c.ws.SetWriteDeadline(deadline)
		return c.ws.WriteMessage(typ, data)
	}
	for {
		select {
		case <-c.notify:
			for {
				m, ok := c.next()
				if !ok {
					break
				}
				err := write(websocket.TextMessage, m.Data, time.Now().Add(c.lim.WriteWait))
				recycle(m)
				if err != nil {
					c.cancel(err)
					return
				}
			}
		case <-ping.C:
			if err := write(websocket.PingMessage, nil, time.Now().Add(c.lim.WriteWait)); err != nil {
				c.cancel(err)
				return
			}
		case <-c.ctx.Done():
			deadline := time.Now().Add(closeGrace)
			c.mu.Lock()
			finish := c.finish
			c.mu.Unlock()
			for finish {
				m, ok := c.next()
				if !ok {
					break
				}
				err := write(websocket.TextMessage, m.Data, deadline)
				recycle(m)
				if err != nil {
					return
				}
			}
			cause := context.Cause(c.ctx)
			if _, ok := cause.(*websocket.CloseError); ok || errors.Is(cause, io.EOF) || errors.Is(cause, ErrSlowReader) {
				return // the peer closed, left or does not read: nothing to say
			}
			write(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), deadline)
			return
		}
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// Buffer returns an empty buffer from a pool, for a message queued with
// Pooled set.
func Buffer() []byte { return (*bufPool.Get().(*[]byte))[:0] }

// Recycle returns a buffer from Buffer to the pool.
func Recycle(b []byte) {
	if cap(b) > 1<<20 {
		return
	}
	b = b[:0]
	bufPool.Put(&b)
}

func recycle(m Msg) {
	if m.Pooled {
		Recycle(m.Data)
	}
}
