package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/web"
)

// A client is one page's WebSocket (a web.Conn) and the runs it asked for.
// The connection's read pump decodes messages and starts runs; its writer
// is the only goroutine that writes. Runs and the hub hand it replies
// through send and sendBatch, which never block: every reply counts
// against the connection's bounded queue, a real run's event batches give
// way first (oldest dropped, a `dropped` message tells the page), and a
// page that does not take its other replies is dropped. A model run never
// drops: it pauses while its page has ModelQueue bytes unread, without
// its model slot (waitRoom).
type client struct {
	s    *Server
	conn *web.Conn
	ctx  context.Context // ends when the client leaves or the server stops

	bucket  *web.Bucket // messages the page may send (read pump only)
	refused int

	mu        sync.Mutex
	runs      map[string]*run
	modelTurn chan struct{} // cap 1: held by the model run of c computing
}

func newClient(s *Server, conn *web.Conn) *client {
	return &client{s: s, conn: conn, ctx: conn.Context(), runs: map[string]*run{}, modelTurn: make(chan struct{}, 1),
		bucket: web.NewBucket(s.limits.MessageRate, s.limits.MessageBurst)}
}

// errFlood is why a socket that kept sending over the rate was closed.
var errFlood = errors.New("too many messages")

// refuse answers a message over the socket's rate: an error for the first
// and every tenth, and after Strikes of them the socket is closed.
func (c *client) refuse() {
	lim := c.s.limits
	if c.refused%10 == 0 {
		c.send(errorMsg("", "", fmt.Sprintf("too many messages: at most %g a second; this one was refused", lim.MessageRate)))
	}
	if c.refused++; c.refused >= lim.Strikes {
		c.send(errorMsg("", "", "too many refused messages: connection closed"))
		c.conn.Finish(errFlood)
	}
}

// send queues a control message; a page that leaves them unread past the
// queue's bound is dropped.
func (c *client) send(data []byte) { c.conn.Send(data) }

// sendBatch closes an event batch of run id (runsvc.AppendEventsTailAt:
// the time it enters the queue) and queues it. A real run's batches may be
// dropped; a model run calls waitRoom first, so its batches are never
// dropped.
func (c *client) sendBatch(id string, data []byte, droppable bool) {
	data = runsvc.AppendEventsTailAt(data, time.Now())
	c.conn.Queue(web.Msg{Data: data, Droppable: droppable, Key: id, Pooled: true})
}

// waitRoom blocks until at most room bytes are queued for the page. A
// run that must wait gives its turn (a model slot) back, so a page that
// reads slower than the model computes, or not at all, stops getting model
// time without holding anything others need; with hold, the turn is kept
// while the page takes something at least every StallWait (a run whose
// last batches are on their way keeps its slot, so pages streaming at once
// get their batches in turn). The turn is taken again before waitRoom
// returns; it returns ctx's error when the run or the client ends.
func (c *client) waitRoom(ctx context.Context, room int, t *turn, hold bool) error {
	for {
		taken := c.conn.Taken()
		if c.conn.Queued() <= room {
			break
		}
		if !hold {
			t.release()
		}
		if !t.held {
			select {
			case <-taken:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		timer := time.NewTimer(c.s.limits.StallWait)
		select {
		case <-taken:
		case <-timer.C:
			t.release()
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
		timer.Stop()
	}
	return t.take(ctx)
}

// A turn is a model run's hold on one of the server's model slots.
type turn struct {
	sem  chan struct{}
	held bool
}

func (t *turn) take(ctx context.Context) error {
	if t.held {
		return nil
	}
	select {
	case t.sem <- struct{}{}:
		t.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *turn) release() {
	if t.held {
		<-t.sem
		t.held = false
	}
}

// kib formats a byte count for messages: "16 KiB".
func kib(n int) string {
	if n%1024 == 0 {
		return strconv.Itoa(n/1024) + " KiB"
	}
	return strconv.Itoa(n) + " bytes"
}
