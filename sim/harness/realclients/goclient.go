// Package realclients runs the default HTTP clients of real programs as an
// application would and reports each call as a sim.Event, with new-versus-
// reused and the connection as the library itself tells them: Go's
// net/http (http.DefaultTransport's settings, httptrace) in this process,
// and Node's http.Agent and fetch (undici) in a Node program of ours,
// node/client.mjs, that this package starts. The lab "Your HTTP client's
// pool" is built on these runs; its claims are what the tests here see.
package realclients

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"sync"
	"time"

	"github.com/connlab/connlab/sim"
)

// Body is what a Go caller does with a response's body.
type Body string

const (
	// BodyDrainClose reads the body to its end, then closes it: what
	// net/http's documentation asks of every caller.
	BodyDrainClose Body = "drain_close"
	// BodyClose closes the body without reading it.
	BodyClose Body = "close"
	// BodyDrain reads the body to its end and never closes it.
	BodyDrain Body = "drain"
	// BodyNone neither reads nor closes the body.
	BodyNone Body = "none"
)

// Bodies lists the Body values.
var Bodies = []Body{BodyDrainClose, BodyClose, BodyDrain, BodyNone}

// GoConfig is one run of Go's net/http client.
type GoConfig struct {
	// URL is the one HTTPS (or HTTP) URL every call GETs.
	URL string
	// CAPEM is the CA the server's certificate chains to (nil: the
	// system's roots).
	CAPEM []byte
	// Concurrency goroutines each make Calls calls, one after the other.
	Concurrency, Calls int
	// MaxIdleConnsPerHost replaces http.DefaultTransport's (0 keeps it:
	// 0, which net/http reads as DefaultMaxIdleConnsPerHost, 2).
	MaxIdleConnsPerHost int
	// Body is what each call does with the response body ("" is
	// BodyDrainClose).
	Body Body
	// Lockstep makes rounds: every goroutine's k-th call starts once all
	// the (k-1)-th calls have ended and Pause has passed, so what the pool
	// holds between rounds is the library's doing, not the scheduler's.
	// Without it the goroutines run freely, as an application's do.
	Lockstep bool
	Pause    time.Duration
	// Timeout bounds the whole run (0: a minute).
	Timeout time.Duration
}

// GoRun is what a run of Go's client saw.
type GoRun struct {
	// Go is the runtime's version (runtime.Version()).
	Go string
	// Events are the calls, in the order they ended: Worker is the
	// goroutine and Call its call number (the round), both from 1; Conn
	// numbers the connections in the order the library first handed each
	// out (httptrace's GotConn), LocalPort is its local port; NewConn is
	// !GotConnInfo.Reused. Phase times are httptrace's, from the call's
	// start: DNS (none for an IP address), connect, TLS, first byte.
	Events []sim.Event
	// Conns is how many connections the library handed out (the highest
	// Conn).
	Conns int
	// Dials is how many connections the library opened (httptrace's
	// ConnectDone without error, TLS handshakes that then failed
	// included). It can exceed Conns: when no connection is idle, a call
	// starts a dial, and if another call frees a connection first it takes
	// that one; the dial goes on and its connection goes to the idle pool,
	// or is closed at once when the pool is full, never used.
	Dials int
	// Idle is how many calls GotConnInfo.WasIdle says took a connection
	// from the idle pool.
	Idle int
}

// MaxGoCalls bounds Concurrency × Calls.
const MaxGoCalls = 100_000

// RunGo runs Go's client as cfg says and reports each call. The transport
// is a clone of http.DefaultTransport (its pool, timeouts and HTTP/2
// attempt: the upstream speaks HTTP/1.1 only) with the CA added; it is
// closed at the end, so no connection outlives the run.
func RunGo(ctx context.Context, cfg GoConfig) (*GoRun, error) {
	if cfg.Concurrency < 1 || cfg.Calls < 1 || cfg.Concurrency*cfg.Calls > MaxGoCalls {
		return nil, fmt.Errorf("concurrency %d × calls %d: each must be at least 1, and the product at most %d", cfg.Concurrency, cfg.Calls, MaxGoCalls)
	}
	body := cfg.Body
	if body == "" {
		body = BodyDrainClose
	}
	switch body {
	case BodyDrainClose, BodyClose, BodyDrain, BodyNone:
	default:
		return nil, fmt.Errorf("body %q: not one of %q", body, Bodies)
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.MaxIdleConnsPerHost != 0 {
		tr.MaxIdleConnsPerHost = cfg.MaxIdleConnsPerHost
	}
	if cfg.CAPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CAPEM) {
			return nil, errors.New("CAPEM holds no certificate")
		}
		if tr.TLSClientConfig == nil {
			tr.TLSClientConfig = &tls.Config{}
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	run := &GoRun{Go: runtime.Version()}
	var (
		mu    sync.Mutex
		ids   = map[net.Conn]int{}
		leak  []io.Closer // bodies left open (BodyDrain, BodyNone), closed at the end
		first error
	)
	defer func() {
		for _, b := range leak {
			b.Close()
		}
	}()
	t0 := time.Now()
	record := func(e sim.Event, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && first == nil {
			first = fmt.Errorf("goroutine %d call %d: %w", e.Worker, e.Call, err)
		}
		run.Events = append(run.Events, e)
	}

	call := func(worker, n int) {
		var (
			start                     = time.Now()
			e                         = sim.Event{Kind: sim.KindCall, Worker: worker, Call: n, Start: start.Sub(t0)}
			dnsDone, connDone, tlsEnd time.Duration
			since                     = func() time.Duration { return time.Since(start) }
		)
		// A dial the call started goes on in its own goroutine when the
		// call got another connection meanwhile (net/http's dial race), and
		// may report to this trace after Do returned: cm guards what the
		// trace writes.
		var cm sync.Mutex
		at := func(p *time.Duration) func() {
			return func() { cm.Lock(); *p = since(); cm.Unlock() }
		}
		trace := &httptrace.ClientTrace{
			DNSDone: func(httptrace.DNSDoneInfo) { at(&dnsDone)() },
			ConnectDone: func(_, _ string, err error) {
				at(&connDone)()
				if err == nil {
					mu.Lock()
					run.Dials++
					mu.Unlock()
				}
			},
			TLSHandshakeDone:     func(tls.ConnectionState, error) { at(&tlsEnd)() },
			GotFirstResponseByte: at(&e.StartTransfer),
			GotConn: func(info httptrace.GotConnInfo) {
				mu.Lock()
				id, ok := ids[info.Conn]
				if !ok {
					id = len(ids) + 1
					ids[info.Conn] = id
				}
				if info.WasIdle {
					run.Idle++
				}
				mu.Unlock()
				cm.Lock()
				defer cm.Unlock()
				e.Conn, e.Reused, e.NewConn = id, info.Reused, !info.Reused
				if a, ok := info.Conn.LocalAddr().(*net.TCPAddr); ok {
					e.LocalPort = a.Port
				}
				if info.Reused {
					e.Queue = since()
				}
			},
		}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, cfg.URL, nil)
		if err != nil {
			record(e, err)
			return
		}
		resp, err := client.Do(req)
		if err == nil {
			switch body {
			case BodyDrainClose:
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			case BodyClose:
				resp.Body.Close()
			case BodyDrain:
				_, err = io.Copy(io.Discard, resp.Body)
				mu.Lock()
				leak = append(leak, resp.Body)
				mu.Unlock()
			case BodyNone:
				mu.Lock()
				leak = append(leak, resp.Body)
				mu.Unlock()
			}
		}
		end := time.Now()
		cm.Lock()
		defer cm.Unlock()
		e.Total, e.At = end.Sub(start), end.Sub(t0)
		// The trace's times are cumulative from the start, as curl's are;
		// a reused connection has none of the first three, as curl's.
		if e.NewConn {
			e.NameLookup = dnsDone
			e.Connect = max(connDone, dnsDone)
			e.AppConnect = tlsEnd
		}
		if err != nil {
			e.Error = err.Error()
		}
		record(e, err)
	}

	var wg sync.WaitGroup
	if cfg.Lockstep {
		for n := 1; n <= cfg.Calls && ctx.Err() == nil; n++ {
			if n > 1 && cfg.Pause > 0 {
				select {
				case <-time.After(cfg.Pause):
				case <-ctx.Done():
				}
			}
			for w := 1; w <= cfg.Concurrency; w++ {
				wg.Add(1)
				go func() { defer wg.Done(); call(w, n) }()
			}
			wg.Wait()
		}
	} else {
		for w := 1; w <= cfg.Concurrency; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 1; n <= cfg.Calls && ctx.Err() == nil; n++ {
					call(w, n)
				}
			}()
		}
		wg.Wait()
	}
	run.Conns = len(ids)
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return run, first
}
