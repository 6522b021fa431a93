package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/lab"
)

func runCommand() *command {
	return &command{
		name:    "run",
		summary: "run a lab's scenarios in the model and print each block's variants side by side",
		usage:   "[--json] [--block ID] [--set key=value]... [--seed N] [--events FILE] [--link [--base URL]] FILE|LINK",
		example: `  sim run labs/php-persistent-share.md
  sim run --block idle --set pause=60s labs/php-persistent-pools.md
  sim run --json --block across-requests labs/php-persistent-share.md | jq '.blocks[0].variants[].summary.total_ms'
  sim run --events events.ndjson labs/port-exhaustion.md
  sim run 'http://127.0.0.1:8080/labs/idle-timeouts/?idle.pause=60s&idle.seed=3'
  sim run --link --block idle --set pause=60s labs/idle-timeouts.md

FILE is a lab (.md, its ` + "```sim" + ` blocks) or one scenario (.toml). Without --set, the
exit status is 1 when an expectation of the lab is not met. LINK is a lab page's address
as its "Copy link" gives it: the run's block, settings and seed (flags given too win).`,
		run: runCmd,
	}
}

// LabOutput is the JSON `sim run --json` prints.
type LabOutput struct {
	Lab    string             `json:"lab"`
	File   string             `json:"file"`
	Seed   uint64             `json:"seed"`
	Blocks []*lab.BlockResult `json:"blocks"`
}

func runCmd(ctx context.Context, env *Env, args []string) error {
	c := find("run")
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object instead of tables")
	block := fs.String("block", "", "run only the block with this id")
	seed := fs.Uint64("seed", 1, "random seed (the same seed gives the same output)")
	events := fs.String("events", "", "write every event as NDJSON to `FILE` (- for standard output)")
	series := fs.Bool("series", false, "with --json, add each variant's time series")
	var sets multiFlag
	fs.Var(&sets, "set", "override a scenario `key=value` in every variant (repeatable; sim params lists the keys)")
	lf := addLinkFlags(fs)
	pos, err := parse(c, env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want exactly one FILE"}
	}
	if pos[0], err = applyLink(fs, pos[0], block, &sets, seed); err != nil {
		return err
	}
	if *lf.print {
		return printLink(env, lf, pos[0], *block, sets, *seed)
	}
	overrides, err := sets.settings()
	if err != nil {
		return err
	}
	l, err := lab.ReadFileContext(ctx, pos[0])
	if err != nil {
		return err
	}
	var ids []string
	if *block != "" {
		if _, err := l.Block(*block); err != nil {
			return err
		}
		ids = []string{*block}
	}
	if len(l.Blocks) == 0 {
		return fmt.Errorf("%s: no ```sim blocks", l.File)
	}
	var ev *eventWriter
	if *events != "" {
		f, err := createFile(env, *events)
		if err != nil {
			return err
		}
		ev = &eventWriter{w: bufio.NewWriterSize(f, 1<<16), c: f}
		defer ev.close()
	}
	opt := lab.RunOptions{Seed: *seed, Set: overrides}
	if ev != nil {
		opt.Sink = ev.write
	}
	results, err := l.Run(ctx, ids, opt)
	if err != nil {
		return err
	}
	if len(overrides) > 0 {
		for _, r := range results {
			r.Checks = []lab.Check{} // the expectations describe the lab's own scenario
		}
	}
	out := LabOutput{Lab: l.Title, File: l.File, Seed: *seed, Blocks: results}
	if ev != nil {
		if err := ev.close(); err != nil {
			return err
		}
	}
	failed := 0
	for _, r := range out.Blocks {
		for _, ch := range r.Checks {
			if !ch.OK {
				failed++
			}
		}
	}
	if *asJSON {
		if err := writeJSON(env.Stdout, out, *series); err != nil {
			return err
		}
	} else {
		printLab(env.Stdout, l, out.Blocks, len(overrides) > 0)
	}
	if failed > 0 {
		if !*asJSON {
			fmt.Fprintf(env.Stderr, "sim run: %d expectation(s) not met\n", failed)
		}
		return exitError(1)
	}
	return nil
}

// BuiltVariant is a variant of `sim run --json --series`: its result and
// its time series. The site's pages are built with them (make data:
// site/data/results), and the widgets read them (schema.gen.ts).
type BuiltVariant struct {
	*lab.VariantResult
	Series []sim.Sample `json:"series"`
}

func writeJSON(w io.Writer, out LabOutput, withSeries bool) error {
	var v any = out
	if withSeries {
		type blockWithSeries struct {
			*lab.BlockResult
			Variants []BuiltVariant `json:"variants"`
		}
		blocks := make([]blockWithSeries, len(out.Blocks))
		for i, b := range out.Blocks {
			blocks[i].BlockResult = b
			for _, vr := range b.Variants {
				var s []sim.Sample
				if vr.Series != nil {
					s = vr.Series.Samples
				}
				blocks[i].Variants = append(blocks[i].Variants, BuiltVariant{vr, s})
			}
		}
		v = struct {
			LabOutput
			Blocks []blockWithSeries `json:"blocks"`
		}{out, blocks}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

type eventWriter struct {
	w   *bufio.Writer
	c   io.Closer
	buf []byte
	err error
}

func (e *eventWriter) write(block, variant string, ev *sim.Event) {
	if e.err != nil {
		return
	}
	e.buf = append(e.buf[:0], `{"block":`...)
	e.buf = sim.AppendJSONString(e.buf, block)
	e.buf = append(e.buf, `,"variant":`...)
	e.buf = sim.AppendJSONString(e.buf, variant)
	e.buf = append(e.buf, ',')
	n := len(e.buf)
	e.buf = ev.AppendJSON(e.buf)
	e.buf = append(e.buf[:n], e.buf[n+1:]...) // drop the event's own '{'
	e.buf = append(e.buf, '\n')
	_, e.err = e.w.Write(e.buf)
}

func (e *eventWriter) close() error {
	if e.c == nil {
		return e.err
	}
	if err := e.w.Flush(); err != nil && e.err == nil {
		e.err = err
	}
	if err := e.c.Close(); err != nil && e.err == nil {
		e.err = err
	}
	e.c = nil
	return e.err
}

// printLab writes each block as a table, variants side by side, then its
// expectations.
func printLab(w io.Writer, l *lab.Lab, results []*lab.BlockResult, overridden bool) {
	title := l.Title
	if title == "" {
		title = l.File
	}
	fmt.Fprintf(w, "%s (%s)\n", title, l.File)
	for _, r := range results {
		fmt.Fprintf(w, "\n■ %s", r.ID)
		if r.Title != "" {
			fmt.Fprintf(w, ": %s", r.Title)
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 2, 8, 3, ' ', 0)
		row := func(name string, cell func(s *sim.Summary) string) {
			fmt.Fprintf(tw, "  %s", name)
			for _, v := range r.Variants {
				if v.Summary == nil {
					fmt.Fprint(tw, "\t—")
					continue
				}
				fmt.Fprintf(tw, "\t%s", cell(v.Summary))
			}
			fmt.Fprintln(tw, "\t")
		}
		fmt.Fprint(tw, "  ")
		for _, v := range r.Variants {
			fmt.Fprintf(tw, "\t%s", v.Name)
		}
		fmt.Fprintln(tw, "\t")
		hasLabel := false
		for _, v := range r.Variants {
			hasLabel = hasLabel || v.Label != ""
		}
		if hasLabel {
			fmt.Fprint(tw, "  ")
			for _, v := range r.Variants {
				fmt.Fprintf(tw, "\t%s", v.Label)
			}
			fmt.Fprintln(tw, "\t")
		}
		any := func(f func(s *sim.Summary) bool) bool {
			for _, v := range r.Variants {
				if v.Summary != nil && f(v.Summary) {
					return true
				}
			}
			return false
		}
		row("requests", func(s *sim.Summary) string { return strconv.Itoa(s.Requests) })
		if any(func(s *sim.Summary) bool { return s.Calls != s.Requests }) {
			row("calls", func(s *sim.Summary) string { return strconv.Itoa(s.Calls) })
		}
		row("connects", func(s *sim.Summary) string { return strconv.Itoa(s.Connects) })
		if any(func(s *sim.Summary) bool { return s.Calls <= 12 }) {
			row("num_connects", func(s *sim.Summary) string { return listInts(s.NumConnects, 12) })
		}
		if any(func(s *sim.Summary) bool { return len(s.ConnectsPerWorker) > 1 }) {
			row("connects per worker", func(s *sim.Summary) string { return listInts(s.ConnectsPerWorker, 8) })
		}
		chain := any(func(s *sim.Summary) bool { return len(s.Chain) > 0 }) // no curl phases: hop rows instead
		for _, p := range sim.CurlPhases() {
			if chain && p.Key != "total" {
				continue
			}
			row(p.JSON+" p50", func(s *sim.Summary) string { st, _ := p.Stat(s); return num(st.P50) })
		}
		row("total_ms p90 / p99", func(s *sim.Summary) string { return num(s.Total.P90) + " / " + num(s.Total.P99) })
		if !chain && any(func(s *sim.Summary) bool { return s.Connects > 0 && s.Reused > 0 }) {
			row("total_ms p50 new conn / reused", func(s *sim.Summary) string {
				n, r := "-", "-"
				if s.Connects > 0 {
					n = num(s.NewConnTotal.P50)
				}
				if s.Reused > 0 {
					r = num(s.ReusedTotal.P50)
				}
				return n + " / " + r
			})
		}
		if any(func(s *sim.Summary) bool { return s.Response.P50 != s.Total.P50 }) {
			row("response_ms p50 / p99", func(s *sim.Summary) string { return num(s.Response.P50) + " / " + num(s.Response.P99) })
		}
		row("throughput_rps", func(s *sim.Summary) string { return num(s.ThroughputRPS) })
		row("time_wait_peak", func(s *sim.Summary) string { return strconv.Itoa(s.TimeWaitPeak) })
		if any(func(s *sim.Summary) bool { return s.ServerTimeWaitPeak > 0 }) {
			row("server_time_wait_peak", func(s *sim.Summary) string { return strconv.Itoa(s.ServerTimeWaitPeak) })
		}
		row("open_peak", func(s *sim.Summary) string { return strconv.Itoa(s.OpenPeak) })
		chainRows(r, row)
		if any(func(s *sim.Summary) bool { return s.Errors > 0 || s.Races > 0 }) {
			row("errors", func(s *sim.Summary) string { return strconv.Itoa(s.Errors) })
			row("races (retried)", func(s *sim.Summary) string { return strconv.Itoa(s.Races) })
		}
		if any(func(s *sim.Summary) bool { return s.PortErrors > 0 }) {
			row("EADDRNOTAVAIL", func(s *sim.Summary) string { return strconv.Itoa(s.PortErrors) })
			row("first EADDRNOTAVAIL at", func(s *sim.Summary) string { return optSeconds(s.FirstPortErrorS) })
			row("connects again at", func(s *sim.Summary) string { return optSeconds(s.RecoveredS) })
		}
		tw.Flush()
		for _, v := range r.Variants {
			if v.Error != "" {
				fmt.Fprintf(w, "  %s: %s\n", v.Name, v.Error)
			}
		}
		if overridden {
			fmt.Fprintln(w, "  (expectations not checked: --set changed the scenario)")
			continue
		}
		for _, ch := range r.Checks {
			mark := "ok  "
			if !ch.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "  %s %s   (got %s)\n", mark, ch.Expect, ch.Got)
		}
	}
}

func listInts(v []int, n int) string {
	parts := make([]string, 0, n+1)
	for i, x := range v {
		if i == n {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, strconv.Itoa(x))
	}
	return strings.Join(parts, " ")
}

func num(f float64) string {
	switch {
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case math.Abs(f) >= 100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	default:
		return strconv.FormatFloat(f, 'f', 2, 64)
	}
}

func optSeconds(p *float64) string {
	if p == nil {
		return "—"
	}
	return num(*p) + " s"
}
