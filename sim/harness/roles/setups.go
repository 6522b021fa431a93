package roles

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/wire"
)

// A setup is what a variant runs on for real, named by the scenario's
// setup key. Adding one is an entry here, its name in the key's enum
// (sim.Scenario.Setup), and the code its run calls: servers the lab
// process starts, and the worker processes (or other clients) that call
// them.
type setup struct {
	// doc says what runs, for sim validate --help.
	doc string
	// run runs the variant in the lab process, from its servers to the
	// report.
	run func(lp *labProc, ctx context.Context, rep *wire.Report, cleanup *[]func()) (*wire.Report, error)
	// adjust, if set, changes the scenario where the real clients of the
	// setup do something the scenario's defaults do not say, so that the
	// model is run on what really happens; it returns a note for each
	// change.
	adjust func(s *sim.Scenario) []string
	// compress is the factor long timers are divided by when the run does
	// not name one (0: the harness's default).
	compress float64
	// ownTLS: the workers measure their own TLS handshake; the lab
	// process does not measure Go's.
	ownTLS bool
}

var setups = map[sim.Setup]setup{
	sim.SetupHTTP: {
		doc: "PHP-like worker processes (real OS processes) whose curl-like clients call an HTTPS or HTTP upstream, resolving its name through the harness's DNS server",
		run: func(lp *labProc, ctx context.Context, rep *wire.Report, cleanup *[]func()) (*wire.Report, error) {
			return lp.runWorkers(ctx, rep, cleanup, lp.startHTTP)
		},
	},
	sim.SetupRedis: {
		doc: "worker processes whose go-redis clients (one per request, or a pool per process) call redis-server (sim validate's default where it is installed), or miniredis with --real none",
		run: func(lp *labProc, ctx context.Context, rep *wire.Report, cleanup *[]func()) (*wire.Report, error) {
			return lp.runWorkers(ctx, rep, cleanup, lp.startRedis)
		},
		adjust: func(s *sim.Scenario) []string {
			if s.SetupRTTs == 1 {
				return nil
			}
			s.SetupRTTs = 1
			return []string{"go-redis v9 sends HELLO on every new connection before its first command, one round trip: setup_rtts = 1, in the model too"}
		},
	},
	sim.SetupProxy: {
		doc: "a closed-loop load generator calls a reverse proxy (nginx where it is installed and asked for, as sim validate does by default, or a Go one) whose workers call the upstream, with or without upstream keep-alive",
		run: (*labProc).runProxy,
	},
	sim.SetupStack: {
		doc: "a block's [[tier]] tables on the real programs: a closed-loop Go load → nginx → the article's Flask app under gunicorn (gthread) or Flask's development server → redis-server, with redis-py; calibrated, then measured per hop and per side (the stack role, not a lab process)",
		run: func(*labProc, context.Context, *wire.Report, *[]func()) (*wire.Report, error) {
			return nil, fmt.Errorf("setup %q runs in the stack role (harness.RunPlan), not in a lab process", sim.SetupStack)
		},
	},
	sim.SetupPHP: {
		doc:      "the lab's own PHP scripts (script = \"...\" in the block, from the folder named after the lab) on PHP 8.5 compiled to WebAssembly (npm's @php-wasm, installed by make php), one runtime per worker process (node sim/phpwasm/node/driver.mjs): a request is one PHP request, pm.max_requests replaces a worker's runtime, CLI mode runs each request in a fresh one. Long timers are divided by 10, not 100: libcurl takes its DNS cache timeout and idle age in whole seconds. What a TLS handshake and a call cost PHP in WebAssembly is measured before each run and given to the model (handshake_cpu, client_cpu). Without Node.js or the package, the http setup's Go workers stand in, and the output says so",
		run:      (*labProc).runPHP,
		adjust:   curlTimers,
		compress: PHPCompress,
		ownTLS:   true,
	},
	sim.SetupPHPNative: {
		doc:      "the same scripts on the php on PATH (Debian's PHP 8.2 with its libcurl and OpenSSL), one php -S process per worker behind the same driver; the API's name is given its address (CURLOPT_RESOLVE); what opening a connection and a full TLS handshake cost its libcurl and OpenSSL is measured before each run, over the run's round trip, and given to the model (connect_cpu, handshake_cpu). Not run where no php with the curl extension is installed",
		run:      (*labProc).runPHP,
		adjust:   curlTimers,
		compress: PHPCompress,
		// Its handshakes are native OpenSSL's against the Go upstream, and
		// OpenSSL 3.0's client side costs more than Go's: the handshake is
		// measured with the php itself before the run (measureNativeCosts).
		ownTLS: true,
	},
}

// PHPCompress divides the long timers of the php setups: curl takes
// CURLOPT_DNS_CACHE_TIMEOUT and CURLOPT_MAXAGE_CONN in whole seconds, so
// 60 s and 118 s cannot be divided by 100 (0.6 s would be 1 s, or 0 with
// no cache at all); divided by 10 they are 6 s and 11.8 s, which curl is
// given as 6 s and 12 s. PHP's new calls in WebAssembly also take over a
// hundred milliseconds on a busy machine: a keep-alive timeout of 750 ms
// would close the connections of four workers taking turns.
const PHPCompress = 10

// curlTimers gives the model the timers libcurl really gets: whole
// seconds, at least 1 (0 turns curl's DNS cache off), and no maximum
// lifetime (CURLOPT_MAXLIFETIME_CONN is libcurl 7.80's: PHP 8.5 in
// WebAssembly has 7.69.1, and Debian's 7.88.1 leaves it off).
func curlTimers(s *sim.Scenario) []string {
	var notes []string
	for _, t := range []struct {
		key string
		d   *time.Duration
	}{{"dns_cache_timeout", &s.DNSCacheTimeout}, {"max_idle_age", &s.MaxIdleAge}} {
		if *t.d == 0 {
			continue
		}
		w := max(time.Second, t.d.Round(time.Second))
		if w != *t.d {
			notes = append(notes, fmt.Sprintf("%s %s→%s (curl takes whole seconds)", t.key, sim.FormatDuration(*t.d), sim.FormatDuration(w)))
			*t.d = w
		}
	}
	if s.MaxLifetime != 0 {
		notes = append(notes, fmt.Sprintf("max_lifetime %s→0s (libcurl before 8.17 keeps a connection for any time)", sim.FormatDuration(s.MaxLifetime)))
		s.MaxLifetime = 0
	}
	// libcurl with OpenSSL asks for no TLS 1.2 session ticket (curl's
	// lib/vtls/openssl.c has set SSL_OP_NO_TICKET since 7.19.4, and still
	// does in 8.21: its ClientHello has no session_ticket extension), so it
	// resumes TLS 1.2 only by session ID, which needs the server to keep
	// them: nginx does with ssl_session_cache (default none), Go's
	// crypto/tls, this upstream, never. So every new connection here makes
	// a full TLS 1.2 handshake, server's idle close or not
	// (phpwasm.TestTLS12ResumptionNeedsSessionIDs). TLS 1.3 resumes: its
	// tickets need no extension.
	if s.TLSResume && s.TLS == sim.TLS12 {
		notes = append(notes, "tls_resume true→false: libcurl asks for no TLS 1.2 tickets (SSL_OP_NO_TICKET) and this Go upstream keeps no session IDs")
		s.TLSResume = false
	}
	if len(notes) == 0 {
		return nil
	}
	return []string{"curl's timers, in the model too: " + strings.Join(notes, ", ")}
}

// Compress is the factor setup divides long timers by when the run names
// none.
func Compress(setupName sim.Setup) float64 {
	if st, ok := setups[setupName]; ok && st.compress > 0 {
		return st.compress
	}
	return 0
}

// Setups lists the setups there are, sorted.
func Setups() []sim.Setup {
	names := make([]sim.Setup, 0, len(setups))
	for name := range setups {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// SetupHelp describes each setup, for help texts (80 columns).
func SetupHelp() string {
	var b strings.Builder
	for _, name := range Setups() {
		line := "  " + string(name) + ":"
		for _, word := range strings.Fields(setups[name].doc + ".") {
			if len(line)+1+len(word) > 80 {
				b.WriteString(line + "\n")
				line = "    "
			} else {
				line += " "
			}
			line += word
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// Adjust changes s where setup's real clients do what s does not say (see
// setup.adjust), and returns a note for each change.
func Adjust(setupName sim.Setup, s *sim.Scenario) []string {
	if st, ok := setups[setupName]; ok && st.adjust != nil {
		return st.adjust(s)
	}
	return nil
}
