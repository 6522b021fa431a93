// Package libclients runs real HTTP client libraries, as an application
// would, with instrumentation of ours, and reads what they did into
// sim.Events: so that a statement about a library's connection reuse is
// one a real run shows. The first is Python's requests (urllib3 below it):
// python/requests_client.py, run by RunPython.
package libclients

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/loopback"
)

//go:embed python/requests_client.py
var requestsClient string

// Mode is how the Python program calls requests.
type Mode string

const (
	// ModeGet calls requests.get() at module level: no Session, so each
	// call makes (and closes) a Session and its pool.
	ModeGet Mode = "get"
	// ModeSession shares one requests.Session() among the threads (its
	// HTTPAdapter's default pool: pool_maxsize 10 per host).
	ModeSession Mode = "session"
	// ModeSessionPool shares one Session with HTTPAdapter(pool_maxsize=
	// Spec.PoolMaxsize, pool_block=False).
	ModeSessionPool Mode = "session-pool"
)

// Limits of one run.
const (
	MaxThreads     = 256
	MaxCalls       = 100_000
	DefaultTimeout = 60 * time.Second
	maxLine        = 64 << 10 // bytes of one output line
	stderrKeep     = 4 << 10  // bytes of stderr kept for an error message
)

// PythonPackage is the Debian package that gives /usr/bin/python3 the
// requests module.
const PythonPackage = "python3-requests"

// Spec is one run of the Python program.
type Spec struct {
	Python      string // the interpreter; "" is python3 on PATH
	URL         string // http(s)://IP:port/..., a loopback address
	CAFile      string // the CA the server's certificate chains to (verify=); "" is requests' default
	Mode        Mode
	Threads     int // concurrency: threads calling at once, from 1
	Calls       int // calls in all, claimed one at a time by the threads
	PoolMaxsize int // ModeSessionPool's pool_maxsize
	// Bursts makes the threads meet before each of their calls: the calls
	// in flight rise from none to Threads at once, Calls/Threads times.
	// Without it each thread calls again as soon as its call ends.
	Bursts bool
	// CallTimeout is each call's timeout (requests' timeout=); 0: 30 s.
	CallTimeout time.Duration
	// Timeout bounds the whole run; 0: DefaultTimeout.
	Timeout time.Duration
	// OnEvent, if set, sees each call's event as its line arrives.
	OnEvent func(sim.Event)
}

// Versions are what the program reported of itself.
type Versions struct {
	Python   string `json:"python"`
	Requests string `json:"requests"`
	Urllib3  string `json:"urllib3"`
}

func (v Versions) String() string {
	return fmt.Sprintf("Python %s, requests %s, urllib3 %s", v.Python, v.Requests, v.Urllib3)
}

// Summary is the program's last line.
type Summary struct {
	Calls    int `json:"calls"`
	Connects int `json:"connects"`  // urllib3 connect() calls: connections opened
	PoolFull int `json:"pool_full"` // "Connection pool is full, discarding connection" warnings
	// Discarded are the ids of the connections the pool discarded.
	Discarded []int `json:"discarded"`
}

// Result is one run: the versions, one event per call in the order the
// calls ended, and the summary.
type Result struct {
	Versions Versions
	Events   []sim.Event
	Summary
	PID int // the Python process, gone when RunPython returns
}

// Opened counts the calls that opened a connection.
func (r *Result) Opened() int {
	n := 0
	for i := range r.Events {
		if r.Events[i].NewConn {
			n++
		}
	}
	return n
}

// Errors counts the calls that failed.
func (r *Result) Errors() int {
	n := 0
	for i := range r.Events {
		if r.Events[i].Error != "" {
			n++
		}
	}
	return n
}

// MissingError says the interpreter, or its requests module, is absent.
type MissingError struct {
	Python string
	Detail string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("libclients: %s has no requests module (%s); on Debian: apt-get install %s", e.Python, e.Detail, PythonPackage)
}

// Check reports a MissingError unless python (or python3 on PATH when "")
// runs and imports requests.
func Check(python string) error {
	py, err := interpreter(python)
	if err != nil {
		return err
	}
	out, err := exec.Command(py, "-c", "import requests").CombinedOutput()
	if err != nil {
		return &MissingError{Python: py, Detail: lastLine(out, err)}
	}
	return nil
}

func interpreter(python string) (string, error) {
	if python == "" {
		python = "python3"
	}
	py, err := exec.LookPath(python)
	if err != nil {
		return "", &MissingError{Python: python, Detail: err.Error()}
	}
	return py, nil
}

func (s *Spec) check() error {
	u, err := url.Parse(s.URL)
	if err != nil {
		return fmt.Errorf("libclients: URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("libclients: URL %q: not http or https", s.URL)
	}
	if err := loopback.Check(u.Host); err != nil {
		return fmt.Errorf("libclients: URL: %w", err)
	}
	switch s.Mode {
	case ModeGet, ModeSession:
	case ModeSessionPool:
		if s.PoolMaxsize < 1 || s.PoolMaxsize > MaxThreads {
			return fmt.Errorf("libclients: pool_maxsize %d: want 1 to %d", s.PoolMaxsize, MaxThreads)
		}
	default:
		return fmt.Errorf("libclients: mode %q: want %s, %s or %s", s.Mode, ModeGet, ModeSession, ModeSessionPool)
	}
	if s.Threads < 1 || s.Threads > MaxThreads {
		return fmt.Errorf("libclients: threads %d: want 1 to %d", s.Threads, MaxThreads)
	}
	if s.Calls < 0 || s.Calls > MaxCalls {
		return fmt.Errorf("libclients: calls %d: want 0 to %d", s.Calls, MaxCalls)
	}
	if s.Bursts && s.Calls%s.Threads != 0 {
		return fmt.Errorf("libclients: bursts: calls %d are not a multiple of threads %d", s.Calls, s.Threads)
	}
	if s.CallTimeout < 0 || s.Timeout < 0 {
		return errors.New("libclients: negative timeout")
	}
	return nil
}

// RunPython runs python/requests_client.py for s and reads its lines. The
// process (in a group of its own) is killed when ctx ends, when s.Timeout
// passes, or when its output breaks the protocol; RunPython returns only
// once it has been reaped.
func RunPython(ctx context.Context, s Spec) (Result, error) {
	if err := s.check(); err != nil {
		return Result{}, err
	}
	py, err := interpreter(s.Python)
	if err != nil {
		return Result{}, err
	}
	timeout := s.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	callTimeout := s.CallTimeout
	if callTimeout == 0 {
		callTimeout = 30 * time.Second
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	args := []string{"-c", requestsClient, "--url", s.URL, "--mode", string(s.Mode),
		"--threads", strconv.Itoa(s.Threads), "--calls", strconv.Itoa(s.Calls),
		"--timeout", strconv.FormatFloat(callTimeout.Seconds(), 'f', -1, 64)}
	if s.CAFile != "" {
		args = append(args, "--ca", s.CAFile)
	}
	if s.Bursts {
		args = append(args, "--bursts")
	}
	if s.Mode == ModeSessionPool {
		args = append(args, "--pool-maxsize", strconv.Itoa(s.PoolMaxsize))
	}
	cmd := exec.Command(py, args...)
	// A group of its own, so that a kill reaches whatever it starts; and
	// killed with us if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr := &tailBuffer{max: stderrKeep}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{}, err
	}
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("libclients: starting %s: %w", py, err)
	}
	res := Result{PID: cmd.Process.Pid}
	kill := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	stop := context.AfterFunc(ctx, kill)

	perr := read(stdout, &s, &res)
	if perr != nil {
		kill() // a broken protocol: nothing more to read
	}
	io.Copy(io.Discard, stdout) // let it finish writing before Wait closes the pipe
	werr := cmd.Wait()
	stop()
	kill() // anything left in its group

	switch {
	case parent.Err() != nil:
		return res, fmt.Errorf("libclients: python stopped: %w", context.Cause(parent))
	case ctx.Err() != nil:
		return res, fmt.Errorf("libclients: python did not finish %d calls within %s (%d done)", s.Calls, timeout, len(res.Events))
	case perr != nil:
		return res, perr
	case werr != nil:
		return res, fmt.Errorf("libclients: %s: %v: %s", py, werr, bytes.TrimSpace(stderr.Bytes()))
	case res.Versions.Requests == "":
		return res, fmt.Errorf("libclients: python printed no versions line: %s", bytes.TrimSpace(stderr.Bytes()))
	case res.Summary.Calls != s.Calls || len(res.Events) != s.Calls:
		return res, fmt.Errorf("libclients: python reported %d calls and printed %d events, want %d", res.Summary.Calls, len(res.Events), s.Calls)
	}
	return res, nil
}

// line is one of the program's lines: the versions, a call's event (in
// sim.Event's JSON, sim/event.go), or the summary.
type line struct {
	Versions *Versions `json:"versions"`
	Summary  *Summary  `json:"summary"`
	Kind     string    `json:"kind"`
}

// read parses the program's output into res, at most s.Calls+2 lines.
func read(r io.Reader, s *Spec, res *Result) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLine)
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		bad := func(format string, a ...any) error {
			return fmt.Errorf("libclients: python line %d: %s: %s", n, fmt.Sprintf(format, a...), clip(b))
		}
		if n > s.Calls+2 {
			return bad("more lines than %d calls and 2", s.Calls)
		}
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			return bad("%v", err)
		}
		switch {
		case l.Versions != nil:
			if n != 1 {
				return bad("versions after the first line")
			}
			res.Versions = *l.Versions
		case l.Kind != "":
			if res.Versions.Requests == "" {
				return bad("an event before the versions")
			}
			e, err := ParseEvent(b)
			if err != nil {
				return bad("%v", err)
			}
			res.Events = append(res.Events, e)
			if s.OnEvent != nil {
				s.OnEvent(e)
			}
		case l.Summary != nil:
			res.Summary = *l.Summary
			if res.Discarded == nil {
				res.Discarded = []int{}
			}
			return nil // the last line
		default:
			return bad("neither versions, an event nor a summary")
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("libclients: python line %d: %w", n+1, err)
	}
	return nil // a missing summary: Wait's error or the call count says why
}

// jsonEvent is sim.Event's JSON (AppendJSON) as a call event carries it.
type jsonEvent struct {
	Kind          string  `json:"kind"`
	At            float64 `json:"at_ms"`
	Req           int     `json:"req"`
	Call          int     `json:"call"`
	Worker        int     `json:"worker"`
	Conn          int     `json:"conn"`
	NewConn       bool    `json:"new_conn"`
	Reused        bool    `json:"reused"`
	NumConnects   *int    `json:"num_connects"`
	Retried       bool    `json:"retried"`
	Start         float64 `json:"start_ms"`
	Queue         float64 `json:"queue_ms"`
	NameLookup    float64 `json:"namelookup_ms"`
	Connect       float64 `json:"connect_ms"`
	AppConnect    float64 `json:"appconnect_ms"`
	StartTransfer float64 `json:"starttransfer_ms"`
	Total         float64 `json:"total_ms"`
	Handshake     string  `json:"handshake"`
	LocalPort     int     `json:"local_port"`
	Error         string  `json:"error"`
}

// ParseEvent reads one call event in sim.Event's JSON (AppendJSON),
// refusing unknown keys, other kinds, and values sim.CheckEvent refuses.
func ParseEvent(b []byte) (sim.Event, error) {
	var j jsonEvent
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		return sim.Event{}, err
	}
	if j.Kind != sim.KindCall.String() {
		return sim.Event{}, fmt.Errorf("kind %q, want %q", j.Kind, sim.KindCall)
	}
	ms := func(v float64) time.Duration { return time.Duration(v*1000+0.5) * time.Microsecond }
	e := sim.Event{
		Kind: sim.KindCall, At: ms(j.At), Req: j.Req, Call: j.Call, Worker: j.Worker, Conn: j.Conn,
		NewConn: j.NewConn, Reused: j.Reused, Retried: j.Retried,
		Start: ms(j.Start), Queue: ms(j.Queue), NameLookup: ms(j.NameLookup), Connect: ms(j.Connect),
		AppConnect: ms(j.AppConnect), StartTransfer: ms(j.StartTransfer), Total: ms(j.Total),
		Handshake: sim.Handshake(j.Handshake), LocalPort: j.LocalPort, Error: j.Error,
	}
	if j.NumConnects != nil && *j.NumConnects != e.NumConnects() {
		return sim.Event{}, fmt.Errorf("num_connects %d with new_conn %v", *j.NumConnects, e.NewConn)
	}
	if e.NewConn && e.Reused {
		return sim.Event{}, errors.New("both new_conn and reused")
	}
	if err := sim.CheckEvent(&e); err != nil {
		return sim.Event{}, err
	}
	return e, nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

func lastLine(out []byte, err error) string {
	out = bytes.TrimSpace(out)
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:] // a traceback's last line names the error
	}
	if len(out) == 0 {
		return err.Error()
	}
	return string(out)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]byte(nil), t.b...)
}
