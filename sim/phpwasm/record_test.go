package phpwasm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness"
	"github.com/connlab/connlab/sim/lab"
)

// envRecord names the file TestRecord writes; unset, it skips.
const envRecord = "CONNLAB_PHP_RECORD"

// A record is what PHP 8.5 did in every block of the PHP lab, beside what
// the model predicts for the same scaled scenario.
type record struct {
	Lab      string            `json:"lab"`
	Recorded string            `json:"recorded"`
	Machine  map[string]string `json:"machine"`
	Versions *Versions         `json:"versions"`
	// HandshakeCPU: a full TLS handshake in this client (and the driver's
	// private Node server) on a path with no delay, median, as the model
	// is given it (handshake_cpu).
	HandshakeCPUMS float64       `json:"handshake_cpu_ms"`
	Compress       float64       `json:"compress"`
	Blocks         []recordBlock `json:"blocks"`
	Checks         []check       `json:"checks"` // identity.php, PHP's own messages
}

type recordBlock struct {
	ID       string          `json:"id"`
	Variants []recordVariant `json:"variants"`
}

type recordVariant struct {
	Name      string   `json:"name"`
	Script    string   `json:"script"`
	Scaling   []string `json:"scaling,omitempty"`
	Requests  int      `json:"requests"`
	Processes int      `json:"processes"` // driver processes started (max_requests, CLI mode)
	// NumConnects is CURLINFO_NUM_CONNECTS of every call in order, and
	// ModelNumConnects the model's.
	NumConnects      []int `json:"num_connects"`
	ModelNumConnects []int `json:"model_num_connects"`
	Connects         int   `json:"connects"`
	// ClosedByServer: connections libcurl found closed by the server
	// (keep-alive timeout) when it next looked at them.
	ClosedByServer   int       `json:"closed_by_server"`
	ConnectsByWorker []int     `json:"connects_per_worker"`
	Errors           []string  `json:"errors,omitempty"`
	ModelError       string    `json:"model_error,omitempty"`
	TotalMS          []float64 `json:"total_ms"`
	// IdleMS: how long the call's worker process had been idle since its
	// previous call (-1: its first); NameLookupMS: each new connection's
	// lookup (curl's namelookup time).
	IdleMS       []float64 `json:"idle_ms"`
	NameLookupMS []float64 `json:"namelookup_ms"`
	// CurlTimers: the DNS cache timeout and maximum idle age curl was given
	// (whole seconds), which the model is given too.
	CurlTimers map[string]int `json:"curl_timers"`
	P50        map[string]any `json:"p50_ms"`       // measured: new and reused calls
	ModelP50   map[string]any `json:"model_p50_ms"` // the model with handshake_cpu measured
}

// TestRecord runs every block of labs/php-persistent-share.md on PHP 8.5
// against the harness's upstream (RTT injected, timers compressed as sim
// validate does), fails where PHP's connection counts differ from the
// model's, and writes what it measured to $CONNLAB_PHP_RECORD:
//
//	CONNLAB_PHP_RECORD=$PWD/labs/php-persistent-share.real.json go test -run TestRecord -timeout 20m ./sim/phpwasm
func TestRecord(t *testing.T) {
	outPath := os.Getenv(envRecord)
	if outPath == "" {
		t.Skipf("set %s to a file to record real PHP runs", envRecord)
	}
	c := newCerts(t)
	// Timers are compressed 10x, not sim validate's 100x: curl takes its
	// DNS cache timeout and maximum idle age in whole seconds (60 s and
	// 118 s become 6 s and 12 s; 0.6 s cannot be said), and PHP's calls in
	// WebAssembly take 100-400 ms on a busy machine where the model's take
	// 117: four workers' turns then outlast a 750 ms keep-alive.
	compress := 10.0
	if v := os.Getenv("CONNLAB_PHP_COMPRESS"); v != "" {
		fmt.Sscan(v, &compress)
	}
	l, err := lab.ReadFile(filepath.Join(root, "labs", "php-persistent-share.md"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &record{Lab: "labs/php-persistent-share.md", Recorded: time.Now().UTC().Format(time.RFC3339), Machine: machine()}
	ctx := context.Background()
	for _, b := range l.Blocks {
		p, err := harness.NewPlan(ctx, b, harness.Options{Seed: 1, Compress: compress})
		if err != nil {
			t.Fatal(err)
		}
		rec.Compress = p.Compress
		rb := recordBlock{ID: b.ID}
		for _, vp := range p.Variants {
			if vp.Rejected != "" {
				// The model refuses it before any traffic; PHP runs it.
				vp.Original, _ = b.Scenario(b.Variant(vp.Name), nil)
			}
			rv := runVariant(t, c, b.ID, vp, rec)
			rb.Variants = append(rb.Variants, rv)
		}
		rec.Blocks = append(rec.Blocks, rb)
	}
	rec.Checks = identityChecks(t, c)
	rec.Machine["load_after"] = loadAvg()
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := os.WriteFile(outPath, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runVariant serves a variant's requests one after another (one user), each
// to the worker process idle longest, replacing a process after
// max_requests and using a fresh one per request in CLI mode.
func runVariant(t *testing.T, c *certs, block string, vp *harness.VariantPlan, rec *record) recordVariant {
	s := vp.Scenario
	if vp.Rejected != "" {
		s = vp.Original // not scaled: the model refuses it before any traffic
	}
	rv := recordVariant{Name: vp.Name, Scaling: vp.Scaling, Requests: s.Requests, ModelError: vp.Rejected}
	scriptPath := script(t, vp.Name, &s)
	rv.Script = filepath.Base(scriptPath)
	srvS := s
	srvS.DNS = 0                             // the driver holds each answer for dns (as the Go workers do)
	srvS.ShareSets = sim.Default().ShareSets // the server's validation would refuse COOKIE
	srv, err := harness.StartServers("", "", srvS)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	up := &upstream{addr: srv.Upstream.Addr()}
	dnsAddr := ""
	if s.DNS > 0 {
		dnsAddr = srv.DNSAddr
	}
	cc := *c
	cc.caPEM = srv.CAPEM // the calls verify the upstream's chain; warm-up uses the test's
	var procs []*proc
	start := func() *proc {
		rv.Processes++
		p := startDriverCerts(t, &cc, c, up, opts{script: scriptPath, scenario: s, dns: dnsAddr, warm: true})
		procs = append(procs, p)
		return p
	}
	// Replacements (pm.max_requests, CLI mode) are started and warmed up
	// before the run, as a PHP-FPM master forks a child in a moment: a
	// replacement warming up during the run would leave the other workers'
	// connections idle for seconds, past the compressed keep-alive.
	var spares []*proc
	need := 0
	switch {
	case s.Mode == "cli":
		need = s.Requests - s.Workers
	case s.MaxRequests > 0:
		need = s.Requests / s.MaxRequests // at most one retirement per max_requests requests
	}
	for range max(need, 0) {
		spares = append(spares, start())
	}
	type slot struct {
		p       *proc
		served  int
		free    time.Time
		lastEnd int64 // the run clock of its last call's end (0: none)
	}
	workers := make([]*slot, s.Workers)
	for i := range workers {
		workers[i] = &slot{p: start()}
		if rec.Versions == nil {
			rec.Versions = workers[i].p.ready.Versions
			rec.HandshakeCPUMS = float64(workers[i].p.ready.HS) / 1e6
		}
	}
	perWorker := make([]int, s.Workers)
	var totals, newT, reusedT []float64
	for r := 1; r <= s.Requests; r++ {
		if s.PauseEvery > 0 && r > 1 && (r-1)%s.PauseEvery == 0 {
			time.Sleep(s.Pause)
		}
		wi := 0
		for i, w := range workers {
			if w.free.Before(workers[wi].free) {
				wi = i
			}
		}
		w := workers[wi]
		rv.CurlTimers = w.p.ready.Timers
		calls := w.p.serve(r)
		w.free = time.Now()
		w.served++
		for _, e := range calls {
			if e.ER != "" {
				rv.Errors = append(rv.Errors, e.ER)
				continue
			}
			idle := -1.0
			if w.lastEnd != 0 {
				idle = float64(e.S-w.lastEnd) / 1e6
			}
			rv.IdleMS = append(rv.IdleMS, float64(int(idle*10))/10)
			w.lastEnd = e.At
			n := 0
			if e.NC {
				n = 1
				newT = append(newT, float64(e.T)/1e6)
				rv.NameLookupMS = append(rv.NameLookupMS, float64(e.NL/1000)/1000)
			} else {
				reusedT = append(reusedT, float64(e.T)/1e6)
			}
			rv.NumConnects = append(rv.NumConnects, n)
			rv.Connects += n
			perWorker[wi] += n
			totals = append(totals, float64(e.T)/1e6)
		}
		if s.Mode == "cli" || (s.MaxRequests > 0 && w.served >= s.MaxRequests) {
			w.p.exit()
			if r < s.Requests {
				if len(spares) == 0 {
					t.Fatalf("%s/%s: no spare worker process left", block, vp.Name)
				}
				*w = slot{p: spares[0], free: w.free}
				spares = spares[1:]
			}
		}
	}
	for _, w := range workers {
		if w.p.cmd.ProcessState == nil {
			w.p.exit()
		}
	}
	for _, p := range spares {
		p.exit()
	}
	for _, p := range procs {
		for _, e := range p.events {
			if e.K == sim.KindClose && e.BY == "server" {
				rv.ClosedByServer++
			}
		}
	}
	rv.ConnectsByWorker = perWorker
	rv.TotalMS = totals
	rv.P50 = map[string]any{"total": median(totals), "new": median(newT), "reused": median(reusedT)}

	// The model, for the same scaled scenario, with this client's
	// handshake CPU.
	ms := s
	ms.HandshakeCPU = time.Duration(rec.HandshakeCPUMS * 1e6)
	if v, ok := rv.CurlTimers["dns_cache_timeout"]; ok {
		ms.DNSCacheTimeout = time.Duration(v) * time.Second
	}
	if v, ok := rv.CurlTimers["maxage_conn"]; ok {
		ms.MaxIdleAge = time.Duration(v) * time.Second
	}
	var mNew, mReused, mTotal []float64
	if vp.Rejected == "" {
		res, err := sim.Run(context.Background(), ms, sim.Options{Seed: 1, Sink: func(e *sim.Event) {
			if e.Kind != sim.KindCall || e.Error != "" {
				return
			}
			n := 0
			if e.NewConn {
				n = 1
				mNew = append(mNew, float64(e.Total)/1e6)
			} else {
				mReused = append(mReused, float64(e.Total)/1e6)
			}
			rv.ModelNumConnects = append(rv.ModelNumConnects, n)
			mTotal = append(mTotal, float64(e.Total)/1e6)
		}})
		if err != nil {
			t.Fatal(err)
		}
		_ = res
	}
	rv.ModelP50 = map[string]any{"total": median(mTotal), "new": median(mNew), "reused": median(mReused)}
	switch {
	case vp.Rejected != "":
		// The model's text is PHP's, after the key it comes from.
		if len(rv.Errors) == 0 || !strings.HasSuffix(vp.Rejected, ": "+rv.Errors[0]) {
			t.Errorf("%s/%s: the model rejects it with %q; PHP said %q", block, vp.Name, vp.Rejected, rv.Errors)
		}
	case !slices.Equal(rv.NumConnects, rv.ModelNumConnects):
		t.Errorf("%s/%s: num_connects %v on PHP 8.5, %v in the model", block, vp.Name, rv.NumConnects, rv.ModelNumConnects)
	}
	t.Logf("%s/%s: PHP %v model %v; %d closed by the server; p50 total %v ms (model %v), new %v (%v), reused %v (%v)", block, vp.Name,
		rv.NumConnects, rv.ModelNumConnects, rv.ClosedByServer, rv.P50["total"], rv.ModelP50["total"], rv.P50["new"], rv.ModelP50["new"], rv.P50["reused"], rv.ModelP50["reused"])
	return rv
}

func identityChecks(t *testing.T, c *certs) []check {
	up := startUpstream(t, c, 0)
	s := scenario("process", 1)
	p := startDriver(t, c, up, opts{script: filepath.Join(must(filepath.Abs(labDir)), "identity.php"), scenario: s})
	p.serve(1)
	p.exit()
	return p.checks
}

func median(v []float64) any {
	if len(v) == 0 {
		return nil
	}
	s := slices.Clone(v)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return float64(int(m*100+0.5)) / 100
}

func machine() map[string]string {
	m := map[string]string{"goos": runtime.GOOS, "goarch": runtime.GOARCH, "cpus": fmt.Sprint(runtime.NumCPU()), "load_before": loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				m["cpu"] = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	if out, err := exec.Command("node", "--version").Output(); err == nil {
		m["node"] = strings.TrimSpace(string(out))
	}
	return m
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
