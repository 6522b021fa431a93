// Package wire is the protocol between the processes of a real run: one
// JSON object a line on each child's stdin and stdout, the types those
// lines carry, and the lossless encoding of a sim.Event between them.
//
// # Protocol
//
// Every line is a Msg carrying one message (a "done" carries "fail" and
// "end" with it). Keys are fixed: another worker implementation (a PHP
// runtime under Node.js) speaks the same lines.
//
// sim (harness.RunPlan) → lab process, on stdin, then stdin closes:
//
//	{"config": LabJob}
//
// lab process → sim, on stdout:
//
//	{"ev": event}            every event as it happens (batched, flushed every 50 ms)
//	{"progress": "text"}     about once a second
//	{"result": Report}       last line of a run that finished
//	{"error": "text"}        last line of a run that failed
//
// lab process → worker process, on stdin; closing stdin ends the worker
// after the requests in hand:
//
//	{"config": WorkerConfig} first line
//	{"job": Job}             one web request to serve, or {"job": {"exit": true, ...}}
//
// worker process → lab process, on stdout:
//
//	{"ready": true}          warmed up; jobs may come ({"info": {...}} with it: see Msg.Info)
//	{"ev": event}            its calls, its connections' opens and closes, port errors (worker 1)
//	{"check": {...}}         a statement of a script that probes the software (Msg.Check)
//	{"done": req, "fail": bool, "end": unix_ns}   request req finished (fail: a call failed)
//	{"error": "text"}        the worker cannot go on
//
// An event's keys are k (kind, a number: 0 call, 1 open, 2 idle, 3 close,
// 4 time_wait, 5 time_wait_end, 6 port_error, 7 request), at, r (request),
// c (call), w (worker), n (connection id, unique within the process), nc
// (new connection), ru (reused), rt (retried), s (start), q (queue), nl,
// co, ac, st, t (namelookup, connect, appconnect, starttransfer, total:
// curl's cumulative phases), hs (handshake: full, resumed, 0-rtt), lp
// (local port), by (client, server), rs (reason), er (error). Times are
// integer nanoseconds from the run's start (at, s) or from the call's
// start (phases). Every key but k is left out when zero. A field added to
// sim.Event later is carried under its Go name in snake_case (EventKey).
//
// A WorkerConfig's keys: setup ("http" or "redis"), scenario (the
// sim.Scenario with Go field names as keys and durations as integer
// nanoseconds), worker (1), upstream and dns and redis (loopback host:port
// of the servers, set as the setup needs them), ca (the CA certificate,
// PEM, base64), warm (the harness's certificates: warm up against private
// servers before saying ready) and nice (take nice -20 when ready). A Job's
// keys: req (request number), t0 (the run's start, Unix nanoseconds), at
// (when the request arrives: start it then; 0: at once), exit and linger
// (see Job).
package wire

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/pki"
)

// Msg is one line between the harness's processes: one message (Done
// with Fail and End).
type Msg struct {
	Config   json.RawMessage `json:"config,omitempty"` // a LabJob or a WorkerConfig
	Ev       *sim.Event      `json:"ev,omitempty"`     // carried with the wire keys, see EventKey
	Progress string          `json:"progress,omitempty"`
	Result   *Report         `json:"result,omitempty"`
	Error    string          `json:"error,omitempty"`
	// worker → lab process
	Ready bool  `json:"ready,omitempty"`
	Done  int   `json:"done,omitempty"` // request finished
	Fail  bool  `json:"fail,omitempty"` // ... with a failed call
	End   int64 `json:"end,omitempty"`  // ... at this time, Unix nanoseconds
	// LagUS and Late, with Done: the worker's netem.Lag since its last
	// Done (the latest read, in microseconds, and reads over LateRead);
	// WriteLagUS and LateWrites the same for its writes.
	LagUS      int64 `json:"lag_us,omitempty"`
	Late       int   `json:"late,omitempty"`
	WriteLagUS int64 `json:"write_lag_us,omitempty"`
	LateWrites int   `json:"late_writes,omitempty"`
	// lab process → worker
	Job *Job `json:"job,omitempty"`
	// Info, with Ready, is what a worker that is not the harness's own
	// says about the software it runs (the php setup: phpwasm.Info), and
	// Check one statement of a script that probes it (phpwasm.Check); the
	// setup that starts such workers reads both.
	Info  json.RawMessage `json:"info,omitempty"`
	Check json.RawMessage `json:"check,omitempty"`
}

// Job asks a worker to serve one web request.
type Job struct {
	Req int   `json:"req"`
	T0  int64 `json:"t0"` // the run's start, Unix nanoseconds
	// At is when the request reaches the worker (Unix nanoseconds; 0: on
	// receipt). The lab process sends a job ahead of it, so that the
	// crossing of the pipe does not delay the request.
	At   int64 `json:"at,omitempty"`
	Exit bool  `json:"exit,omitempty"` // exit after the requests in hand (max_requests, CLI mode)
	// Linger, with Exit: drop the client state (its connections close
	// now) but leave the process until stdin ends, after the run. A
	// process exiting while others serve slows their calls down, which the
	// model has no cost for.
	Linger bool `json:"linger,omitempty"`
	// Measure asks a worker that measures its own costs (the php setup:
	// a TLS handshake, a call on a kept connection) to measure them again
	// now and answer with an info line; Req is 0.
	Measure bool `json:"measure,omitempty"`
}

// LabJob is what a lab process is asked to run: one variant, already
// scaled.
type LabJob struct {
	Block         string       `json:"block"`
	Variant       string       `json:"variant"`
	Setup         sim.Setup    `json:"setup"`
	Scenario      sim.Scenario `json:"scenario"`
	Seed          uint64       `json:"seed"`
	Certs         pki.Certs    `json:"certs"`
	Isolated      bool         `json:"isolated"`
	KernelTWReuse int          `json:"kernel_tw_reuse"`
	Real          []string     `json:"real,omitempty"`
	// Dir is a folder the parent made for this lab process and removes
	// after it, however it ends: the servers' files (nginx's prefix,
	// redis-server's folder) go there.
	Dir string `json:"dir,omitempty"`
	// PHP says what the php and php-native setups run (found by the
	// parent, which falls back to another setup when it cannot).
	PHP *PHPJob `json:"php,omitempty"`
	// ParentPID is the process that started the lab process and reads
	// its events, as the host numbers it: its CPU time counts as the
	// run's, not as other programs' (Report.Share).
	ParentPID int `json:"parent_pid,omitempty"`
}

// PHPJob is the program of a PHP worker process and the lab's script it
// runs: node Driver (PHP 8.5 in WebAssembly), or with Binary the php CLI
// on PATH behind the same driver.
type PHPJob struct {
	Node   string `json:"node"`
	Driver string `json:"driver"`
	Script string `json:"script"`
	Binary string `json:"binary,omitempty"`
}

// Runtime is what a worker implementation other than the harness's own
// ran and measured (the php setups): its name and versions, the CPU it
// spends besides the network, which the model is given under the keys of
// the same names (the handshake's is Report.HandshakeCPU), and the timers
// it was given.
type Runtime struct {
	Name          string            `json:"name"`
	Versions      map[string]string `json:"versions,omitempty"`
	ConnectCPU    time.Duration     `json:"connect_cpu,omitempty"`
	DropCPU       time.Duration     `json:"drop_cpu,omitempty"`
	ClientCPU     time.Duration     `json:"client_cpu,omitempty"`
	ClientReadCPU time.Duration     `json:"client_read_cpu,omitempty"`
	// RequestCPU: a request's own cost besides its calls (the model adds
	// it to app_time).
	RequestCPU time.Duration `json:"request_cpu,omitempty"`
	// CallSpread: how much one new connection's call varies here (the
	// 90th percentile of the measured calls' CPU less their median).
	CallSpread time.Duration `json:"call_spread,omitempty"`
	// CurlTimers: curl's DNS cache timeout and maximum idle age, whole
	// seconds, as the worker processes gave them to curl.
	CurlTimers map[string]int `json:"curl_timers,omitempty"`
}

// Report is what a lab process measured besides the events.
type Report struct {
	TimeWaitPeak       int      `json:"time_wait_peak"`
	ServerTimeWaitPeak int      `json:"server_time_wait_peak"`
	OpenPeak           int      `json:"open_peak"`
	Components         []string `json:"components"`
	Notes              []string `json:"notes,omitempty"`
	WallS              float64  `json:"wall_s"`
	// ResolutionMS is the resolution of the measured phases when coarser
	// than the clock's (nginx logs whole milliseconds).
	ResolutionMS float64 `json:"resolution_ms,omitempty"`
	// KernelSpread: the kernel, not the harness, spread the connections
	// over the workers (nginx's worker processes accept them).
	KernelSpread bool `json:"kernel_spread,omitempty"`
	// DialerCharged: the client's sockets are not the harness's (nginx's
	// upstream connections), so they connect at once on loopback and the
	// TCP handshake's round trip is charged on the first bytes.
	DialerCharged bool `json:"dialer_charged,omitempty"`
	// HandshakeCPU is a full TLS handshake's CPU as the run's clients pay
	// it: Go's, measured in the lab process (servers.MeasureHandshake), or
	// the workers' own (the php setups); 0 without TLS or when the
	// scenario sets its own.
	HandshakeCPU time.Duration `json:"handshake_cpu,omitempty"`
	// ResumeCPU is a resumed TLS handshake's CPU, measured with
	// HandshakeCPU for Go's clients (the php setups leave it 0, and the
	// model prices it at OpenSSL's speed); 0 also without resumption or
	// when the scenario sets its own.
	ResumeCPU time.Duration `json:"resume_cpu,omitempty"`
	// Runtime: the software the workers ran, when it is not the harness's
	// own; Checks: what its probing script's statements returned or threw,
	// by id (a statement's notices under ID_notice).
	Runtime *Runtime          `json:"runtime,omitempty"`
	Checks  map[string]string `json:"checks,omitempty"`
	// Lag is how far the harness's processes (the lab process and the
	// harness's own workers) fell behind their emulated network during
	// the run (netem.Lag).
	LagMS      float64 `json:"lag_ms,omitempty"`
	LateReads  int     `json:"late_reads,omitempty"`
	WriteLagMS float64 `json:"write_lag_ms,omitempty"`
	LateWrites int     `json:"late_writes,omitempty"`
	// Start is what the lab process used in the run's first StartWindow,
	// when it could read it.
	Start *StartUse `json:"start,omitempty"`
	// Share is what the machine's CPUs did during the run, when the lab
	// process could read it.
	Share *Share `json:"share,omitempty"`
}

// Share is what the run's processes and other programs used of the CPUs
// from the lab process's start (the measurements the model is given are
// made then) to the run's end (kernel.ShareUse): the run's (the lab
// process, everything it started, and its parent), other programs'
// (OthersProcs of them used any) and steal, and other programs' with steal
// as an average number of CPUs. Each process's time reads in whole ticks
// (10 ms).
type Share struct {
	WallMS      float64 `json:"wall_ms"`
	RunCPUMS    float64 `json:"run_cpu_ms"`
	Procs       int     `json:"procs"`
	OthersCPUMS float64 `json:"others_cpu_ms"`
	OthersProcs int     `json:"others_procs"`
	StealMS     float64 `json:"steal_ms"`
	OthersCPUs  float64 `json:"others_cpus"`
}

// String is the share for a line of output.
func (s *Share) String() string {
	str := fmt.Sprintf("other programs used %.2f CPUs on average during the run (%.0f ms of CPU in %.0f ms, %d processes; the run's %d processes %.0f ms", s.OthersCPUs, s.OthersCPUMS+s.StealMS, s.WallMS, s.OthersProcs, s.Procs, s.RunCPUMS)
	if s.StealMS > 0 {
		str += fmt.Sprintf("; the host took %.0f ms of it (steal)", s.StealMS)
	}
	return str + ")"
}

// StartWindow is the start of a run that StartUse covers: a burst of new
// connections at time 0 sets itself up within it.
const StartWindow = 50 * time.Millisecond

// StartUse is what the lab process used in the first StartWindow of a run
// (or in the whole run, if shorter): its CPU time and the pages it touched
// for the first time (page faults, DiskFaults of them read from a file).
// The model has none of the harness's own work: when a run's first calls
// come out late, these say whether the lab process was busy setting up.
//
// RunDelayMS is how long its threads were ready to run but waited for a
// CPU (other threads or processes held them), and StealMS how much CPU
// time the hypervisor gave to others meanwhile (the whole machine's, in
// steps of 10 ms): a process that used little CPU and was late waited for
// something, and these say whether it was a CPU. Either is left out
// (nil) where the kernel does not keep it.
type StartUse struct {
	CPUMS      float64  `json:"cpu_ms"`
	Faults     int64    `json:"page_faults"`
	DiskFaults int64    `json:"disk_faults,omitempty"`
	RunDelayMS *float64 `json:"run_delay_ms,omitempty"`
	StealMS    *float64 `json:"steal_ms,omitempty"`
}

// String is the use for a line of output.
func (u *StartUse) String() string {
	s := fmt.Sprintf("in the run's first %v the lab process used %.1f ms of CPU and took %d page faults", StartWindow, u.CPUMS, u.Faults)
	if u.DiskFaults > 0 {
		s += fmt.Sprintf(" (%d from disk)", u.DiskFaults)
	}
	if u.RunDelayMS != nil {
		s += fmt.Sprintf(", its threads waited %.1f ms for a CPU", *u.RunDelayMS)
	} else {
		s += ", how long its threads waited for a CPU is not known (no schedstat)"
	}
	if u.StealMS != nil {
		s += fmt.Sprintf(", the host took %.0f ms (steal)", *u.StealMS)
	} else {
		s += ", the host's steal is not known"
	}
	return s
}

// WorkerConfig is what a worker process is told when it starts.
type WorkerConfig struct {
	Setup    sim.Setup    `json:"setup"`
	Scenario sim.Scenario `json:"scenario"`
	Worker   int          `json:"worker"` // 1-based
	Upstream string       `json:"upstream,omitempty"`
	DNS      string       `json:"dns,omitempty"`
	Redis    string       `json:"redis,omitempty"`
	CAPEM    []byte       `json:"ca,omitempty"`
	// Warm, the harness's certificates, asks the worker to warm its code up
	// before it says it is ready.
	Warm *pki.Certs `json:"warm,omitempty"`
	// Nice: the process was started at the lowest CPU priority and takes
	// the highest when ready, so that a worker replacing one during the run
	// (pm.max_requests, CLI mode) starts up behind the requests in flight
	// rather than beside them. Set only where the lab process could raise
	// its own priority.
	Nice bool `json:"nice,omitempty"`
}

// WallTime turns a Unix time from another process (they share the
// system's clock, not Go's monotonic one) into a time on this process's
// monotonic clock.
func WallTime(unixNano int64) time.Time {
	now := time.Now()
	return now.Add(time.Duration(unixNano - now.UnixNano()))
}

// A Writer writes Msgs as JSON lines from any goroutine.
type Writer struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

// NewWriter writes to w through a buffer.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriterSize(w, 64<<10)} }

// Send writes m and flushes.
func (l *Writer) Send(m *Msg) error { return l.write(m, true) }

// Event writes an event without flushing: events are many, and every
// flush wakes the reading process up while a measurement may be running.
// Whoever sends the next control message (done, result) flushes them, and
// so does FlushEvery.
func (l *Writer) Event(e *sim.Event) error { return l.write(&Msg{Ev: e}, false) }

func (l *Writer) write(m *Msg, flush bool) error {
	b, err := encode(m)
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

// Flush writes out what is buffered.
func (l *Writer) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = l.w.Flush()
	}
	return l.err
}

// FlushEvery flushes l every d until stop is closed, so a live view gets
// events in batches.
func (l *Writer) FlushEvery(d time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			l.Flush()
		}
	}
}

// A Reader reads Msgs; lines are bounded so a broken peer cannot grow
// memory without end.
type Reader struct{ sc *bufio.Scanner }

// MaxLine is the longest line a Reader accepts.
const MaxLine = 4 << 20

// NewReader reads lines from r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	return &Reader{sc: sc}
}

// Next returns the next message, or io.EOF.
func (l *Reader) Next() (*Msg, error) {
	if !l.sc.Scan() {
		if err := l.sc.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	var m Msg
	if err := decode(l.sc.Bytes(), &m); err != nil {
		return nil, fmt.Errorf("harness: bad message from a child process: %v", err)
	}
	return &m, nil
}
