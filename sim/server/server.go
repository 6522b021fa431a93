// Package server is `sim serve`: it serves the built site and streams runs
// of the pages' ```sim blocks to their widgets over one WebSocket endpoint,
// /ws, following PROTOCOL.md.
//
// One hub goroutine owns the clients and the queue of real runs. Each
// client is a web.Conn (a read pump and a single writer with a bounded
// queue): a slow client loses its real runs' oldest event batches, its
// model runs pause without holding a model slot, and a client that leaves
// its replies unread is dropped; none blocks the others. Every run is
// cancelled when its client leaves, and Close returns only when every
// goroutine the server started has ended.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/loopback"
	"github.com/connlab/connlab/sim/web"
)

// RealFunc runs the given variants of a block on real loopback servers
// (harness.RunBlock). It calls sink for every event as it happens, possibly
// from several goroutines, and returns when the run ends or ctx is done.
// Each returned variant's Scenario is the one that ran (a harness scales
// long timers and port ranges): the server models that scenario to set
// beside the measurement.
type RealFunc func(ctx context.Context, b *lab.Block, set []lab.Setting, variants []string, seed uint64, sink func(variant string, e *sim.Event)) (*lab.BlockResult, error)

// Options configure a Server. The zero value serves nothing but /ws with no
// pages; set at least Labs.
type Options struct {
	// Public is the built site's directory ("" serves no files).
	Public string
	// Labs are the directories whose Markdown pages hold ```sim blocks.
	Labs []string
	// Index is the index of those pages, shared with class mode; nil
	// builds one of Labs.
	Index *web.Index
	// Real runs blocks on real servers; nil answers real runs with an error.
	Real RealFunc
	// Tare measures the harness's own overhead of a reused call at an RTT
	// (harness.Tare); up to harness.MaxTare of it is added to the tolerance
	// of a real run's phase comparison for each round trip of a phase, as
	// sim validate does. nil: none.
	Tare func(ctx context.Context, rtt time.Duration) (time.Duration, error)
	// LoopbackHosts makes the server refuse requests whose Host header is
	// not a loopback name or address (127.0.0.0/8, ::1, localhost): a page
	// on another site cannot reach it by pointing its own name at 127.0.0.1
	// (DNS rebinding). Set it when listening on loopback.
	LoopbackHosts bool
	// Logf logs server events; nil discards them.
	Logf func(format string, args ...any)
	// Limits; zero fields take DefaultLimits' values.
	Limits Limits
}

// Limits bound what one client may ask and hold.
type Limits struct {
	// Limits bound one run: its requests and events (runsvc, as the
	// page's model has them).
	runsvc.Limits
	// ConnLimits bound the socket (web.Conn): its messages, its queue of
	// replies (QueueBytes: beyond it the oldest event batches of real runs
	// are dropped, and a client whose other replies alone exceed it is
	// dropped), pings and writes. HardMessageBytes is more than
	// MessageBytes: a message in between gets an error frame, a bigger one
	// closes the socket (code 1009).
	web.ConnLimits
	RunsPerSocket int     // runs in flight on one socket
	MessageRate   float64 // messages a second a socket may keep up sending
	MessageBurst  int     // messages a socket may send at once
	Strikes       int     // messages refused (over the rate) before the socket is closed
	ModelRunTime  time.Duration
	ModelRuns     int           // model runs at once on the whole server (default: one per core, at least 2)
	ModelQueue    int           // bytes queued for a client before its model run pauses
	StallWait     time.Duration // a paused model run keeps its slot while its client takes something this often
	BatchWait     time.Duration
	StatsEvery    time.Duration // real mode
	HeaderTimeout time.Duration // to read a request's headers (Serve)
}

// DefaultLimits are the limits of PROTOCOL.md.
var DefaultLimits = Limits{
	Limits:        runsvc.DefaultLimits,
	ConnLimits:    web.DefaultConnLimits,
	RunsPerSocket: 4,
	MessageRate:   20,
	MessageBurst:  60,
	Strikes:       100,
	ModelRunTime:  30 * time.Second,
	ModelQueue:    128 << 10,
	StallWait:     50 * time.Millisecond,
	BatchWait:     50 * time.Millisecond,
	StatsEvery:    time.Second,
	HeaderTimeout: 5 * time.Second,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if d.ModelRuns == 0 {
		d.ModelRuns = max(2, runtime.GOMAXPROCS(0))
	}
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fillD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	l.Limits = l.Limits.WithDefaults()
	l.ConnLimits = l.ConnLimits.WithDefaults()
	l.HardMessageBytes = max(l.HardMessageBytes, int64(l.MessageBytes)+1)
	fill(&l.RunsPerSocket, d.RunsPerSocket)
	if l.MessageRate <= 0 {
		l.MessageRate = d.MessageRate
	}
	fill(&l.MessageBurst, d.MessageBurst)
	fill(&l.Strikes, d.Strikes)
	fillD(&l.ModelRunTime, d.ModelRunTime)
	fill(&l.ModelRuns, d.ModelRuns)
	fill(&l.ModelQueue, d.ModelQueue)
	l.ModelQueue = min(l.ModelQueue, l.QueueBytes)
	fillD(&l.StallWait, d.StallWait)
	fillD(&l.BatchWait, d.BatchWait)
	fillD(&l.StatsEvery, d.StatsEvery)
	fillD(&l.HeaderTimeout, d.HeaderTimeout)
	return l
}

// A Server serves the site, /api/params and /ws. Create it with New, mount
// extra handlers on Mux, then Serve (or use Handler with your own
// http.Server and call Close).
type Server struct {
	opt      Options
	limits   Limits
	planner  *runsvc.Planner
	logf     func(string, ...any)
	pages    *pages
	hub      *hub
	mux      *http.ServeMux
	modelSem chan struct{}

	ctx     context.Context // cancelled by Close: ends every client and run
	cancel  context.CancelCauseFunc
	mu      sync.Mutex
	closing bool
	wg      sync.WaitGroup // every client and run goroutine
	once    sync.Once
	closed  chan struct{} // closed when wg is done, after Close

	clients, runs atomic.Int64 // open sockets and runs in flight (/api/status)

	// runEnded, when set (by tests), sees how each run ended: nil when it
	// finished, else the error that stopped it.
	runEnded func(id string, err error)

	// Pages is the number of pages with ```sim blocks found at start.
	Pages int
}

// New reads the pages and starts the hub. Pages that fail to parse are
// logged; a run that names one gets the parse error.
func New(opt Options) *Server {
	s := &Server{opt: opt, limits: opt.Limits.withDefaults(), logf: opt.Logf}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	index := opt.Index
	if index == nil {
		index = web.NewIndex(opt.Labs, func(f string, a ...any) { s.logf("sim serve: "+f, a...) })
	}
	s.pages = newPages(index, s.logf)
	s.planner = &runsvc.Planner{Lookup: s.pages.lookup, Limits: s.limits.Limits, Params: jsonNumbers}
	if opt.Real == nil {
		s.planner.NoReal = noReal
	}
	s.Pages = s.pages.load()
	s.modelSem = make(chan struct{}, s.limits.ModelRuns)
	s.hub = newHub()
	go s.hub.run()

	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /ws", s.serveWS)
	s.mux.HandleFunc("GET /api/params", serveParams)
	s.mux.HandleFunc("GET /api/status", s.serveStatus)
	if opt.Public != "" {
		s.mux.Handle("/", staticHandler(opt.Public))
	}
	return s
}

// Mux is the server's router, for extensions to add handlers to before
// serving.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// Handler is the server's HTTP handler: the mux behind the Host check.
func (s *Server) Handler() http.Handler {
	if !s.opt.LoopbackHosts {
		return s.mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopback.IsHost(r.Host) {
			http.Error(w, fmt.Sprintf("sim serve answers only requests to a loopback address (got Host %q)", r.Host), http.StatusForbidden)
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// Serve answers on ln until ctx is done, then shuts down gracefully: it
// stops accepting, closes every WebSocket (cancelling their runs) and
// returns when every goroutine has ended.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.limits.HeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second, // cleared by the WebSocket upgrade
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
	}
	// A connection on which no request has come yet (a browser's
	// preconnect, or a page reconnecting its socket as the server closes
	// it) holds Shutdown for 5 s and makes it fail: at shutdown such
	// connections are closed, and new ones as they come.
	var cmu sync.Mutex
	fresh := map[net.Conn]bool{}
	stopping := false
	hs.ConnState = func(c net.Conn, st http.ConnState) {
		cmu.Lock()
		defer cmu.Unlock()
		switch {
		case st == http.StateNew && stopping:
			c.Close()
		case st == http.StateNew:
			fresh[c] = true
		default:
			delete(fresh, c)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var err error
	served := false
	select {
	case <-ctx.Done():
	case err = <-errc:
		served = true
	}
	cmu.Lock()
	stopping = true
	for c := range fresh {
		c.Close()
	}
	clear(fresh)
	cmu.Unlock()
	if !s.closeWithin(10 * time.Second) {
		s.logf("sim serve: some runs did not stop within 10 s of shutdown; exiting anyway")
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	serr := hs.Shutdown(sctx)
	if !served {
		err = <-errc
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	if err == nil {
		err = serr
	}
	return err
}

// Close ends every WebSocket and run and waits for their goroutines. The
// HTTP side is the caller's (Serve shuts it down).
func (s *Server) Close() {
	s.closeWithin(-1)
}

// closeWithin is Close waiting at most d (d < 0: for ever) for the
// goroutines; false when some had not ended (a Real that ignores its ctx).
func (s *Server) closeWithin(d time.Duration) bool {
	s.once.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		close(s.hub.stop)
		<-s.hub.done
		s.cancel(web.ErrServerClosing)
		s.closed = make(chan struct{})
		go func() {
			s.wg.Wait()
			close(s.closed)
		}()
	})
	if d < 0 {
		<-s.closed
		return true
	}
	select {
	case <-s.closed:
		return true
	case <-time.After(d):
		return false
	}
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	lim := s.limits
	conn, err := web.Accept(w, r, web.ConnOptions{
		Limits:  lim.ConnLimits,
		Parent:  s.ctx,
		Dropped: droppedMsg,
	})
	if err != nil {
		return // answered (403 for a foreign Origin)
	}
	if !s.track(1) {
		conn.Close(web.ErrServerClosing)
		conn.Run(func(web.Message) {})
		return
	}
	defer s.wg.Done()
	s.clients.Add(1)
	defer s.clients.Add(-1)
	c := newClient(s, conn)
	if !s.hub.join(c) {
		conn.Close(web.ErrServerClosing)
		conn.Run(func(web.Message) {})
		return
	}
	conn.Run(func(m web.Message) {
		switch {
		case !c.bucket.Allow():
			c.refuse()
		case m.TooLarge:
			c.send(errorMsg("", "", "message too large: at most "+kib(lim.MessageBytes)+" per message"))
		case m.Binary:
			c.send(errorMsg("", "", "want JSON text frames, got a binary frame"))
		default:
			c.handle(m.Data)
		}
	})
	s.hub.part(c)
}

// track counts n more goroutines for Close to wait for; false once Close
// has begun (start nothing then).
func (s *Server) track(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.wg.Add(n)
	return true
}

// Status is what GET /api/status answers: what the server holds now, for
// a soak test or an operator to see that it returns to rest.
type Status struct {
	Clients    int64 `json:"clients"`    // open /ws sockets
	Runs       int64 `json:"runs"`       // runs in flight, queued ones included
	Goroutines int   `json:"goroutines"` // of the whole process
}

func (s *Server) serveStatus(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(Status{Clients: s.clients.Load(), Runs: s.runs.Load(), Goroutines: runtime.NumGoroutine()})
}

func serveParams(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(sim.Params())
}
