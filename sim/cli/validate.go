package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness"
	"github.com/connlab/connlab/sim/lab"
)

// maxTareText is harness.MaxTare as the help and the output write it.
var maxTareText = sim.FormatDuration(harness.MaxTare)

func validateCommand() *command {
	return &command{
		name:    "validate",
		summary: "run a lab's blocks in the model and on real loopback servers, and compare them phase by phase",
		usage:   "[--json] [--record] [--block ID] [--variant NAME]... [--real nginx,redis|none] [--set key=value]... [--tolerance 5%,0.5ms] FILE",
		example: `  sim validate labs/php-persistent-share.md
  sim validate --block across-requests --set rtt=50ms labs/php-persistent-share.md
  sim validate --real none labs/nginx-keepalive.md   (the Go proxy instead of nginx)
  sim validate --json --block exhaust labs/port-exhaustion.md | jq '.blocks[].variants[] | {name, ok}'

Every variant runs twice with the same parameters: in the model (virtual
time) and on real servers on 127.0.0.1 (TLS, DNS, Redis, a proxy, worker
processes, the kernel's own TIME_WAIT in a private network namespace):
nginx and redis-server where they are installed, else (or with --real none)
a Go proxy and miniredis, and each variant says which ran (real:). Each
of curl's phases must have its measured median within the tolerance of the
model's, and the connection counts must be equal. A variant outside
tolerance is run once more (--retries), since a busy machine slows real
runs down.

Each variant ends in a verdict: agree; disagree (exit status 1); or
inconclusive (exit status 2, when nothing disagrees): it missed only where
a busy machine slows a run down (phases slower than the model, counts that
depend on timing) while the machine was measured busy: other programs used
over ` + fmt.Sprint(harness.BusyOthersCPUs) + ` of a CPU on average during the run (/proc/stat's busy time
less the run's own processes'), or the harness fell behind its own
emulated network by as much as the phases missed by. A count compared
exactly, or a phase quicker than the model, disagrees however busy the
machine was. Bad usage or input also exits 2, with an error and no verdict.

Before comparing, the harness measures its own overhead at each variant's
RTT: reused HTTPS calls with no server work, whose every microsecond beyond
the round trip is the harness's (threads that slept through the round trip
wake up late; a small VM shows tenths of a millisecond). It is printed
with each variant, and up to ` + maxTareText + ` of it, the accuracy the emulated
path promises for one round trip, is added to the tolerance of a phase for
each round trip it holds (three for a call that opens a TLS 1.3
connection, one for a reused call). Where about
half the calls open a connection and half reuse one, the median of all calls
falls between the two groups and is shown without a verdict: the totals of
each kind (total, new conn; total, reused) are compared instead.

What ran is printed with each variant (runtime:): for the php setups, the PHP
version, libcurl and its TLS library, in WebAssembly or native, or the Go
stand-in and why PHP could not run (--json: "runtime"). A variant the model
rejects (PHP's ValueError for a COOKIE share option) is run on PHP too, and
PHP's exception must be the model's text word for word; both are printed.

Statements about the real software: a block's real_expect list (expect's
syntax) is held to the run's measured results, besides the model's numbers
(and to check.ID, what a probing script's statement returned or threw, and
runtime.KEY: name, php, curl, ssl, persistent_share). They fail the run like
a phase out of tolerance; with a stand-in they are listed as not checked.
--record writes what ran next to the lab, LAB.real.json (the --json output
with when, how and on what machine): go test holds every real_expect to that
record without a real run, so a page whose prose disagrees with the real
software fails its tests. Record again after changing a block (the record
keeps each variant's settings, and a changed block fails the test as stale).

` + harness.ScalingRules,
		run: validateCmd,
	}
}

// ValidateOutput is the JSON `sim validate --json` prints, and what
// --record writes (lab.Record reads it).
type ValidateOutput struct {
	Lab       string `json:"lab"`
	File      string `json:"file"`
	Tolerance string `json:"tolerance"`
	// When and where it ran, and how (--record).
	Recorded string                     `json:"recorded,omitempty"`
	Command  string                     `json:"command,omitempty"`
	Machine  map[string]string          `json:"machine"`
	Blocks   []*harness.BlockValidation `json:"blocks"`
	OK       bool                       `json:"ok"`
	// Verdict is disagree when a variant or a real_expect statement
	// does, else inconclusive when a variant is (the machine was too busy
	// to measure it), else agree; sim validate exits 1, 2 or 0.
	Verdict string `json:"verdict"`
}

// verdict is the run's verdict from its variants and real_expect
// statements.
func (out *ValidateOutput) verdict(realOK bool) string {
	v := harness.VerdictAgree
	for _, b := range out.Blocks {
		for _, vc := range b.Variants {
			switch vc.Verdict {
			case harness.VerdictDisagree:
				return harness.VerdictDisagree
			case harness.VerdictInconclusive:
				v = harness.VerdictInconclusive
			}
		}
	}
	if !realOK {
		return harness.VerdictDisagree
	}
	return v
}

func validateCmd(ctx context.Context, env *Env, args []string) error {
	c := find("validate")
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of tables")
	record := fs.Bool("record", false, "write what ran to LAB.real.json next to the lab, for go test to hold real_expect to (every block, no --block, --variant or --set)")
	block := fs.String("block", "", "validate only the block with this id")
	var variants, sets, modelSets multiFlag
	fs.Var(&variants, "variant", "validate only this variant (repeatable)")
	fs.Var(&sets, "set", "override a scenario `key=value` in every variant (repeatable; sim params lists the keys)")
	fs.Var(&modelSets, "model-set", "change `key=value` in the model's side only, after --set: a model made wrong on purpose, to see that validate catches it (repeatable; not for stack blocks)")
	real := fs.String("real", "nginx,redis", "the real programs to use where installed, `nginx,redis`; none: the stand-ins (a Go proxy, miniredis), which also run where a program is missing")
	seed := fs.Uint64("seed", 1, "random seed, shared by the model and the real load generator")
	tolFlag := fs.String("tolerance", "5%,0.5ms", "a phase's median may differ from the model's by the larger of a percentage and a duration")
	retries := fs.Int("retries", 1, "run a variant outside tolerance again this many times")
	compress := fs.Float64("compress", 0, fmt.Sprintf("divide long timers (keep-alive, pauses, idle ages) by this factor (default: %g, and %g for the php setups)", float64(harness.DefaultCompress), float64(harness.PHPCompress)))
	maxReq := fs.Int("max-requests", harness.DefaultMaxRequests, "at most this many requests per variant")
	maxDur := fs.Duration("max-duration", harness.DefaultMaxDuration, "at most this long per variant, as the model predicts it")
	maxRate := fs.Float64("max-rate", harness.DefaultMaxRate, "slow an open loop down to at most this many requests a second")
	pos, err := parse(c, env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want exactly one FILE"}
	}
	if *record && (*block != "" || len(variants) > 0 || len(sets) > 0 || len(modelSets) > 0) {
		return usageError{"--record records every block as the lab writes it: leave out --block, --variant, --set and --model-set"}
	}
	tol, err := harness.ParseTolerance(*tolFlag)
	if err != nil {
		return usageError{"--tolerance: " + err.Error()}
	}
	realParts, err := parseReal(*real)
	if err != nil {
		return err
	}
	switch {
	case *retries < 0 || *retries > 10:
		return usageError{"--retries: want 0 to 10"}
	case *compress != 0 && (*compress < 1 || *compress > 1e6):
		return usageError{"--compress: want 1 to 1000000"}
	case *maxReq < 1 || *maxReq > 100000:
		return usageError{"--max-requests: want 1 to 100000"}
	case *maxDur <= 0 || *maxDur > time.Hour:
		return usageError{"--max-duration: want a duration up to 1h"}
	case *maxRate < 1 || *maxRate > 100000:
		return usageError{"--max-rate: want 1 to 100000"}
	}
	overrides, err := sets.settings()
	if err != nil {
		return err
	}
	modelOverrides, err := modelSets.settings()
	if err != nil {
		return err
	}
	for _, st := range modelOverrides {
		probe := sim.Default()
		if err := probe.Set(st.Key, st.Value); err != nil {
			return usageError{"--model-set: " + err.Error()}
		}
	}
	l, err := lab.ReadFileContext(ctx, pos[0])
	if err != nil {
		return err
	}
	if len(l.Blocks) == 0 {
		return fmt.Errorf("%s: no ```sim blocks", l.File)
	}
	blocks := l.Blocks
	if *block != "" {
		b, err := l.Block(*block)
		if err != nil {
			return err
		}
		blocks = []*lab.Block{b}
	}
	opt := harness.Options{Set: overrides, ModelSet: modelOverrides, Variants: variants, Seed: *seed, Real: realParts,
		Compress: *compress, MaxRequests: *maxReq, MaxDuration: *maxDur, MaxRate: *maxRate, Progress: newProgress(env.Stderr)}
	// Check every block's plan before running any, so bad input never
	// leaves a half-written result.
	for _, b := range blocks {
		if _, err := harness.NewPlan(ctx, b, opt); err != nil {
			return err
		}
	}
	out := ValidateOutput{Lab: l.Title, File: l.File, OK: true, Machine: machine(),
		Tolerance: fmt.Sprintf("%s + the harness's own overhead, up to %s a round trip", tol, maxTareText)}
	for _, b := range blocks {
		bv, err := harness.Validate(ctx, b, opt, tol, *retries)
		if err != nil {
			return err
		}
		out.Blocks = append(out.Blocks, bv)
		out.OK = out.OK && bv.OK
	}
	out.Machine["load_after"] = loadAvg()
	realOK := harness.CheckReal(l, out.Blocks)
	out.OK = out.OK && realOK
	out.Verdict = out.verdict(realOK)
	if *record {
		if err := writeRecord(l, &out, args); err != nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "sim validate: recorded %s\n", lab.RecordPath(l.File))
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		printValidation(env.Stdout, &out)
	}
	switch out.Verdict {
	case harness.VerdictDisagree:
		return exitError(1)
	case harness.VerdictInconclusive:
		return exitError(2)
	}
	return nil
}

// newProgress prints progress on w once a run has lasted a second.
func newProgress(w io.Writer) func(string) {
	start := time.Now()
	var mu sync.Mutex
	return func(m string) {
		if el := time.Since(start); el >= time.Second {
			mu.Lock()
			fmt.Fprintf(w, "[%5.1fs] %s\n", el.Seconds(), m)
			mu.Unlock()
		}
	}
}

// writeRecord writes the run next to the lab (lab.RecordPath). A record
// is of the real software: a block with real_expect statements that did
// not run on it (a stand-in ran) is not recorded.
func writeRecord(l *lab.Lab, out *ValidateOutput, args []string) error {
	if out.Verdict == harness.VerdictInconclusive {
		return fmt.Errorf("--record: the machine was too busy to measure every variant (see INCONCLUSIVE above); nothing was written: record on a quieter machine")
	}
	for _, bv := range out.Blocks {
		if bv.RealProblem != "" {
			return fmt.Errorf("--record: block %q: %s; nothing was written", bv.ID, bv.RealProblem)
		}
	}
	rec := *out
	rec.Recorded = time.Now().UTC().Format(time.RFC3339)
	rec.Command = "sim validate " + strings.Join(args, " ")
	b, err := json.MarshalIndent(&rec, "", "  ")
	if err != nil {
		return err
	}
	path := lab.RecordPath(l.File)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// machine says where a run ran: the CPU, the load, Node.js.
func machine() map[string]string {
	m := map[string]string{"goos": runtime.GOOS, "goarch": runtime.GOARCH, "cpus": strconv.Itoa(runtime.NumCPU()), "load_before": loadAvg()}
	// The environment's timer slack, which the harness's processes lower
	// to 1 ns for themselves (netem.TightenTimerSlack).
	if b, err := os.ReadFile("/proc/self/timerslack_ns"); err == nil {
		m["timer_slack_ns"] = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// loadAvg is the 1, 5 and 15 minute load averages ("" off Linux).
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func printValidation(w io.Writer, out *ValidateOutput) {
	title := out.Lab
	if title == "" {
		title = out.File
	}
	fmt.Fprintf(w, "%s (%s): model and real loopback servers, tolerance %s\n", title, out.File, out.Tolerance)
	if l := out.Machine["load_before"]; l != "" {
		fmt.Fprintf(w, "machine: %s CPUs, load %s before, %s after (a busy machine slows real runs down)\n", out.Machine["cpus"], l, out.Machine["load_after"])
	}
	total, bad, skipped, badReal := 0, []string{}, 0, []string{}
	var unsure, standIns []string
	standInWhy := ""
	for _, b := range out.Blocks {
		fmt.Fprintf(w, "\n■ %s", b.ID)
		if b.Title != "" {
			fmt.Fprintf(w, ": %s", b.Title)
		}
		fmt.Fprintf(w, "   [setup: %s]\n", b.Setup)
		if b.Calibration != nil {
			printCalibration(w, b)
		}
		for _, v := range b.Variants {
			name := v.Name
			if v.Label != "" {
				name += " (" + v.Label + ")"
			}
			fmt.Fprintf(w, "  %s\n", name)
			if n := v.Runtime["name"]; n != "" {
				fmt.Fprintf(w, "    runtime: %s\n", n)
			}
			for _, s := range v.Scaling {
				fmt.Fprintf(w, "    scaled: %s\n", s)
			}
			for _, c := range v.Components {
				fmt.Fprintf(w, "    real: %s\n", c)
			}
			for _, n := range v.Notes {
				fmt.Fprintf(w, "    note: %s\n", n)
			}
			if v.RealError != "" || (v.ModelError != "" && v.Skipped == "") {
				who := "real"
				if p := v.Runtime["php"]; p != "" {
					who = "PHP " + p
				}
				fmt.Fprintf(w, "    the model rejects it: %s\n    %s threw:%s %s\n", v.ModelError, who, strings.Repeat(" ", max(0, len("the model rejects it")-len(who)-6)), orNone(v.RealError))
			}
			for _, k := range slices.Sorted(maps.Keys(v.Checks)) {
				fmt.Fprintf(w, "    check.%s: %s\n", k, v.Checks[k])
			}
			if v.Skipped != "" {
				fmt.Fprintf(w, "    not compared: %s\n", v.Skipped)
				skipped++
				continue
			}
			total++
			if v.Chain != nil {
				printChain(w, v.Chain)
			}
			if len(v.Phases) > 0 {
				fmt.Fprintf(w, "    harness overhead on this machine: %.3f ms a reused call (up to %s of it for each round trip is in the tolerance column)\n",
					v.HarnessOverheadMS, maxTareText)
				if v.LateReads > 0 {
					fmt.Fprintf(w, "    harness lag: %d reads of arrived bytes came over 1 ms after they were due, the latest %.3f ms (the harness's processes were not scheduled in time); a phase may hold that much of the harness's own time\n",
						v.LateReads, v.HarnessLagMS)
				}
				if v.LateWrites > 0 {
					fmt.Fprintf(w, "    harness write lag: %d writes of bytes held until a due time left over 1 ms after it, the latest %.3f ms; a phase may hold that much of the harness's own time\n",
						v.LateWrites, v.HarnessWriteLagMS)
				}
				if !v.OK && v.HarnessStart != nil {
					fmt.Fprintf(w, "    harness start: %s\n", v.HarnessStart)
				}
				tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
				fmt.Fprintln(tw, "    phase\tmodel ms\tmeasured p50\tp90\terror\ttolerance\t\t")
				note, oneCall := "", 0.0
				for _, p := range v.Phases {
					tol, mark := fmt.Sprintf("±%.3f", p.ToleranceMS), okMark(p.OK)
					if p.Note != "" {
						tol, mark, note = "-", "*", p.Note
					} else if p.OneCallMS > 0 {
						tol, oneCall = tol+"†", p.OneCallMS
					}
					fmt.Fprintf(tw, "    %s\t%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t\n", p.Phase, p.ModelMS, p.MeasuredMS, p.MeasuredP90MS, pct(p), tol, mark)
				}
				tw.Flush()
				if note != "" {
					fmt.Fprintf(w, "    * not held to the tolerance: %s\n", note)
				}
				if oneCall > 0 {
					fmt.Fprintf(w, "    † one or two calls: no median averages their variation away, so the tolerance allows %.3f ms more, how much one new connection's call varies here (the 90th percentile of the measured calls less their median)\n", oneCall)
				}
			}
			var parts []string
			for _, c := range v.Counts {
				s := fmt.Sprintf("%s %v", c.Name, compact(c.Model))
				if !c.OK || fmt.Sprint(c.Model) != fmt.Sprint(c.Measured) {
					s += fmt.Sprintf(" vs %v", compact(c.Measured))
				}
				if c.Allowed != "exact" {
					s += " (" + c.Allowed + ")"
				}
				if !c.OK {
					s += " FAIL"
				}
				parts = append(parts, s)
			}
			if len(parts) > 0 {
				fmt.Fprintf(w, "    counts (model = measured unless shown): %s\n", strings.Join(parts, "; "))
			}
			attempts := ""
			if v.Attempts > 1 {
				attempts = fmt.Sprintf(" (attempt %d)", v.Attempts)
			}
			for _, e := range v.Earlier {
				fmt.Fprintf(w, "    %s\n", e)
			}
			if v.Share != nil && !v.OK {
				fmt.Fprintf(w, "    machine: %s\n", v.Share)
			}
			switch {
			case v.OK:
				fmt.Fprintf(w, "    ok%s\n", attempts)
			case v.Verdict == harness.VerdictInconclusive:
				fmt.Fprintf(w, "    INCONCLUSIVE%s: %s\n", attempts, v.Inconclusive)
				unsure = append(unsure, b.ID+"/"+v.Name)
			default:
				fmt.Fprintf(w, "    OUTSIDE TOLERANCE%s\n", attempts)
				if v.HarnessLate != "" {
					fmt.Fprintf(w, "    harness late: %s\n", v.HarnessLate)
				}
				if v.Why != "" {
					fmt.Fprintf(w, "    not the machine's doing: %s\n", v.Why)
				}
				bad = append(bad, b.ID+"/"+v.Name)
			}
			if r := v.Runtime["stand_in"]; r != "" && v.Skipped == "" {
				standIns = append(standIns, b.ID+"/"+v.Name)
				standInWhy = r
			}
		}
		if b.RealProblem != "" {
			fmt.Fprintf(w, "  real_expect not checked: %s\n", b.RealProblem)
		}
		for _, c := range b.RealChecks {
			fmt.Fprintf(w, "  real %-4s %s   (got %s)\n", okMark(c.OK), c.Expect, c.Got)
			if !c.OK {
				badReal = append(badReal, b.ID+": "+c.Expect)
			}
		}
	}
	fmt.Fprintln(w)
	agree := total - len(bad) - len(unsure)
	switch {
	case len(bad) == 0 && len(unsure) == 0:
		fmt.Fprintf(w, "verdict: all %d variants run for real agree with the model (tolerance %s)", total, out.Tolerance)
	case len(bad) == 0:
		fmt.Fprintf(w, "verdict: inconclusive: %d of %d variants could not be measured, the machine was busy: %s; the other %d agree with the model (tolerance %s). Run it again on a quieter machine",
			len(unsure), total, strings.Join(unsure, ", "), agree, out.Tolerance)
	default:
		fmt.Fprintf(w, "verdict: %d of %d variants outside tolerance: %s", len(bad), total, strings.Join(bad, ", "))
		if len(unsure) > 0 {
			fmt.Fprintf(w, "; %d inconclusive, the machine was busy: %s", len(unsure), strings.Join(unsure, ", "))
		}
	}
	if len(standIns) > 0 {
		fmt.Fprintf(w, "; %d of them ran on the %s instead of PHP itself (%s): %s", len(standIns), harness.StandInNote, standInWhy, strings.Join(standIns, ", "))
	}
	if skipped > 0 {
		fmt.Fprintf(w, "; %d not compared (see above)", skipped)
	}
	if len(badReal) > 0 {
		fmt.Fprintf(w, "; %d real_expect statements do not hold: %s", len(badReal), strings.Join(badReal, "; "))
	}
	fmt.Fprintln(w)
}

func orNone(s string) string {
	if s == "" {
		return "(no error)"
	}
	return s
}

func pct(p harness.PhaseRow) string {
	if p.ModelMS == 0 {
		return fmt.Sprintf("%+.3fms", p.MeasuredMS-p.ModelMS)
	}
	return strconv.FormatFloat(p.ErrorPct, 'f', 1, 64) + "%"
}

func okMark(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}

// compact prints long lists shortened.
func compact(v any) string {
	if l, ok := v.([]int); ok && len(l) > 12 {
		return listInts(l, 12)
	}
	if l, ok := v.([]int); ok {
		return "[" + listInts(l, 12) + "]"
	}
	return fmt.Sprint(v)
}

// parseReal reads --real: the real programs to use where installed
// (nginx, redis), or none for the stand-ins.
func parseReal(v string) ([]string, error) {
	if strings.TrimSpace(v) == "none" {
		return nil, nil
	}
	var parts []string
	for _, r := range strings.Split(v, ",") {
		switch r = strings.TrimSpace(r); r {
		case "":
		case "nginx", "redis":
			parts = append(parts, r)
		default:
			return nil, usageError{fmt.Sprintf("--real: want nginx and/or redis, or none, got %q", r)}
		}
	}
	if len(parts) == 0 {
		return nil, usageError{"--real: want nginx and/or redis, or none, got nothing"}
	}
	return parts, nil
}
