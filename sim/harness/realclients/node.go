package realclients

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
)

// clientJS is node/client.mjs, carried in the binary so that a run needs no
// checkout; node reads it with -e.
//
//go:embed node/client.mjs
var clientJS string

// NodeMode is which of Node's clients a run uses.
type NodeMode string

const (
	// NodeAgent: https.get with the global agent (keep-alive since Node 19).
	NodeAgent NodeMode = "agent"
	// NodeNoKeepAlive: https.get with new https.Agent({keepAlive: false}).
	NodeNoKeepAlive NodeMode = "nokeepalive"
	// NodeFetch: the global fetch (undici, built into Node 18 and later).
	NodeFetch NodeMode = "fetch"
)

// NodeModes lists the NodeMode values.
var NodeModes = []NodeMode{NodeAgent, NodeNoKeepAlive, NodeFetch}

// NodeConfig is one run of node/client.mjs.
type NodeConfig struct {
	// URL is the one URL every call GETs.
	URL string
	// CAFile is a PEM file Node trusts besides its own roots
	// (NODE_EXTRA_CA_CERTS); "" for none.
	CAFile string
	Mode   NodeMode
	// Concurrency lanes each make Calls calls, one after the other.
	Concurrency, Calls int
	// Timeout bounds the run (0: a minute); the program is killed then.
	Timeout time.Duration
}

// MaxNodeCalls bounds Concurrency × Calls.
const MaxNodeCalls = 10_000

// NodeRun is what a run of node/client.mjs saw.
type NodeRun struct {
	// Node is process.version; Undici the fetch's undici version
	// (process.versions.undici).
	Node, Undici string
	// PID is the node process's (and its process group's) id; set once it
	// started, even when RunNode fails.
	PID int
	// Events are the calls, in the order they ended: Worker is the lane and
	// Call its call number (the round), both from 1; Conn is the socket
	// object's number, LocalPort its port; Reused is the library's word
	// (req.reusedSocket; for fetch, the socket undici's
	// undici:client:sendHeaders diagnostics channel names had carried a
	// request before), NewConn its opposite. Connect and AppConnect (new
	// sockets of http.Agent only) and StartTransfer (the response's
	// headers) are from the call's start.
	Events []sim.Event
	// ServerConns are the upstream's X-Connlab-Conn headers, one per event
	// ("conn/request on it"): the server's side of each call.
	ServerConns []string
	// Sockets is how many sockets the calls ran on; Connects how many the
	// library connected (sockets of non-reused calls; for fetch, the
	// undici:client:connected channel).
	Sockets, Connects int
}

// FindNode returns the node on PATH, or an error that says how to get it.
func FindNode() (string, error) {
	p, err := exec.LookPath("node")
	if err != nil {
		return "", errors.New("node is not on PATH (Debian: apt-get install nodejs)")
	}
	return p, nil
}

// nodeLine is one line of client.mjs's output.
type nodeLine struct {
	Node     *string  `json:"node"`
	Undici   string   `json:"undici"`
	Done     bool     `json:"done"`
	Sockets  int      `json:"sockets"`
	Connects int      `json:"connects"`
	Call     int      `json:"call"`
	Lane     int      `json:"lane"`
	Round    int      `json:"round"`
	StartMS  float64  `json:"start_ms"`
	Connect  *float64 `json:"connect_ms"`
	TLS      *float64 `json:"tls_ms"`
	FirstMS  *float64 `json:"first_byte_ms"`
	EndMS    float64  `json:"end_ms"`
	Reused   *bool    `json:"reused"`
	Sock     int      `json:"sock"`
	Port     int      `json:"port"`
	ServerC  string   `json:"server_conn"`
	Error    string   `json:"error"`
}

// RunNode runs node/client.mjs as cfg says and reads its lines into
// events. The program runs in a process group of its own, killed whole
// when ctx ends, the timeout passes or the output breaks the protocol;
// RunNode returns only once it is gone.
func RunNode(ctx context.Context, cfg NodeConfig) (*NodeRun, error) {
	if cfg.Concurrency < 1 || cfg.Calls < 1 || cfg.Concurrency*cfg.Calls > MaxNodeCalls {
		return nil, fmt.Errorf("concurrency %d × calls %d: each must be at least 1, and the product at most %d", cfg.Concurrency, cfg.Calls, MaxNodeCalls)
	}
	switch cfg.Mode {
	case NodeAgent, NodeNoKeepAlive, NodeFetch:
	default:
		return nil, fmt.Errorf("mode %q: not one of %q", cfg.Mode, NodeModes)
	}
	node, err := FindNode()
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	arg, _ := json.Marshal(map[string]any{"url": cfg.URL, "mode": cfg.Mode, "concurrency": cfg.Concurrency, "calls": cfg.Calls})
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", clientJS, "--", string(arg))
	// The program's CA, and nothing of ours that would change what Node
	// does (NODE_OPTIONS, a proxy) passed on.
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	if cfg.CAFile != "" {
		cmd.Env = append(cmd.Env, "NODE_EXTRA_CA_CERTS="+cfg.CAFile)
	}
	var stderr strings.Builder
	cmd.Stderr = &limitWriter{w: &stderr, n: 4 << 10}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	ownGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	run := &NodeRun{PID: cmd.Process.Pid}
	perr := run.read(out, cfg.Concurrency*cfg.Calls)
	if perr != nil {
		killGroup(cmd) // a broken protocol: stop at once
	}
	werr := cmd.Wait()
	switch {
	case ctx.Err() != nil:
		return run, fmt.Errorf("node client (%s): %w", cfg.Mode, ctx.Err())
	case perr != nil:
		return run, fmt.Errorf("node client (%s): %w", cfg.Mode, perr)
	case werr != nil:
		return run, fmt.Errorf("node client (%s): %v: %s", cfg.Mode, werr, strings.TrimSpace(stderr.String()))
	}
	return run, nil
}

// read parses the program's lines: the version line, at most calls call
// lines, the done line. An error names the line.
func (run *NodeRun) read(r interface{ Read([]byte) (int, error) }, calls int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), 64<<10)
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	n, done := 0, false
	for sc.Scan() {
		n++
		text := sc.Bytes()
		bad := func(format string, a ...any) error {
			q := string(text)
			if len(q) > 200 {
				q = q[:200] + "…"
			}
			return fmt.Errorf("line %d %q: %s", n, q, fmt.Sprintf(format, a...))
		}
		var l nodeLine
		if err := json.Unmarshal(text, &l); err != nil {
			return bad("%v", err)
		}
		switch {
		case n == 1:
			if l.Node == nil || !strings.HasPrefix(*l.Node, "v") {
				return bad("the first line is not the version line")
			}
			run.Node, run.Undici = *l.Node, l.Undici
		case done:
			return bad("after the done line")
		case l.Done:
			done = true
			run.Sockets, run.Connects = l.Sockets, l.Connects
		default:
			if len(run.Events) == calls {
				return bad("more than %d calls", calls)
			}
			if l.Call < 1 || l.Lane < 1 || l.Round < 1 || (l.Error == "" && (l.Reused == nil || l.Sock < 1 || l.FirstMS == nil)) {
				return bad("a call line without call, lane, round, reused, sock or first_byte_ms")
			}
			e := sim.Event{Kind: sim.KindCall, Worker: l.Lane, Call: l.Round, Conn: l.Sock, LocalPort: l.Port,
				Start: ms(l.StartMS), At: ms(l.EndMS), Total: ms(l.EndMS - l.StartMS), Error: l.Error}
			if l.Reused != nil {
				e.Reused, e.NewConn = *l.Reused, !*l.Reused
			}
			if l.FirstMS != nil {
				e.StartTransfer = ms(*l.FirstMS - l.StartMS)
			}
			if l.Connect != nil {
				e.Connect = ms(*l.Connect - l.StartMS)
			}
			if l.TLS != nil {
				e.AppConnect = ms(*l.TLS - l.StartMS)
			}
			run.Events = append(run.Events, e)
			run.ServerConns = append(run.ServerConns, l.ServerC)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	switch {
	case n == 0:
		return errors.New("no output")
	case !done:
		return fmt.Errorf("ended after line %d without the done line", n)
	case len(run.Events) != calls:
		return fmt.Errorf("%d call lines, not %d", len(run.Events), calls)
	}
	return nil
}

// limitWriter keeps the first n bytes written to it.
type limitWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if k := min(len(p), l.n); k > 0 {
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
