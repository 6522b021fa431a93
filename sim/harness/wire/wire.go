package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
)

// wireEvent carries a sim.Event between the harness's processes without
// loss (sim.Event's own JSON is the public, lossy shape).
type wireEvent struct {
	K  sim.Kind      `json:"k"`
	At time.Duration `json:"at,omitempty"`
	R  int           `json:"r,omitempty"`
	C  int           `json:"c,omitempty"`
	W  int           `json:"w,omitempty"`
	N  int           `json:"n,omitempty"`
	NC bool          `json:"nc,omitempty"`
	RU bool          `json:"ru,omitempty"`
	RT bool          `json:"rt,omitempty"`
	S  time.Duration `json:"s,omitempty"`
	Q  time.Duration `json:"q,omitempty"`
	NL time.Duration `json:"nl,omitempty"`
	CO time.Duration `json:"co,omitempty"`
	AC time.Duration `json:"ac,omitempty"`
	ST time.Duration `json:"st,omitempty"`
	T  time.Duration `json:"t,omitempty"`
	HS string        `json:"hs,omitempty"`
	LP int           `json:"lp,omitempty"`
	BY string        `json:"by,omitempty"`
	RS string        `json:"rs,omitempty"`
	ER string        `json:"er,omitempty"`
}

func toWire(e *sim.Event) *wireEvent {
	return &wireEvent{e.Kind, e.At, e.Req, e.Call, e.Worker, e.Conn, e.NewConn, e.Reused, e.Retried,
		e.Start, e.Queue, e.NameLookup, e.Connect, e.AppConnect, e.StartTransfer, e.Total,
		e.Handshake, e.LocalPort, e.By, e.Reason, e.Error}
}

func (w *wireEvent) event() sim.Event {
	return sim.Event{Kind: w.K, At: w.At, Req: w.R, Call: w.C, Worker: w.W, Conn: w.N, NewConn: w.NC,
		Reused: w.RU, Retried: w.RT, Start: w.S, Queue: w.Q, NameLookup: w.NL, Connect: w.CO,
		AppConnect: w.AC, StartTransfer: w.ST, Total: w.T, Handshake: w.HS, LocalPort: w.LP,
		By: w.BY, Reason: w.RS, Error: w.ER}
}

// msg is one line between the harness's processes. Exactly one field is set.
type msg struct {
	Config   json.RawMessage `json:"config,omitempty"` // a lab process's or worker's configuration
	Ev       *wireEvent      `json:"ev,omitempty"`
	Progress string          `json:"progress,omitempty"`
	Result   *variantReport  `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	// worker → lab process
	Ready bool  `json:"ready,omitempty"`
	Done  int   `json:"done,omitempty"` // request finished
	Fail  bool  `json:"fail,omitempty"` // ... with a failed call
	End   int64 `json:"end,omitempty"`  // ... at this time, Unix nanoseconds
	// lab process → worker
	Job *job `json:"job,omitempty"`
}

// job asks a worker to serve one web request.
type job struct {
	Req int   `json:"req"`
	T0  int64 `json:"t0"` // the run's start, Unix nanoseconds
	// At is when the request reaches the worker (Unix nanoseconds; 0: on
	// receipt). The lab process sends a job dispatchLead ahead of it.
	At   int64 `json:"at,omitempty"`
	Exit bool  `json:"exit,omitempty"` // exit after the requests in hand (max_requests, CLI mode)
	// Linger, with Exit: drop the client state (its connections close
	// now) but leave the process until stdin ends, after the run. A
	// process exiting while others serve slowed their calls by up to a
	// millisecond; the model has no cost for it.
	Linger bool `json:"linger,omitempty"`
}

// wallTime turns a Unix time from another process (they share the
// system's clock, not Go's monotonic one) into a time on this process's
// monotonic clock.
func wallTime(unixNano int64) time.Time {
	now := time.Now()
	return now.Add(time.Duration(unixNano - now.UnixNano()))
}

// lineWriter writes msgs as JSON lines from any goroutine.
type lineWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func newLineWriter(w io.Writer) *lineWriter { return &lineWriter{w: bufio.NewWriterSize(w, 64<<10)} }

func (l *lineWriter) send(m *msg) error { return l.write(m, true) }

// event writes an event without flushing: events are many, and every
// flush wakes the reading process up while a measurement may be running.
// Whoever sends the next control message (done, result) flushes them, and
// so does flushEvery.
func (l *lineWriter) event(e *sim.Event) error { return l.write(&msg{Ev: toWire(e)}, false) }

func (l *lineWriter) write(m *msg, flush bool) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	b = append(b, '\n')
	if _, l.err = l.w.Write(b); l.err == nil && flush {
		l.err = l.w.Flush()
	}
	return l.err
}

func (l *lineWriter) flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = l.w.Flush()
	}
	return l.err
}

// flushEvery flushes l every d until stop is closed, so a live view gets
// events in batches.
func (l *lineWriter) flushEvery(d time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			l.flush()
		}
	}
}

// lineReader reads msgs; lines are bounded so a broken peer cannot grow
// memory without end.
type lineReader struct{ sc *bufio.Scanner }

const maxLine = 4 << 20

func newLineReader(r io.Reader) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	return &lineReader{sc: sc}
}

// next returns the next message, or io.EOF.
func (l *lineReader) next() (*msg, error) {
	if !l.sc.Scan() {
		if err := l.sc.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	var m msg
	if err := json.Unmarshal(l.sc.Bytes(), &m); err != nil {
		return nil, fmt.Errorf("harness: bad message from a child process: %v", err)
	}
	return &m, nil
}
