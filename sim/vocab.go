package sim

import "reflect"

// The vocabulary: every closed set of words a scenario, an event or a
// result uses, as a named type with its constants. Each value list below is
// built from the constants, the scenario's enum keys take their values from
// it (Params), and `sim schema --json` exports it (Enums); a test holds the
// lists to the constants declared in the package.

// Mode is the client's process model (scenario key mode).
type Mode string

const (
	ModeWeb Mode = "web" // long-lived worker processes (PHP-FPM, php -S)
	ModeCLI Mode = "cli" // a fresh PHP CLI process per request: nothing outlives it
)

// Load is the shape of the traffic (scenario key load).
type Load string

const (
	LoadClosed Load = "closed" // concurrency users each wait for their answer (siege -c)
	LoadOpen   Load = "open"   // requests arrive at a fixed rate whatever happens
)

// Arrival spaces the requests of an open-loop load (scenario key arrival).
type Arrival string

const (
	ArrivalUniform Arrival = "uniform" // evenly spaced
	ArrivalPoisson Arrival = "poisson" // exponential gaps around the rate
)

// Dispatch is how an arriving request finds a worker (scenario key
// dispatch).
type Dispatch string

const (
	DispatchQueue      Dispatch = "queue"       // the worker idle longest takes it (a shared accept queue)
	DispatchRoundRobin Dispatch = "round-robin" // workers in turn, queueing at a busy one
	DispatchRandom     Dispatch = "random"      // a random worker, queueing at a busy one
)

// Reuse is who keeps connections between calls (scenario key reuse).
type Reuse string

const (
	ReuseNone              Reuse = "none"               // one connection per call
	ReuseRequest           Reuse = "request"            // kept for one web request (curl_share_init, a reused handle)
	ReuseProcess           Reuse = "process"            // kept by the worker process (curl_share_init_persistent)
	ReusePool              Reuse = "pool"               // a pool per worker process (redis-py, Go's Transport)
	ReuseUpstreamKeepalive Reuse = "upstream-keepalive" // nginx "keepalive N": an idle cache per worker
)

// reuseMeaning says what each value keeps, for the key's help.
var reuseMeaning = map[Reuse]string{
	ReuseNone:              "one per call",
	ReuseRequest:           "curl_share_init or a reused handle",
	ReuseProcess:           "curl_share_init_persistent",
	ReusePool:              "redis-py, Go Transport",
	ReuseUpstreamKeepalive: "nginx keepalive N",
}

// policy is a Reuse as the engine keeps it: its place in reuses
// (TestPolicyIsReuse holds the two lists to one order).
type policy uint8

const (
	polNone policy = iota
	polRequest
	polProcess
	polPool
	polUpstream
)

// policyOf is r's policy; a value not in reuses (Validate refuses it) is
// kept for the request.
func policyOf(r Reuse) policy {
	for i, x := range reuses {
		if x == r {
			return policy(i)
		}
	}
	return polRequest
}

// PoolFull is what a call does when its pool is at pool_max (scenario key
// pool_full).
type PoolFull string

const (
	PoolFullWait  PoolFull = "wait"  // wait for a connection (Go's MaxConnsPerHost)
	PoolFullError PoolFull = "error" // fail at once (redis-py's ConnectionError)
)

// Side is one end of a connection: the side that closes first (scenario key
// closer) or the side an event is about (Event.By).
type Side string

const (
	SideClient Side = "client"
	SideServer Side = "server"
)

// TLSVersion is the TLS version of the connections (scenario key tls).
type TLSVersion string

const (
	TLSNone TLSVersion = "none" // plain TCP
	TLS12   TLSVersion = "1.2"
	TLS13   TLSVersion = "1.3"
)

// Cert is the server certificate's key type, which decides the CPU time of a
// full handshake (scenario key cert).
type Cert string

const (
	CertRSA2048   Cert = "rsa2048"
	CertECDSAP256 Cert = "ecdsa-p256"
)

// Setup is what a real run (sim validate, a page's "Run real") runs a block
// on (scenario key setup); the model ignores it.
type Setup string

const (
	SetupAuto  Setup = "auto"  // proxy when a variant uses reuse = "upstream-keepalive", else http
	SetupHTTP  Setup = "http"  // worker processes with curl-like clients → an HTTPS/HTTP upstream
	SetupRedis Setup = "redis" // worker processes with go-redis → Redis
	SetupProxy Setup = "proxy" // a load generator → a reverse proxy (Go, or nginx) → the upstream
	// SetupPHP: the lab's own PHP scripts on PHP 8.5 in WebAssembly, one
	// runtime per worker process (the http setup's Go workers stand in when
	// Node.js or the package is not installed).
	SetupPHP Setup = "php"
	// SetupPHPNative: the same scripts on the php on PATH (Debian's PHP
	// 8.2: the "before 8.5" row), one php -S process per worker.
	SetupPHPNative Setup = "php-native"
	SetupStack     Setup = "stack" // a block's [[tier]] tables on the real programs: a load → nginx → a Python app (gunicorn or Flask's server) → redis-server
)

// Handshake is the TLS handshake a new connection did (Event.Handshake;
// empty without TLS).
type Handshake string

const (
	HandshakeFull    Handshake = "full"    // certificate and key exchange
	HandshakeResumed Handshake = "resumed" // a cached session, one round trip
	Handshake0RTT    Handshake = "0-rtt"   // TLS 1.3 early data: the request rides with the ClientHello
)

// CloseReason says why a connection closed (Event.Reason of a close event)
// or why a TIME_WAIT socket ended early (of a time_wait_end event).
type CloseReason string

const (
	// Client closes: the handle, pool or process that kept it is gone...
	ReasonEndOfCall    CloseReason = "end-of-call"    // reuse = none: the call's handle is freed
	ReasonEndOfRequest CloseReason = "end-of-request" // the request's handle is freed (PHP frees it at the end of the request)
	ReasonWorkerExit   CloseReason = "worker-exit"    // the worker process exited (max_requests, mode = cli)
	// The exchange ended and the caller does not keep the connection
	// (reuse = none, HTTP/1.0): both ends close at once, and the first FIN
	// decides who holds the TIME_WAIT (closer, server_closes_first) ...
	ReasonNoReuse CloseReason = "no-reuse"
	// ... or the FINs crossed and each end holds one (simultaneous_close).
	ReasonSimultaneous CloseReason = "simultaneous"
	// ... or it may not be used again.
	ReasonMaxIdleAge  CloseReason = "max-idle-age" // idle longer than max_idle_age
	ReasonMaxLifetime CloseReason = "max-lifetime" // older than max_lifetime
	ReasonIdleFull    CloseReason = "idle-full"    // returned to a pool already holding pool_max_idle idle ones
	ReasonEvict       CloseReason = "evict"        // nginx's keepalive N: the least recently used beyond N

	// Server closes.
	ReasonIdleTimeout       CloseReason = "idle-timeout"       // idle for keepalive_timeout
	ReasonKeepaliveRequests CloseReason = "keepalive-requests" // served keepalive_requests requests

	// The client finds the server closed it.
	ReasonDead  CloseReason = "dead"  // the server's FIN arrived while it was idle: dropped without a TIME_WAIT
	ReasonReset CloseReason = "reset" // a request met a server that had closed: answered with a reset (keep-alive race)
	// ReasonClosed is the real run's word for ReasonDead: the server had
	// closed the connection when the client closed its side.
	ReasonClosed CloseReason = "closed"

	// Only in real runs: the harness's own connections.
	ReasonShutdown CloseReason = "shutdown" // the proxy stops at the end of the run
	ReasonWarmUp   CloseReason = "warm-up"  // a connection opened before the run to warm the worker up

	// ReasonReused ends a TIME_WAIT early: tcp_tw_reuse gave its port to a
	// new connection.
	ReasonReused CloseReason = "reused"
	// ReasonTakenOver ends a server's TIME_WAIT early: a new SYN from the
	// same client port (the same four-tuple) took the socket over.
	ReasonTakenOver CloseReason = "taken-over-by-syn"
)

// ErrorKind is how the error text of a failed call or request begins: the
// failures the lessons are about, which are data in the results. A real run
// appends what the system reported in brackets; ErrorKindOf reads the kind
// back.
type ErrorKind string

const (
	ErrorNoPort     ErrorKind = "EADDRNOTAVAIL: connect() found no free local port (errno 99)"
	ErrorRace       ErrorKind = "ECONNRESET: the server closed the kept connection as the request was sent (keep-alive race)"
	ErrorPoolFull   ErrorKind = "ConnectionError: the pool is at pool_max connections"
	ErrorCallFailed ErrorKind = "a call failed" // a request's error: one of its calls failed

	// PHP 8.5's errors for a bad argument of curl_share_init_persistent(),
	// word for word as PHP 8.5.10 throws them: the variant is rejected
	// before any traffic. ErrorShareType is followed by the type given
	// ("string given").
	ErrorShareEmpty  ErrorKind = "ValueError: " + shareFn + " must not be empty"
	ErrorShareCookie ErrorKind = "ValueError: " + shareFn + " must not contain CURL_LOCK_DATA_COOKIE because sharing cookies across PHP requests is unsafe"
	ErrorShareOption ErrorKind = "ValueError: " + shareFn + " must contain only CURL_LOCK_DATA_* constants"
	ErrorShareType   ErrorKind = "TypeError: " + shareFn + " must contain only int values"
)

const shareFn = "curl_share_init_persistent(): Argument #1 ($share_options)"

// ErrorKindOf returns the kind an error text begins with, or false for
// another failure (one a real run met that no lesson is about).
func ErrorKindOf(text string) (ErrorKind, bool) {
	for _, k := range errorKinds {
		if len(text) >= len(k) && text[:len(k)] == string(k) {
			return k, true
		}
	}
	return "", false
}

// ParamKind is the kind of a scenario key's value (sim params), which
// decides how it is read, checked and shown as a control.
type ParamKind string

const (
	ParamDuration ParamKind = "duration" // "40ms", "2s"
	ParamInt      ParamKind = "int"
	ParamFloat    ParamKind = "float"
	ParamBool     ParamKind = "bool"
	ParamEnum     ParamKind = "enum"   // one word of a vocabulary type
	ParamPorts    ParamKind = "ports"  // a port range, "32768-60999"
	ParamSets     ParamKind = "sets"   // lists of words, [["dns", "tcp"]]
	ParamShares   ParamKind = "shares" // a list of fractions, [0.5, 0.5]
)

// The values of each type, in the order the help and the controls list
// them.
var (
	modes        = []Mode{ModeWeb, ModeCLI}
	loads        = []Load{LoadClosed, LoadOpen}
	arrivals     = []Arrival{ArrivalUniform, ArrivalPoisson}
	dispatches   = []Dispatch{DispatchQueue, DispatchRoundRobin, DispatchRandom}
	reuses       = []Reuse{ReuseNone, ReuseRequest, ReuseProcess, ReusePool, ReuseUpstreamKeepalive}
	poolFulls    = []PoolFull{PoolFullWait, PoolFullError}
	sides        = []Side{SideClient, SideServer}
	tlsVersions  = []TLSVersion{TLSNone, TLS12, TLS13}
	certs        = []Cert{CertRSA2048, CertECDSAP256}
	setups       = []Setup{SetupAuto, SetupHTTP, SetupRedis, SetupProxy, SetupPHP, SetupPHPNative, SetupStack}
	handshakes   = []Handshake{HandshakeFull, HandshakeResumed, Handshake0RTT}
	closeReasons = []CloseReason{ReasonEndOfCall, ReasonEndOfRequest, ReasonWorkerExit, ReasonNoReuse, ReasonSimultaneous,
		ReasonMaxIdleAge, ReasonMaxLifetime, ReasonIdleFull, ReasonEvict, ReasonIdleTimeout, ReasonKeepaliveRequests,
		ReasonDead, ReasonReset, ReasonClosed, ReasonShutdown, ReasonWarmUp, ReasonReused, ReasonTakenOver}
	paramKinds = []ParamKind{ParamDuration, ParamInt, ParamFloat, ParamBool, ParamEnum, ParamPorts, ParamSets, ParamShares}
	errorKinds = []ErrorKind{ErrorNoPort, ErrorRace, ErrorPoolFull, ErrorCallFailed,
		ErrorShareEmpty, ErrorShareCookie, ErrorShareOption, ErrorShareType}
)

// enums is the one list of the vocabulary's types: the scenario's enum keys
// and the schema read it.
var enums = []enumType{
	enumOf(modes), enumOf(loads), enumOf(arrivals), enumOf(dispatches), enumOf(reuses),
	enumOf(poolFulls), enumOf(sides), enumOf(tlsVersions), enumOf(certs), enumOf(setups), enumOf(handshakes),
	enumOf(closeReasons), enumOf(errorKinds), enumOf(paramKinds),
	{name: "Kind", typ: reflect.TypeFor[Kind](), values: kindNames[:]},
}

type enumType struct {
	name   string
	typ    reflect.Type
	values []string
}

func enumOf[T ~string](vs []T) enumType {
	t := reflect.TypeFor[T]()
	e := enumType{name: t.Name(), typ: t}
	for _, v := range vs {
		e.values = append(e.values, string(v))
	}
	return e
}

// enumFor returns the vocabulary type of a struct field: its own type, when
// that is one of the vocabulary's.
func enumFor(f reflect.StructField) (enumType, bool) {
	for _, e := range enums {
		if e.typ == f.Type {
			return e, true
		}
	}
	return enumType{}, false
}

// Enums returns every type of the vocabulary by name (Reuse, Side, Kind,
// ...) with its values.
func Enums() map[string][]string {
	m := make(map[string][]string, len(enums))
	for _, e := range enums {
		m[e.name] = append([]string(nil), e.values...)
	}
	return m
}
