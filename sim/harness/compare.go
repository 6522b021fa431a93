package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/netem"
	"github.com/connlab/connlab/sim/harness/stack"
	"github.com/connlab/connlab/sim/harness/wire"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
)

// Tolerance is how far a phase's measured median may be from the model's:
// within Pct percent of the model's value or Abs, whichever is larger.
type Tolerance struct {
	Pct float64
	Abs time.Duration
	// PerTrip is the harness's own overhead of a round trip (Tare, up to
	// MaxTare), allowed once for every round trip a phase holds (Trips):
	// each one ends in a wake-up that comes a little late, so a call on a
	// new connection (three round trips with TLS 1.3) pays it three times.
	PerTrip time.Duration
	Trips   Trips
	// OneCall is how much one new connection's call varies in the
	// workers' runtime, where the setup measures it (VariantRun.CallSpread).
	// A phase whose median is one or two calls, one of them or both on a
	// new connection, allows it on top: a median of one call is that call
	// (of two, their midpoint), and no other call averages its variation
	// away.
	OneCall time.Duration
}

// Trips counts the waits the harness emulates in a call, from the
// variant's scenario: round trips on a new connection and on a kept one
// (sim.Scenario.RoundTrips), of which TLS's handshake; a DNS lookup and
// the server's work, which the harness's DNS server and upstream also wait
// out.
type Trips struct {
	NewConn, Reused, TLS, DNS, Server int
}

// TripsOf counts s's waits.
func TripsOf(s *sim.Scenario) Trips {
	n, r := s.RoundTrips()
	t := Trips{NewConn: n, Reused: r, TLS: n - r - 1 - s.SetupRTTs}
	if s.DNS > 0 {
		t.DNS = 1
	}
	if s.ServerTime > 0 && s.Setup != sim.SetupRedis {
		t.Server = 1 // redis-server does its own work: no wait of the harness's
	}
	return t
}

// WithTare allows the harness's measured overhead, up to MaxTare, once per
// round trip of a call of scenario s.
func (t Tolerance) WithTare(tare time.Duration, s *sim.Scenario) Tolerance {
	t.PerTrip, t.Trips = min(tare, MaxTare), TripsOf(s)
	return t
}

// of returns how many waits the median of a phase holds: those of a new
// connection's call for the phases that open one, and for a median over
// both kinds of call those of the kind most calls are.
func (t Trips) of(phase string, mostlyNew bool) int {
	newCall, reused := t.DNS+t.NewConn+t.Server, t.Reused+t.Server
	switch phase {
	case sim.PhaseNameLookup:
		return t.DNS
	case sim.PhaseConnect:
		return t.DNS + 1
	case sim.PhaseAppConnect:
		return t.DNS + 1 + t.TLS
	case PhaseNewConn:
		return newCall
	case PhaseReused:
		return reused
	}
	if mostlyNew {
		return newCall
	}
	return reused
}

// DefaultTolerance is max(5 %, 0.5 ms) of the model's median.
var DefaultTolerance = Tolerance{Pct: 5, Abs: 500 * time.Microsecond}

func (t Tolerance) String() string {
	if t.PerTrip > 0 {
		return fmt.Sprintf("max(%g%%, %s + %s a round trip)", t.Pct, sim.FormatDuration(t.Abs), sim.FormatDuration(t.PerTrip))
	}
	return fmt.Sprintf("max(%g%%, %s)", t.Pct, sim.FormatDuration(t.Abs))
}

// ParseTolerance reads "5%,0.5ms" (either part may be left out).
func ParseTolerance(s string) (Tolerance, error) {
	var t Tolerance
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case strings.HasSuffix(part, "%"):
			v, err := strconv.ParseFloat(strings.TrimSuffix(part, "%"), 64)
			if err != nil || v < 0 || v > 1000 {
				return t, fmt.Errorf("tolerance %q: want a percentage such as 5%%", part)
			}
			t.Pct = v
		default:
			d, err := time.ParseDuration(part)
			if err != nil || d < 0 || d > time.Minute {
				return t, fmt.Errorf("tolerance %q: want a duration such as 0.5ms", part)
			}
			t.Abs = d
		}
	}
	return t, nil
}

// The rows by kind of call: the totals of the calls that opened a
// connection and of those that ran on a kept one.
const (
	PhaseNewConn = "total, new conn"
	PhaseReused  = "total, reused"
)

// PhaseRow sets one phase's measured median against the model's. It is
// declared in runsvc, whose done message carries it to the page, so that
// the page's model need not link the harness.
type PhaseRow = runsvc.PhaseRow

// MixedNote marks the median of a phase over about as many calls on new
// connections as on kept ones: it falls in the gap between the two groups,
// at the midpoint of the slowest reused call and the quickest new one, so
// one late reused call moves it by milliseconds. The by-kind rows are
// compared instead.
const MixedNote = "median of about as many new-connection calls as reused ones: it falls between the two groups; compared by kind"

// FewCallsNote marks the median of a phase over four calls or fewer of
// both kinds: it is the midpoint of two of them, one of which may be of the
// other kind, or the first call after a pause, which was 1.6 to 7 ms slower
// than the other reused calls in real PHP runs of the pools lab's idle
// block (a cost the model does not have; its cause is not pinned down);
// nothing averages either away. The by-kind rows, each the median of its
// own calls, are compared instead.
const FewCallsNote = "median of four calls or fewer of both kinds: the midpoint of two unlike calls; compared by kind"

// ComparePhases compares the medians of curl's five phases and, when the
// model has calls of both kinds, the totals of calls on new connections and
// on reused ones. A phase may differ from the model by the larger of
// tol.Pct of the model's median and tol.Abs plus tol.PerTrip for each
// round trip it holds.
func ComparePhases(model, measured *sim.Summary, tol Tolerance) []PhaseRow {
	type phase struct {
		name   string
		mo, me sim.Stat
		mixed  bool // a median over both kinds of call
		// oneNew: the median is one or two calls, on a new connection or
		// with one
		oneNew bool
	}
	mostlyNew := model.Connects > model.Reused
	// curl's phases, from sim's table; those a reused call pays too
	// (starttransfer, total) take a median over both kinds of call.
	var phases []phase
	fewNew := model.Connects > 0 && measured.Calls <= 2
	for _, p := range sim.CurlPhases() {
		mo, _ := p.Stat(model)
		me, _ := p.Stat(measured)
		phases = append(phases, phase{p.Key, mo, me, !p.Setup, fewNew})
	}
	both := model.Connects > 0 && model.Reused > 0
	halfAndHalf := false
	if both {
		f := float64(model.Connects) / float64(model.Connects+model.Reused)
		halfAndHalf = math.Abs(f-0.5) < 0.1
		phases = append(phases,
			phase{PhaseNewConn, model.NewConnTotal, measured.NewConnTotal, false, measured.Connects <= 2},
			phase{PhaseReused, model.ReusedTotal, measured.ReusedTotal, false, false})
	}
	rows := make([]PhaseRow, 0, len(phases))
	for _, p := range phases {
		abs := tol.Abs + time.Duration(tol.Trips.of(p.name, mostlyNew))*tol.PerTrip
		allowed := max(tol.Pct/100*p.mo.P50, float64(abs)/1e6)
		oneCall := 0.0
		if p.oneNew && tol.OneCall > 0 {
			oneCall = math.Round(float64(tol.OneCall)/1e3) / 1e3
			allowed += oneCall
		}
		diff := p.me.P50 - p.mo.P50
		r := PhaseRow{Phase: p.name, ModelMS: p.mo.P50, MeasuredMS: p.me.P50, MeasuredP90MS: p.me.P90,
			ToleranceMS: math.Round(allowed*1000) / 1000, OK: math.Abs(diff) <= allowed+1e-9, OneCallMS: oneCall}
		if p.mo.P50 != 0 {
			r.ErrorPct = math.Round(1000*diff/p.mo.P50) / 10
		}
		switch {
		case p.mixed && halfAndHalf:
			r.OK, r.ToleranceMS, r.OneCallMS, r.Note = true, 0, 0, MixedNote
		case p.mixed && both && measured.Calls <= 4 && measured.Connects > 0 && measured.Reused > 0:
			r.OK, r.ToleranceMS, r.OneCallMS, r.Note = true, 0, 0, FewCallsNote
		}
		rows = append(rows, r)
	}
	return rows
}

// CountRow sets one count against the model's.
type CountRow struct {
	Name     string `json:"-"`
	Model    any    `json:"model"`
	Measured any    `json:"measured"`
	// Allowed is "exact", or the difference allowed where the count
	// depends on how requests overlapped (see ScalingRules, rule 5).
	Allowed string `json:"allowed"`
	OK      bool   `json:"ok"`
}

// CompareCounts compares the connection counts. timing marks a variant
// whose pool growth depends on timing (VariantPlan.Timing); overlap one
// whose requests overlap, so that calls end in another order and
// num_connects is compared as a set of values; kernelSpread one whose
// connections the kernel spread over the workers (nginx), so that connects
// per worker is shown but not compared.
func CompareCounts(model, measured *sim.Summary, timing, overlap, kernelSpread bool) []CountRow {
	var rows []CountRow
	exact := func(name string, a, b int) {
		rows = append(rows, CountRow{Name: name, Model: a, Measured: b, Allowed: "exact", OK: a == b})
	}
	near := func(name string, a, b int) {
		slack := max(2, int(math.Ceil(0.1*float64(a))))
		d := a - b
		rows = append(rows, CountRow{Name: name, Model: a, Measured: b, Allowed: "±" + strconv.Itoa(slack), OK: d <= slack && d >= -slack})
	}
	list := func(name string, a, b []int) {
		rows = append(rows, CountRow{Name: name, Model: a, Measured: b, Allowed: "exact", OK: slices.Equal(a, b)})
	}
	exact("requests", model.Requests, measured.Requests)
	exact("calls", model.Calls, measured.Calls)
	if timing {
		near("connects", model.Connects, measured.Connects)
	} else {
		exact("connects", model.Connects, measured.Connects)
		switch {
		case model.Calls > sim.MaxListed:
		case overlap:
			a, b := slices.Sorted(slices.Values(model.NumConnects)), slices.Sorted(slices.Values(measured.NumConnects))
			rows = append(rows, CountRow{Name: "num_connects", Model: model.NumConnects, Measured: measured.NumConnects,
				Allowed: "the same values in any order: requests overlap", OK: slices.Equal(a, b)})
		default:
			list("num_connects", model.NumConnects, measured.NumConnects)
		}
		if kernelSpread {
			rows = append(rows, CountRow{Name: "connects_per_worker", Model: model.ConnectsPerWorker, Measured: measured.ConnectsPerWorker,
				Allowed: "not compared: the kernel hands connections to nginx's workers", OK: true})
		} else {
			list("connects_per_worker", model.ConnectsPerWorker, measured.ConnectsPerWorker)
		}
	}
	rows = append(rows, compareTimeWait(model, measured, timing)...)
	if timing {
		near("server_time_wait_peak", model.ServerTimeWaitPeak, measured.ServerTimeWaitPeak)
	} else {
		exact("server_time_wait_peak", model.ServerTimeWaitPeak, measured.ServerTimeWaitPeak)
	}
	if timing {
		// A pool that refuses a call when full (pool_full = error) fails
		// as often as its calls overlap, which is timing too.
		near("errors", model.Errors, measured.Errors)
	} else {
		exact("errors", model.Errors, measured.Errors)
	}
	exact("port_errors", model.PortErrors, measured.PortErrors)
	exact("races", model.Races, measured.Races)
	return rows
}

// compareTimeWait compares the client's TIME_WAIT sockets. With
// tcp_tw_reuse, connect() takes over a TIME_WAIT port more than a second old
// wherever its port search lands, and where that search starts is random,
// moved every 10 s: in the kernel and in the model alike, so how many ports
// each takes over is chance, and the two rarely agree. What must agree is
// how many sockets entered TIME_WAIT: each is still held or was taken over,
// so in a run too short for any to expire (the peak is then the count at the
// end) that is the peak plus those taken over, compared exactly (or within
// the timing slack). The split between held and taken over is shown, not
// compared. Where both took over as many (nearly always none), the peak is
// compared by itself; where sockets expired during the run, it is shown only.
func compareTimeWait(model, measured *sim.Summary, timing bool) []CountRow {
	mp, rp, mr, rr := model.TimeWaitPeak, measured.TimeWaitPeak, model.TimeWaitReused, measured.TimeWaitReused
	allowed := func(a, b int) (string, bool) {
		if !timing {
			return "exact", a == b
		}
		slack := max(2, int(math.Ceil(0.1*float64(a))))
		return "±" + strconv.Itoa(slack), a-b <= slack && b-a <= slack
	}
	reused := CountRow{Name: "time_wait_reused", Model: mr, Measured: rr, Allowed: "exact", OK: true}
	if mr == rr {
		peak := CountRow{Name: "time_wait_peak", Model: mp, Measured: rp}
		peak.Allowed, peak.OK = allowed(mp, rp)
		if mr == 0 {
			return []CountRow{peak}
		}
		return []CountRow{peak, reused}
	}
	reused.Allowed = "not compared: which TIME_WAIT ports connect() lands on is chance, in the kernel and the model alike (its port search starts at a random point, moved every 10 s)"
	peak := CountRow{Name: "time_wait_peak", Model: mp, Measured: rp}
	// The last reading comes within seconds of the last request: with 10 s
	// to spare, no socket had been in TIME_WAIT for 60 s by then.
	if model.DurationS >= (sim.TimeWaitLen - 10*time.Second).Seconds() {
		peak.Allowed, peak.OK = fmt.Sprintf("not compared: TIME_WAIT sockets expired during the run, and the two took over different numbers of ports (the model %d, the sampler counted %d)", mr, rr), true
		// Where sockets expire, the sampler's count of takeovers is not
		// to be trusted: runs past TIME_WAIT's 60 s with tcp_tw_reuse = 0,
		// which takes over nothing, counted thousands.
		reused.Allowed += "; and where sockets expire during the run the sampler's count is not reliable"
		return []CountRow{peak, reused}
	}
	how, ok := allowed(mp+mr, rp+rr)
	peak.Allowed = fmt.Sprintf("%s with the TIME_WAIT ports taken over added back: %d + %d vs %d + %d", how, mp, mr, rp, rr)
	peak.OK = ok
	return []CountRow{peak, reused}
}

// VariantComparison is one variant of sim validate.
type VariantComparison struct {
	Name       string     `json:"name"`
	Label      string     `json:"label,omitempty"`
	Phases     []PhaseRow `json:"phases"`
	Counts     []CountRow `json:"-"`
	OK         bool       `json:"ok"`
	Skipped    string     `json:"skipped,omitempty"` // not compared, and why
	Scaling    []string   `json:"scaling,omitempty"`
	Components []string   `json:"components,omitempty"`
	Notes      []string   `json:"notes,omitempty"`
	Attempts   int        `json:"attempts"`
	// Earlier says what was outside tolerance in each attempt before the
	// last, one line each ("attempt N: PHASE MEASURED ms, model MODEL ±
	// ALLOWED", see missed), so a variant that passed or failed on a retry
	// shows whether its attempts agreed.
	Earlier []string `json:"earlier_attempts,omitempty"`
	// HarnessOverheadMS is what the harness itself adds to a reused call
	// at this variant's RTT on this machine (Tare); up to MaxTare of it is
	// added to the tolerance of every phase for each of its round trips.
	HarnessOverheadMS float64 `json:"harness_overhead_ms"`
	// HarnessLagMS is how far the harness's processes fell behind the
	// emulated network during the last attempt: the latest read of bytes
	// already due (netem.Lag); LateReads how many reads were over
	// netem.LateRead late; HarnessWriteLagMS and LateWrites the same for
	// bytes held until a due time and written after it. A phase may hold
	// that much of the harness's own time, which the tolerance does not
	// allow for.
	HarnessLagMS      float64 `json:"harness_lag_ms,omitempty"`
	LateReads         int     `json:"late_reads,omitempty"`
	HarnessWriteLagMS float64 `json:"harness_write_lag_ms,omitempty"`
	LateWrites        int     `json:"late_writes,omitempty"`
	// HarnessLate is set when the last attempt was outside tolerance by
	// no more than the harness itself fell behind its emulated network
	// (see harnessLate): then the comparison measured the harness, not the
	// software, and says so instead of judging the model. OK stays false.
	HarnessLate string `json:"harness_late,omitempty"`
	// Verdict is agree, disagree or inconclusive (verdict.go): OK is
	// false for both of the last two. Inconclusive says why the machine
	// could not give the last attempt what it needed, and Why why a
	// variant that missed disagrees although the machine was busy. Share
	// is what the machine's CPUs did during the last attempt.
	Verdict      string      `json:"verdict,omitempty"`
	Inconclusive string      `json:"inconclusive,omitempty"`
	Why          string      `json:"why,omitempty"`
	Share        *wire.Share `json:"machine_share,omitempty"`
	// HarnessStart is what the lab process used at the start of the last
	// attempt's run (wire.StartUse), where it could read it: a run whose
	// first calls come out late shows whether the harness was busy then.
	HarnessStart *wire.StartUse `json:"harness_start,omitempty"`
	Model        *sim.Summary   `json:"model,omitempty"`
	Measured     *sim.Summary   `json:"measured,omitempty"`
	// Setup is what ran (the plan's setup, or http standing in for php);
	// Runtime names the software and its versions ("name", "php", "curl",
	// "ssl", "stand_in": why a stand-in ran); none when the variant did not
	// run for real.
	Setup   string            `json:"setup,omitempty"`
	Runtime map[string]string `json:"runtime,omitempty"`
	// ModelError and RealError: a variant the model rejects, with the
	// model's text and the real software's own (PHP's exception), which
	// must say the same.
	ModelError string `json:"model_error,omitempty"`
	RealError  string `json:"real_error,omitempty"`
	// Checks: what the real software's probing script's statements
	// returned or threw (check.ID in real_expect).
	Checks map[string]string `json:"checks,omitempty"`
	// What the model was given from this run's measurements of the
	// client's CPU (the scenario keys of the same names).
	ConnectCPUMS    float64 `json:"connect_cpu_ms,omitempty"`
	DropCPUMS       float64 `json:"drop_cpu_ms,omitempty"`
	HandshakeCPUMS  float64 `json:"handshake_cpu_ms,omitempty"`
	ResumeCPUMS     float64 `json:"resume_cpu_ms,omitempty"`
	ClientCPUMS     float64 `json:"client_cpu_ms,omitempty"`
	ClientReadCPUMS float64 `json:"client_read_cpu_ms,omitempty"`
	// AppTimeMS: app_time as the model was given it (the block's, and the
	// runtime's own cost of a request).
	AppTimeMS float64 `json:"app_time_ms,omitempty"`
	// MeasuredCostMS is what this run's measurements of the client's CPU
	// added to a call in the model, all the keys above together: on a busy
	// machine they come out larger, and the model slower by up to that
	// much (verdict.go).
	MeasuredCostMS float64 `json:"measured_cost_ms,omitempty"`
	// Settings are the variant's keys as the lab writes them
	// (lab.Block.Settings), so a record of the run knows what ran.
	Settings string `json:"settings"`
	// Chain: a stack variant's comparison per hop and side (stackvalidate.go).
	Chain *ChainComparison `json:"chain,omitempty"`
}

// MarshalJSON writes Counts as an object: {"connects": {"model": …}, …}.
func (v *VariantComparison) MarshalJSON() ([]byte, error) {
	type plain VariantComparison
	counts := map[string]CountRow{}
	for _, c := range v.Counts {
		counts[c.Name] = c
	}
	return json.Marshal(struct {
		*plain
		Counts map[string]CountRow `json:"counts"`
	}{(*plain)(v), counts})
}

// BlockValidation is one block of sim validate.
type BlockValidation struct {
	ID       string               `json:"id"`
	Title    string               `json:"title,omitempty"`
	Setup    string               `json:"setup"`
	Variants []*VariantComparison `json:"variants"`
	OK       bool                 `json:"ok"`
	// RealChecks are the block's real_expect statements held to this run
	// (sim validate fills them in once every block has run, since one
	// block's statements may read another's); RealProblem says why they
	// were not (a stand-in ran, say).
	RealChecks  []lab.Check `json:"real_checks,omitempty"`
	RealProblem string      `json:"real_problem,omitempty"`
	// A stack block: the costs its calibration windows gave the model, and
	// the tolerance its comparison used.
	Calibration *stack.Costs `json:"calibration,omitempty"`
	Tolerance   string       `json:"tolerance,omitempty"`
}

// CheckReal holds the real_expect statements of the validated blocks to
// their runs (RealChecks, RealProblem), through the reader go test uses on
// a lab's committed record (lab.Record: the JSON of sim validate is one),
// and reports whether every statement checked holds. A block that fails
// one is not OK.
func CheckReal(l *lab.Lab, bvs []*BlockValidation) bool {
	raw, err := json.Marshal(struct {
		Blocks []*BlockValidation `json:"blocks"`
	}{bvs})
	var rec lab.Record
	if err == nil {
		err = json.Unmarshal(raw, &rec)
	}
	if err != nil {
		panic("harness: a validation does not read back as a record: " + err.Error()) // the types are ours
	}
	byID := map[string]*BlockValidation{}
	for _, bv := range bvs {
		byID[bv.ID] = bv
	}
	ok := true
	for _, rc := range l.CheckRecord(&rec) {
		bv := byID[rc.Block]
		if bv == nil {
			continue // not validated this time
		}
		bv.RealChecks, bv.RealProblem = rc.Checks, rc.Problem
		for _, c := range rc.Checks {
			if !c.OK {
				bv.OK, ok = false, false
			}
		}
	}
	return ok
}

// ModelText is a rejection's text without the key the model names in
// front of it ("share_sets[0]: ValueError: ..." → "ValueError: ..."): the
// exception the real software should throw.
func ModelText(rejected string) string {
	for i := 0; i < len(rejected); i++ {
		j := strings.Index(rejected[i:], ": ")
		if j < 0 {
			break
		}
		rest := rejected[i+j+2:]
		if _, ok := sim.ErrorKindOf(rest); ok {
			return rest
		}
		i += j
	}
	return rejected
}

// ConnectChargedNote marks the connect phase of a client whose sockets
// connect at once on loopback (php -S's libcurl, nginx): the upstream
// charges the TCP handshake's round trip on the first bytes, so it shows in
// the phases after connect.
const ConnectChargedNote = "the client's own sockets connect at once on loopback; the TCP handshake's round trip is charged on the first bytes, so it shows in the phases after connect, which are compared"

// MinJudgedRTT is the bottom of the validated range of round trips: below
// it a variant's phases are shown, not held to the tolerance (counts are).
// There the host's own costs, which the model does not price (the client's
// CPU, wake-ups after an idle spell), are as large as the round trip or
// larger.
const MinJudgedRTT = 5 * time.Millisecond

// BelowRangeNote marks the phases of a variant whose RTT is below
// MinJudgedRTT.
const BelowRangeNote = "RTT below the validated range (5 ms to 100 ms): the host's own costs (client CPU, wake-ups after an idle spell) are as large as the round trip, and the model does not price them; phases shown, counts compared"

// RetryPause is how long Validate waits before it runs a variant outside
// tolerance again. A busy spell of the machine (another process, the
// kernel's own work) can last seconds, as long as a short variant's
// three attempts take one after another; a retry should sample another
// moment, not the same spell.
const RetryPause = 3 * time.Second

// harnessNote says in parentheses what the harness itself did in vc's last
// attempt, for a line about that attempt: what the lab process used at the
// run's start, and the lag when reads came late ("" when neither is known).
func (vc *VariantComparison) harnessNote() string {
	var parts []string
	if vc.HarnessStart != nil {
		parts = append(parts, vc.HarnessStart.String())
	}
	if vc.LateReads > 0 {
		parts = append(parts, fmt.Sprintf("harness lag %.3f ms, %d late reads", vc.HarnessLagMS, vc.LateReads))
	}
	if vc.LateWrites > 0 {
		parts = append(parts, fmt.Sprintf("write lag %.3f ms, %d late writes", vc.HarnessWriteLagMS, vc.LateWrites))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// harnessLate says why vc's attempt, outside tolerance, measured the
// harness rather than the software, or "" when it did not. The harness
// emulates the network by waking up at due times (a delayed read, a held
// write); a wake-up that comes late adds its lateness to a phase, and the
// model has none. The attempt measured the harness when every phase
// outside tolerance was over the model by no more than the harness's
// latest late read or write, and late reads and writes (over
// netem.LateRead) were at least half as many as the calls that phase's
// median is taken over: enough to move a median. Counts outside tolerance
// are never the harness's.
func (vc *VariantComparison) harnessLate() string {
	if vc.OK || vc.Measured == nil {
		return ""
	}
	lag, late := max(vc.HarnessLagMS, vc.HarnessWriteLagMS), vc.LateReads+vc.LateWrites
	for _, c := range vc.Counts {
		if !c.OK {
			return ""
		}
	}
	m := vc.Measured
	missed := 0
	for _, p := range vc.Phases {
		if p.OK {
			continue
		}
		calls := m.Calls - m.Errors
		switch p.Phase {
		case PhaseReused:
			calls = m.Reused
		case sim.PhaseNameLookup, sim.PhaseConnect, sim.PhaseAppConnect, PhaseNewConn:
			calls = m.Connects
		}
		// Lateness only adds time: a phase below the model is not the
		// harness's.
		if over := p.MeasuredMS - p.ModelMS; over <= 0 || over > lag || 2*late < calls {
			return ""
		}
		missed++
	}
	if missed == 0 {
		return ""
	}
	return fmt.Sprintf("the harness fell behind its own emulated network by up to %.3f ms (%d reads or writes over %v late), at least as much as the phases were over the model: this attempt measured the harness's wake-ups, not the software; run it on a quieter machine", lag, late, netem.LateRead)
}

// missed says what in vc was outside tolerance: the phases and counts that
// missed, with the model's values and the allowance.
func (vc *VariantComparison) missed() string {
	var parts []string
	for _, p := range vc.Phases {
		if !p.OK {
			parts = append(parts, fmt.Sprintf("%s %.3f ms, model %.3f ± %.3f", p.Phase, p.MeasuredMS, p.ModelMS, p.ToleranceMS))
		}
	}
	for _, c := range vc.Counts {
		if !c.OK {
			parts = append(parts, fmt.Sprintf("%s %v, model %v", c.Name, c.Measured, c.Model))
		}
	}
	if vc.Chain != nil {
		for _, r := range vc.Chain.Rows {
			if !r.OK {
				parts = append(parts, strings.TrimSpace(fmt.Sprintf("%s %s %s %g, model %g", r.Hop, r.Side, r.Metric, r.Measured, r.Model)))
			}
		}
	}
	if len(parts) == 0 {
		return "outside tolerance"
	}
	return strings.Join(parts, "; ")
}

// compareVariant fills a comparison from the model's and the real run's
// results for one variant.
func compareVariant(vc *VariantComparison, mv, rv *lab.VariantResult, vp *VariantPlan, info *VariantRun, tol Tolerance) {
	vc.Phases, vc.Counts = []PhaseRow{}, nil
	vc.Setup, vc.Runtime, vc.Checks = info.Setup, info.Runtime, info.Checks
	vc.HarnessLagMS, vc.LateReads = float64(info.Lag.Max.Microseconds())/1000, info.Lag.Late
	vc.HarnessWriteLagMS, vc.LateWrites = float64(info.Lag.WriteMax.Microseconds())/1000, info.Lag.LateWrites
	vc.HarnessStart = info.Start
	if rv.Scenario != nil {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		sc := rv.Scenario
		vc.ConnectCPUMS, vc.HandshakeCPUMS, vc.ClientCPUMS, vc.ClientReadCPUMS = ms(sc.ConnectCPU), ms(sc.HandshakeCPU), ms(sc.ClientCPU), ms(sc.ClientReadCPU)
		vc.ResumeCPUMS, vc.DropCPUMS, vc.AppTimeMS = ms(sc.ResumeCPU), ms(sc.DropCPU), ms(sc.AppTime)
		cost := func(s *sim.Scenario) time.Duration {
			return s.ConnectCPU + s.HandshakeCPU + s.ResumeCPU + s.ClientCPU + s.ClientReadCPU + s.DropCPU + s.AppTime
		}
		vc.MeasuredCostMS = ms(max(0, cost(sc)-cost(&vp.Scenario)))
	}
	switch {
	case vp.Rejected != "" && info.RealError == "" && (rv.Summary == nil || info.StandIn != ""):
		vc.ModelError = mv.Error
		vc.OK = rv.Error == mv.Error
		vc.Skipped = "rejected before any traffic: " + vp.Rejected
		return
	case vp.Rejected != "":
		// The real software ran it: it must refuse it with the model's
		// words, before any connection.
		vc.ModelError, vc.RealError, vc.Measured = ModelText(vp.Rejected), info.RealError, rv.Summary
		vc.Counts = []CountRow{{Name: "connects", Model: 0, Measured: rv.Summary.Connects, Allowed: "exact", OK: rv.Summary.Connects == 0}}
		vc.OK = vc.RealError == vc.ModelError && rv.Summary.Connects == 0
		return
	case rv.Summary == nil:
		vc.OK = true
		vc.Skipped = strings.TrimPrefix(rv.Error, "not run for real: ")
		return
	}
	vc.Model, vc.Measured = mv.Summary, rv.Summary
	vc.OK = true
	if mv.Summary.Calls-mv.Summary.Errors > 0 || rv.Summary.Calls-rv.Summary.Errors > 0 {
		t := tol
		t.Abs += info.Resolution
		t.OneCall = info.CallSpread
		vc.Phases = ComparePhases(mv.Summary, rv.Summary, t)
		for i := range vc.Phases {
			if p := &vc.Phases[i]; info.DialerCharged && p.Phase == "connect" {
				p.OK, p.ToleranceMS, p.OneCallMS, p.Note = true, 0, 0, ConnectChargedNote
			} else if vp.Scenario.RTT < MinJudgedRTT {
				p.OK, p.ToleranceMS, p.OneCallMS, p.Note = true, 0, 0, BelowRangeNote
			}
		}
	}
	vc.Counts = CompareCounts(mv.Summary, rv.Summary, vp.Timing, vp.Overlap, info.KernelSpread)
	for _, p := range vc.Phases {
		vc.OK = vc.OK && p.OK
	}
	for _, c := range vc.Counts {
		vc.OK = vc.OK && c.OK
	}
}

// Validate runs b's variants for real and in the model, both on the same
// scaled plan (with the TLS handshake CPU the real run measured), and
// compares each variant's phases and counts. A variant outside tolerance is
// run again up to retries times, RetryPause later (the machine may be
// busy); the last attempt counts, Attempts says how many there were and
// Earlier what the others missed.
func Validate(ctx context.Context, b *lab.Block, opt Options, tol Tolerance, retries int) (*BlockValidation, error) {
	p, err := NewPlan(ctx, b, opt)
	if err != nil {
		return nil, err
	}
	if p.isStack() {
		return validateStack(ctx, p, opt, retries)
	}
	bv := &BlockValidation{ID: b.ID, Title: b.Title, Setup: p.Setup, OK: true}
	byName := map[string]*VariantComparison{}
	for _, vp := range p.Variants {
		vc := &VariantComparison{Name: vp.Name, Label: vp.Label, Scaling: vp.Scaling, Phases: []PhaseRow{}, Settings: b.Settings(b.Variant(vp.Name))}
		bv.Variants = append(bv.Variants, vc)
		byName[vp.Name] = vc
	}
	tols := map[string]Tolerance{}
	for _, vp := range p.Variants {
		t := tol
		if vp.Rejected == "" {
			if opt.Progress != nil {
				opt.Progress(fmt.Sprintf("%s: measuring the harness's own overhead at %s RTT", b.ID, sim.FormatDuration(vp.Scenario.RTT)))
			}
			tare, err := Tare(ctx, vp.Scenario.RTT, opt)
			if err != nil {
				return nil, err
			}
			byName[vp.Name].HarnessOverheadMS = float64(tare.Microseconds()) / 1000
			t = t.WithTare(tare, &vp.Scenario)
		}
		tols[vp.Name] = t
	}
	todo := p
	for attempt := 0; attempt <= retries; attempt++ {
		run, err := RunPlan(ctx, todo, opt)
		if err != nil {
			return nil, err
		}
		model, err := run.Model(ctx, opt.Seed, nil)
		if err != nil {
			return nil, err
		}
		var again []string
		for i, vp := range todo.Variants {
			vc := byName[vp.Name]
			vc.Attempts++
			compareVariant(vc, model.Variants[i], run.Result.Variants[i], vp, run.Variants[i], tols[vp.Name])
			vc.Components, vc.Notes = run.Variants[i].Components, run.Variants[i].Notes
			vc.HarnessLate = vc.harnessLate()
			vc.judge(run.Variants[i].Share, nil)
			if !vc.OK && vc.Skipped == "" {
				again = append(again, vp.Name)
			}
		}
		if len(again) == 0 || attempt == retries {
			break
		}
		for _, name := range again {
			vc := byName[name]
			vc.Earlier = append(vc.Earlier, fmt.Sprintf("attempt %d%s: %s", vc.Attempts, vc.harnessNote(), vc.missed()))
		}
		if opt.Progress != nil {
			opt.Progress(fmt.Sprintf("%s: %s outside tolerance, running again in %s", b.ID, strings.Join(again, ", "), sim.FormatDuration(RetryPause)))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(RetryPause):
		}
		sub := &Plan{Block: p.Block, Setup: p.Setup, Compress: p.Compress}
		for _, vp := range p.Variants {
			if slices.Contains(again, vp.Name) {
				sub.Variants = append(sub.Variants, vp)
			}
		}
		todo = sub
	}
	for _, vc := range bv.Variants {
		bv.OK = bv.OK && vc.OK
	}
	return bv, nil
}
