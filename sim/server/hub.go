package server

import (
	"context"

	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/web"
)

// The hub is the one goroutine that owns the set of clients and the queue of
// real runs, in the shape of gorilla/websocket's chat example: others talk
// to it only through its channels. It never waits on a client: messages it
// sends (queue positions) go through client.send, which does not block.
type hub struct {
	register   chan *client
	unregister chan *client
	enqueue    chan *realJob
	leave      chan *realJob // a real job finished, or gave up waiting
	stop       chan struct{}
	done       chan struct{}

	clients map[*client]bool
	waiting []*realJob
	running *realJob
}

// A realJob is one real run waiting for, or holding, the server's single
// real-run slot.
type realJob struct {
	c     *client
	ctx   context.Context // the run's context
	id    string
	start chan struct{} // closed by the hub when the job may run
	pos   int           // last position told to the client
}

func newHub() *hub {
	return &hub{
		register:   make(chan *client),
		unregister: make(chan *client),
		enqueue:    make(chan *realJob),
		leave:      make(chan *realJob),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		clients:    map[*client]bool{},
	}
}

func (h *hub) run() {
	defer close(h.done)
	for {
		select {
		case c := <-h.register:
			h.clients[c] = true
		case c := <-h.unregister:
			delete(h.clients, c)
		case j := <-h.enqueue:
			h.waiting = append(h.waiting, j)
			h.schedule()
		case j := <-h.leave:
			if h.running == j {
				h.running = nil
			}
			for i, w := range h.waiting {
				if w == j {
					h.waiting = append(h.waiting[:i], h.waiting[i+1:]...)
					break
				}
			}
			h.schedule()
		case <-h.stop:
			for c := range h.clients {
				c.conn.Close(web.ErrServerClosing)
			}
			return
		}
	}
}

// schedule starts the next real job when the slot is free and tells every
// waiting job whose place changed where it stands (1 = next).
func (h *hub) schedule() {
	if h.running == nil && len(h.waiting) > 0 {
		h.running = h.waiting[0]
		h.waiting = h.waiting[1:]
		close(h.running.start)
	}
	for i, j := range h.waiting {
		if j.pos != i+1 {
			j.pos = i + 1
			j.c.send(encode(runsvc.Queued{Type: "queued", ID: j.id, Position: j.pos}))
		}
	}
}

// join registers c; false when the server is stopping.
func (h *hub) join(c *client) bool {
	select {
	case h.register <- c:
		return true
	case <-h.done:
		return false
	}
}

func (h *hub) part(c *client) {
	select {
	case h.unregister <- c:
	case <-h.done:
	}
}

// wait queues j and blocks until j may run (true) or its context ends
// (false). Either way the caller must call release(j) when done.
func (h *hub) wait(j *realJob) bool {
	select {
	case h.enqueue <- j:
	case <-h.done:
		return false
	case <-j.ctx.Done():
		return false
	}
	select {
	case <-j.start:
		return true
	case <-j.ctx.Done():
		return false
	}
}

// release gives up j's place or slot.
func (h *hub) release(j *realJob) {
	select {
	case h.leave <- j:
	case <-h.done:
	}
}
