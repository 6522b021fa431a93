package class

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/web"
)

// conn is one page's WebSocket, a student's or a teacher's, on a
// web.Conn: its read pump handles the page's messages in order, its writer
// sends replies from a bounded queue (a page that leaves them unread is
// dropped), and a teacher's page also has an updater that sends the class's
// state when it changes, at most every throttle.
type conn struct {
	s       *Server
	ws      peer
	teacher bool
	lang    string
	addr    string        // the remote machine's key (addrKey)
	dirty   chan struct{} // teachers: the state changed
	// cookieCode is the join code the landing page left in a cookie.
	cookieCode string

	// read side only
	stu      *student
	bucket   *web.Bucket
	strikes  int
	joinTry  int
	joinWait *time.Timer // closes a student connection that does not join
	watch    string      // teachers: the lab shown (guarded by s.mu)
}

// peer is what a conn needs of its web.Conn: queueing replies and ending
// the connection (the protocol's fuzz test stands in for it).
type peer interface {
	Send(data []byte) bool
	Finish(cause error)
	Queued() int
	Taken() <-chan struct{}
	Context() context.Context
}

// Timings of the class's connections.
const (
	pingPeriod = 25 * time.Second
	pongWait   = 60 * time.Second
	throttle   = 150 * time.Millisecond // teachers' updates, at most this often
)

// Why the class ended a connection.
var (
	errIdle    = errors.New("did not join in time")
	errStrikes = errors.New("too many refused messages")
	errJoins   = errors.New("too many join attempts")
	errRemoved = errors.New("removed by the teacher")
)

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	teacher := false
	if tok := r.URL.Query().Get("teacher"); tok != "" {
		if !s.isTeacher(tok) {
			http.Error(w, "wrong teacher token", http.StatusForbidden)
			return
		}
		teacher = true
	}
	addr := addrKey(r)
	// A seat is taken before the upgrade, so upgrades at once cannot
	// pass the limits together.
	s.mu.Lock()
	var refuse string
	switch {
	case s.closed:
		refuse = "the class has ended"
	case teacher && s.teacherSeats >= s.lim.MaxTeachers:
		refuse = "too many teacher pages are open"
	case !teacher && s.studentSeats >= s.lim.MaxConns:
		refuse = "the class has too many connections"
	case !teacher && s.addrs[addr] != nil && s.addrs[addr].conns >= s.lim.ConnsPerAddress:
		refuse = fmt.Sprintf("too many connections from your machine's address (at most %d)", s.lim.ConnsPerAddress)
	case teacher:
		s.teacherSeats++
	default:
		s.studentSeats++
		s.addrUseLocked(addr).conns++
	}
	s.mu.Unlock()
	if refuse != "" {
		http.Error(w, refuse, http.StatusServiceUnavailable)
		return
	}
	defer func() {
		s.mu.Lock()
		if teacher {
			s.teacherSeats--
		} else {
			s.studentSeats--
			s.addrUseLocked(addr).conns--
			s.tidyAddrLocked(addr)
		}
		s.mu.Unlock()
	}()
	ws, err := web.Accept(w, r, web.ConnOptions{
		Limits: web.ConnLimits{MessageBytes: int(s.lim.MaxMessage), HardMessageBytes: s.lim.MaxMessage,
			PingPeriod: pingPeriod, PongWait: pongWait},
		Parent: r.Context(), // ends when sim serve shuts down
	})
	if err != nil {
		return // the upgrader answered (403 for a foreign Origin)
	}
	lang := r.URL.Query().Get("lang")
	if lang != "ko" {
		lang = "en"
	}
	c := &conn{s: s, ws: ws, teacher: teacher, lang: lang, addr: addr, dirty: make(chan struct{}, 1),
		bucket: web.NewBucket(s.lim.Rate, s.lim.Burst)}
	if ck, err := r.Cookie(codeCookie); err == nil {
		c.cookieCode = ck.Value
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close(web.ErrServerClosing)
		ws.Run(func(web.Message) {})
		return
	}
	s.conns[c] = true
	if teacher {
		s.teachers[c] = true
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	stop := context.AfterFunc(s.ctx, func() { ws.Close(web.ErrServerClosing) })
	defer stop()

	if teacher {
		// The first state: not a blocking send, since a change another
		// goroutine announced since the registration above may already
		// have filled dirty (whose reader starts below).
		c.changed()
		updaterDone := make(chan struct{})
		go func() {
			defer close(updaterDone)
			c.updater()
		}()
		defer func() { <-updaterDone }()
	} else {
		c.joinWait = time.AfterFunc(s.lim.JoinWait, func() {
			c.ws.Send(errorJSON("", fmt.Sprintf("join within %s: connection closed", s.lim.JoinWait)))
			c.ws.Finish(errIdle)
		})
		defer c.joinWait.Stop()
	}
	ws.Run(c.receive)

	s.mu.Lock()
	delete(s.conns, c)
	delete(s.teachers, c)
	s.mu.Unlock()
	s.touch()
}

// A message from a page. Students send join and answer; teachers send
// watch, reveal, reset, remove and new_code.
type message struct {
	Type     string          `json:"type"`
	Name     string          `json:"name,omitempty"`
	Token    string          `json:"token,omitempty"`
	Code     string          `json:"code,omitempty"`
	Lab      string          `json:"lab,omitempty"`
	Exercise string          `json:"exercise,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
}

type errorMsg struct {
	Type    string `json:"type"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// maxEcho bounds what a reply repeats of what the page sent (a lab, an
// exercise id, a type), so a reply never grows with the message.
const maxEcho = 64

func errorJSON(field, msg string) []byte {
	b, _ := json.Marshal(errorMsg{Type: "error", Field: lab.Clip(field, maxEcho), Message: lab.Clip(msg, 512)})
	return b
}

// reply queues msg; a page that leaves its replies unread is dropped by
// the connection's bounded queue.
func (c *conn) reply(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		return
	}
	c.ws.Send(b)
}

func (c *conn) fail(field, format string, args ...any) {
	c.ws.Send(errorJSON(field, fmt.Sprintf(format, args...)))
}

// strike counts a refused message; false when the connection has had too
// many, and is then ended after a last error.
func (c *conn) strike() bool {
	c.strikes++
	if c.strikes < c.s.lim.Strikes {
		return true
	}
	c.fail("", "too many refused messages: connection closed")
	c.ws.Finish(errStrikes)
	return false
}

// receive handles one message from the page (the read pump's callback).
func (c *conn) receive(m web.Message) {
	if !c.bucket.Allow() {
		if c.strikes == 0 || c.strikes%10 == 0 {
			c.fail("", "too many messages: at most %g a second; this one was refused", c.s.lim.Rate)
		}
		c.strike()
		return
	}
	if m.Binary {
		c.fail("", "want JSON text messages")
		return
	}
	msg, err := decode(m.Data)
	if err != nil {
		c.fail("", "%v", err)
		c.strike()
		return
	}
	if c.teacher {
		c.teacherMessage(msg)
	} else {
		c.studentMessage(msg)
	}
}

// decode reads one message of the class protocol.
func decode(data []byte) (*message, error) {
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("not a JSON message: malformed at byte %d", se.Offset)
		}
		return nil, fmt.Errorf("not a JSON message: %s", lab.Clip(err.Error(), 200))
	}
	return &m, nil
}

// addrUseLocked is what the machine with the key addr holds (addrKey).
func (s *Server) addrUseLocked(addr string) *addrUse {
	u := s.addrs[addr]
	if u == nil {
		u = &addrUse{}
		s.addrs[addr] = u
	}
	return u
}

// tidyAddrLocked forgets a machine that holds nothing.
func (s *Server) tidyAddrLocked(addr string) {
	if u := s.addrs[addr]; u != nil && u.conns <= 0 && u.students <= 0 && len(u.wrong) == 0 {
		delete(s.addrs, addr)
	}
}

// updater sends a teacher's page the class's state whenever it changes, at
// most every throttle, and only once the page has taken the previous one,
// so a slow page gets the latest state rather than a backlog.
func (c *conn) updater() {
	ctx := c.ws.Context()
	var last time.Time
	for {
		select {
		case <-c.dirty:
		case <-ctx.Done():
			return
		}
		if wait := throttle - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		for c.ws.Queued() > 0 {
			taken := c.ws.Taken()
			if c.ws.Queued() == 0 {
				break
			}
			select {
			case <-taken:
			case <-ctx.Done():
				return
			}
		}
		last = time.Now()
		c.reply(c.s.snapshot(c))
	}
}
