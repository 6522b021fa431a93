package sim

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connlab/connlab/sim/internal/msgf"
)

// A Scenario holds every knob of one simulated run. Durations are
// time.Duration; counts are plain ints. The zero Scenario is not useful: start
// from Default() and change what a lab or a flag asks for with Set, then call
// Validate before running.
//
// Each field carries its lab key, limits and help text in struct tags, so the
// lab reader, `sim run --set`, the WebSocket server and the widget's controls
// all share one definition (see Params).
type Scenario struct {
	// Process model and load.
	Mode            Mode          `key:"mode" help:"web: requests arrive at long-lived worker processes (PHP-FPM, php -S); cli: every request is a fresh PHP CLI process, so nothing outlives it"`
	Requests        int           `key:"requests" min:"0" max:"10000000" help:"web requests to send (0: until duration ends)"`
	Duration        time.Duration `key:"duration" min:"0" max:"24h" help:"stop sending new requests after this time (0: until requests are sent)"`
	Load            Load          `key:"load" help:"closed: concurrency users each wait for their answer (siege -c); open: requests arrive at a fixed rate whatever happens"`
	Concurrency     int           `key:"concurrency" min:"1" max:"100000" help:"closed loop: simultaneous users"`
	ThinkTime       time.Duration `key:"think_time" min:"0" max:"1h" help:"closed loop: pause of each user between an answer and its next request"`
	PauseEvery      int           `key:"pause_every" min:"0" max:"10000000" help:"closed loop: after every N requests of a user, pause for 'pause' (0: never)"`
	Pause           time.Duration `key:"pause" min:"0" max:"24h" help:"length of the pause taken every pause_every requests"`
	Rate            float64       `key:"rate" min:"0" max:"1000000" unit:"req/s" help:"open loop: arrival rate"`
	Arrival         Arrival       `key:"arrival" help:"open loop: evenly spaced or Poisson arrivals"`
	Workers         int           `key:"workers" min:"1" max:"10000" help:"worker processes (PHP-FPM children, nginx workers); each owns its own pools"`
	Threads         int           `key:"threads" min:"0" max:"100000" help:"requests one worker serves at once (1: PHP; 0: unlimited, event-driven like nginx)"`
	Dispatch        Dispatch      `key:"dispatch" help:"queue: the worker idle longest takes the next request (a shared accept queue); round-robin; random"`
	WorkerShares    []float64     `key:"worker_shares" help:"tiers: the share of the tier's new connections each worker accepts, as a real run measured it (the kernel hands a connection to whichever worker takes it first, and a kept one stays with that worker); empty: dispatch spreads them (in turn, or at random)"`
	MaxRequests     int           `key:"max_requests" min:"0" max:"10000000" help:"pm.max_requests: a worker is replaced after this many requests and its pools are dropped (0: never)"`
	AppTime         time.Duration `key:"app_time" min:"0" max:"60s" help:"time a worker spends on a request besides its calls"`
	CallsPerRequest int           `key:"calls_per_request" min:"0" max:"1000" help:"upstream calls each request makes, one after another"`
	ClientRTT       time.Duration `key:"client_rtt" min:"0" max:"10s" help:"round trip between the load generator and the workers"`

	// Reuse policy.
	Reuse             Reuse      `key:"reuse" help:"who keeps connections"`
	ShareSets         [][]string `key:"share_sets" help:"CURL_LOCK_DATA_* sets given to the share handle, cycled over requests (dns, connect, ssl_session, psl)"`
	PoolMax           int        `key:"pool_max" min:"0" max:"100000" help:"pool: most connections open at once (0: unlimited)"`
	PoolMaxIdle       int        `key:"pool_max_idle" min:"0" max:"100000" help:"pool: most idle connections kept; a returned connection beyond it is closed (Go: MaxIdleConnsPerHost = 2; 0: unlimited)"`
	PoolFull          PoolFull   `key:"pool_full" help:"pool at pool_max: wait for a free connection (Go MaxConnsPerHost) or fail (redis-py ConnectionError)"`
	UpstreamKeepalive int        `key:"upstream_keepalive" min:"1" max:"100000" help:"nginx 'keepalive N': idle connections cached per worker; the least recently used beyond N are closed"`
	Closer            Side       `key:"closer" help:"side that closes first when a connection is not kept; that side holds TIME_WAIT"`

	// Chained tiers (see chain.go): a block's [[tier]] tables.
	Tiers             []TierSpec    `key:"-"`
	ClientKeepalive   bool          `key:"client_keepalive" help:"tiers: each user of the load keeps its connection to the first tier (HTTP keep-alive); false: a new one per request, as siege's default connection = close"`
	ClientConnTime    time.Duration `key:"client_conn_time" min:"0" max:"10s" help:"tiers: the calling worker's own work to open (and later close) each new connection to the next tier"`
	ServerClosesFirst float64       `key:"server_closes_first" min:"0" max:"1" help:"tiers: of the connections that end with their exchange (not kept), the share whose TIME_WAIT lands on this, the accepting, tier: both ends close at once and the first FIN decides"`
	SimultaneousClose float64       `key:"simultaneous_close" min:"0" max:"1" help:"tiers: of those connections, the share where the FINs cross and both ends hold a TIME_WAIT socket"`
	ConnParallel      bool          `key:"conn_parallel" help:"tiers: the tier's work to accept and to open connections runs beside its one-at-a-time work, on a CPU of its own, as for a program whose connection work is system calls made outside its lock; off in every preset (a CPython app's waits for its GIL: the recorded stack runs never saw its one process use more than a CPU; nginx's and Redis's is their event loop's)"`
	CPUs              int           `key:"cpus" min:"0" max:"1024" help:"tiers: the machine's CPUs, shared by every tier's processes and the load generator (0: each process gets a CPU whenever it has work)"`
	CPUBackground     float64       `key:"cpu_background" min:"0" max:"1024" help:"tiers: other programs' work on the same machine, in CPUs (measured: its busy time that was not the stack's); the tiers share what is left of cpus"`
	LoadCPU           time.Duration `key:"load_cpu" min:"0" max:"1s" help:"tiers: the load generator's own CPU per request (sending it, reading the answer), before each request goes out; on the shared cpus"`
	LoadStalls        float64       `key:"load_stalls" min:"0" max:"100000" unit:"/s" help:"tiers: how often the load generator is held off the CPUs on a busy machine (measured: how often a goroutine of it that sleeps 1 ms wakes up over 0.2 ms late); every user's next request waits for the stall to end"`
	LoadStall         time.Duration `key:"load_stall" min:"0" max:"10s" help:"tiers: the median length of those stalls (measured, as load_stalls)"`
	LoadStallP99      time.Duration `key:"load_stall_p99" min:"0" max:"10s" help:"tiers: their 99th percentile: the stalls' lengths are drawn from a log-normal distribution through the median and this (0: all as long as the median)"`

	// Network and protocols.
	RTT                time.Duration `key:"rtt" min:"0" max:"10s" help:"round-trip time between client and server"`
	DNS                time.Duration `key:"dns" min:"0" max:"10s" help:"time of one DNS lookup that misses the cache"`
	DNSCacheTimeout    time.Duration `key:"dns_cache_timeout" min:"0" max:"24h" help:"how long a resolved name is kept (curl: 60 s; 0: never cached)"`
	TLS                TLSVersion    `key:"tls" help:"TLS version (none: plain TCP)"`
	SetupRTTs          int           `key:"setup_rtts" min:"0" max:"10" help:"round trips a client spends on a new connection, after TLS, before its first request (go-redis v9 sends HELLO: 1; HTTP: 0)"`
	TLSResume          bool          `key:"tls_resume" help:"resume a cached TLS session instead of a full handshake"`
	EarlyData          bool          `key:"early_data" help:"TLS 1.3 0-RTT: send the request with a resumed handshake"`
	Cert               Cert          `key:"cert" help:"server certificate key: decides handshake CPU time"`
	HandshakeCPU       time.Duration `key:"handshake_cpu" min:"0" max:"1s" help:"client and server CPU of a full TLS handshake (0: OpenSSL's speed for the cert, 0.85 ms for RSA-2048, 0.208 ms for P-256)"`
	ResumeCPU          time.Duration `key:"resume_cpu" min:"0" max:"1s" help:"client and server CPU of a resumed TLS handshake (0: OpenSSL's speed, 0.11 ms for TLS 1.3's two P-256 ECDHE, none for TLS 1.2)"`
	ConnectCPU         time.Duration `key:"connect_cpu" min:"0" max:"1s" help:"CPU the client spends opening a TCP connection besides its round trip (socket, connect, noticing it is up): a real run measures it for its PHP (1-2 ms for PHP 8.5 in WebAssembly)"`
	ClientCPU          time.Duration `key:"client_cpu" min:"0" max:"1s" help:"CPU the client spends on every call before its request leaves (building it, encrypting it), besides the handshake: 0 for native curl; a real run measures it for PHP 8.5 in WebAssembly (about 1 ms)"`
	DropCPU            time.Duration `key:"drop_cpu" min:"0" max:"1s" help:"CPU the client spends dropping a kept connection it finds closed by the server (or too old) when a call looks in its pool: shutting its TLS down and closing the socket, before the call's name lookup: 0 for native curl; a real run measures it for PHP 8.5 in WebAssembly"`
	ClientReadCPU      time.Duration `key:"client_read_cpu" min:"0" max:"1s" help:"CPU the client spends on every call after the answer's first byte (decrypting and reading the rest): 0 for native curl; a real run measures it for PHP 8.5 in WebAssembly"`
	ResponseBytes      int           `key:"response_bytes" min:"0" max:"1000000000" unit:"B" help:"response size; beyond the initial window, slow start adds round trips"`
	MSS                int           `key:"mss" min:"536" max:"65535" unit:"B" help:"TCP maximum segment size"`
	InitCwnd           int           `key:"init_cwnd" min:"1" max:"1000" unit:"segments" help:"initial congestion window (Linux: 10)"`
	SlowStartAfterIdle bool          `key:"slow_start_after_idle" help:"tcp_slow_start_after_idle: an idle connection restarts from the initial window"`

	// Server.
	ServerTime        time.Duration `key:"server_time" min:"0" max:"60s" help:"server work per request"`
	ServerJitter      float64       `key:"server_jitter" min:"0" max:"1" help:"server_time varies uniformly by this fraction (0.1: ±10%)"`
	ServerConcurrency int           `key:"server_concurrency" min:"0" max:"100000" help:"requests the server works on at once; others queue (0: unlimited)"`
	ServerConnTime    time.Duration `key:"server_conn_time" min:"0" max:"10s" help:"server work to accept and set up each new connection"`
	KeepaliveTimeout  time.Duration `key:"keepalive_timeout" min:"0" max:"24h" help:"server closes a connection idle this long (nginx: 75 s; 0: never)"`
	KeepaliveRequests int           `key:"keepalive_requests" min:"0" max:"100000000" help:"server closes a connection after this many requests (nginx: 1000; 0: unlimited)"`

	// Client timers.
	MaxIdleAge  time.Duration `key:"max_idle_age" min:"0" max:"24h" help:"client does not reuse a connection idle longer (curl CURLOPT_MAXAGE_CONN: 118 s; 0: no limit)"`
	MaxLifetime time.Duration `key:"max_lifetime" min:"0" max:"720h" help:"client does not reuse a connection older than this (curl CURLOPT_MAXLIFETIME_CONN: 24 h since 8.17; 0: no limit)"`
	RetryOnRace bool          `key:"retry_on_race" help:"a request that meets a connection the server just closed is sent again on a new one (curl does)"`

	// Ports and TIME_WAIT (client side).
	PortRange PortRange `key:"port_range" help:"ip_local_port_range, as \"low-high\" (Linux: 32768-60999)"`
	TWReuse   int       `key:"tw_reuse" min:"0" max:"2" help:"tcp_tw_reuse: 0 off, 1 on, 2 loopback only (Linux default); a TIME_WAIT port is reused after 1 s"`
	Loopback  bool      `key:"loopback" help:"the server is on a loopback address (for tw_reuse = 2)"`

	// Observation.
	Linger         time.Duration `key:"linger" min:"0" max:"1h" help:"keep simulating timers (idle closes, TIME_WAIT expiry) this long after the last answer"`
	SeriesInterval time.Duration `key:"series_interval" min:"1ms" max:"1h" help:"sampling interval of the time series"`

	// Real runs.
	Setup Setup `key:"setup" fixed:"true" help:"what a real run (sim validate, Run real) runs the block on; the model ignores it. http: worker processes with curl-like clients → an HTTPS/HTTP upstream; redis: worker processes with go-redis → Redis; proxy: a load generator → a reverse proxy (Go, or nginx) → the upstream; php: the lab's PHP scripts on PHP 8.5 in WebAssembly (Node.js), one runtime per worker process; php-native: the same scripts on the php on PATH, one php -S per worker; stack: a block's [[tier]] tables on real nginx, a Python app (gunicorn or Flask's server) and redis-server; auto: stack for a block with tiers, else proxy when a variant uses reuse = \"upstream-keepalive\", else http"`
}

// PortRange is an inclusive range of local ports.
type PortRange struct{ Lo, Hi int }

// Size is the number of ports in the range.
func (r PortRange) Size() int { return r.Hi - r.Lo + 1 }

func (r PortRange) String() string { return msgf.Sprintf("%d-%d", r.Lo, r.Hi) }

// ParsePortRange reads "low-high" or "low high" (the sysctl's own format).
func ParsePortRange(s string) (PortRange, error) {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == ' ' || r == '\t' })
	if len(f) != 2 {
		return PortRange{}, msgf.Errorf("want \"low-high\", e.g. \"32768-60999\", got %q", s)
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return PortRange{}, msgf.Errorf("want two port numbers, got %q", s)
	}
	if lo < 1 || hi > 65535 || lo > hi {
		return PortRange{}, msgf.Errorf("want 1 <= low <= high <= 65535, got %q", s)
	}
	return PortRange{lo, hi}, nil
}

// Default returns the scenario every lab starts from. The values are the
// defaults of the software the labs talk about:
// curl's 60 s DNS cache and 118 s idle age, nginx's 75 s keep-alive timeout
// and 1000 requests, Linux's port range, tcp_tw_reuse = 2 and initial window.
func Default() Scenario {
	return Scenario{
		Mode:               ModeWeb,
		Requests:           10,
		Load:               LoadClosed,
		Concurrency:        1,
		Arrival:            ArrivalUniform,
		Workers:            1,
		Threads:            1,
		Dispatch:           DispatchQueue,
		CallsPerRequest:    1,
		Reuse:              ReuseRequest,
		ShareSets:          [][]string{{"dns", "connect", "ssl_session"}},
		PoolFull:           PoolFullWait,
		UpstreamKeepalive:  32,
		Closer:             SideClient,
		ClientKeepalive:    true,
		RTT:                20 * time.Millisecond,
		DNS:                10 * time.Millisecond,
		DNSCacheTimeout:    60 * time.Second,
		TLS:                TLS13,
		TLSResume:          true,
		Cert:               CertRSA2048,
		ResponseBytes:      1000,
		MSS:                1460,
		InitCwnd:           10,
		SlowStartAfterIdle: true,
		ServerTime:         2 * time.Millisecond,
		KeepaliveTimeout:   75 * time.Second,
		KeepaliveRequests:  1000,
		MaxIdleAge:         118 * time.Second,
		MaxLifetime:        24 * time.Hour,
		RetryOnRace:        true,
		PortRange:          PortRange{32768, 60999},
		TWReuse:            2,
		SeriesInterval:     time.Second,
		Setup:              "auto",
	}
}

// MaxRunRequests bounds the requests of one run, whatever the load shape.
const MaxRunRequests = 10_000_000

// Validate checks what single keys cannot: combinations, the PHP rules for
// share option sets, and the size of the run; and that each enum key holds
// one of its words, which Set ensures but a Scenario built in Go may not.
// The error names the key.
func (s *Scenario) Validate() error {
	v := reflect.ValueOf(s).Elem()
	for i := range params {
		p := &params[i]
		if p.Kind == "enum" && !slices.Contains(p.Enum, v.Field(p.index).String()) {
			// Set checks the words; a Scenario built in Go may hold any.
			return paramErr(p.Key, "want one of %s, got %q", strings.Join(p.Enum, ", "), v.Field(p.index).String())
		}
	}
	if len(s.Tiers) > 0 {
		if err := s.validateChain(); err != nil {
			return err
		}
	} else if err := s.validateNoChain(); err != nil {
		return err
	}
	if s.Requests == 0 && s.Duration == 0 {
		return paramErr("requests", "set requests or duration, or the run never ends")
	}
	if s.Load == LoadOpen && s.Rate <= 0 {
		return paramErr("rate", "an open-loop load needs a rate above 0")
	}
	if s.Load == LoadOpen && s.Requests == 0 && s.Rate*s.Duration.Seconds() > MaxRunRequests {
		return paramErr("duration", "rate × duration = %.0f requests, more than the limit of %d", s.Rate*s.Duration.Seconds(), MaxRunRequests)
	}
	if s.PauseEvery > 0 && s.Load == LoadOpen {
		return paramErr("pause_every", "pauses apply to a closed loop (load = \"closed\")")
	}
	if s.EarlyData && s.TLS != TLS13 {
		return paramErr("early_data", "0-RTT needs tls = \"1.3\"")
	}
	if s.Reuse == ReusePool && s.PoolMax > 0 && s.PoolMaxIdle > s.PoolMax {
		return paramErr("pool_max_idle", "%d idle connections cannot exceed pool_max = %d", s.PoolMaxIdle, s.PoolMax)
	}
	if len(s.ShareSets) == 0 {
		return paramErr("share_sets", "give at least one set")
	}
	for i, set := range s.ShareSets {
		if _, err := ShareMask(set); err != nil {
			if s.Reuse == ReuseProcess || err.Cookie {
				return &ParamError{Key: msgf.Sprintf("share_sets[%d]", i), Msg: err.Error()}
			}
		}
	}
	return nil
}

// ShareError mirrors what PHP 8.5 throws for a bad argument to
// curl_share_init_persistent().
type ShareError struct {
	Msg    string
	Cookie bool // the set names CURL_LOCK_DATA_COOKIE
}

func (e *ShareError) Error() string { return e.Msg }

// Share option bits, as curl_share_init_persistent() folds them into the
// handle's identity (php-src ext/curl/share.c): the set, not its order or
// repetitions, names the handle.
const (
	ShareDNS uint8 = 1 << iota
	ShareConnect
	ShareSSLSession
	SharePSL
)

// ShareMask folds a set of CURL_LOCK_DATA_* names ("dns" or
// "CURL_LOCK_DATA_DNS", any case) into its bitmask, with PHP 8.5's errors.
// Another constant's name (CURLOPT_URL) is the ValueError PHP throws for an
// int that is no CURL_LOCK_DATA_* value; a PHP string literal ('connect',
// quoted) is the TypeError for an element that is not an int.
func ShareMask(set []string) (uint8, *ShareError) {
	if len(set) == 0 {
		return 0, &ShareError{Msg: string(ErrorShareEmpty)}
	}
	var m uint8
	for _, name := range set {
		if n := strings.TrimSpace(name); len(n) >= 2 && n[0] == '\'' && n[len(n)-1] == '\'' {
			return 0, &ShareError{Msg: string(ErrorShareType) + ", string given"}
		}
		switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "curl_lock_data_") {
		case "dns":
			m |= ShareDNS
		case "connect":
			m |= ShareConnect
		case "ssl_session":
			m |= ShareSSLSession
		case "psl":
			m |= SharePSL
		case "cookie":
			return 0, &ShareError{Cookie: true, Msg: string(ErrorShareCookie)}
		default:
			return 0, &ShareError{Msg: string(ErrorShareOption)}
		}
	}
	return m, nil
}
