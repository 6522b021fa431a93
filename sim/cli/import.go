package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/connlab/connlab/sim/measure"
)

func importCommand() *command {
	return &command{
		name:    "import",
		summary: "read your own measurements (a HAR, curl -w '%{json}' lines, k6 --out json) and say what connection reuse would change per host",
		usage:   "FILE [--json] [--format har|curl|k6]",
		example: `  sim import site.har
  curl -s -o /dev/null -o /dev/null -w '%{json}\n' URL URL | sim import -
  sim import --json --format k6 results.json

FILE - reads standard input. The format is told from the content unless
--format names it. Files over 50 MB or with over a million calls are refused;
an entry that cannot be read is named (HAR entry index from 0, line number
from 1 for curl and k6) with its field.

A call opened a new connection when: HAR, it spent time in dns, connect or
ssl, or its connection id appears for the first time; curl, num_connects > 0;
k6, http_req_connecting > 0. Otherwise it reused one.

What reuse would save is an estimate from your data, not a model run:
(new connections - the fewest a pool needs) x the median setup (DNS + TCP +
TLS) of the new-connection calls. The fewest a pool needs is the peak number
of calls to the host at once when the file gives start times (HAR, k6), else 1
(curl).

--json prints {"file", "format", "calls", "hosts": [...]}; each host has:
  host                   scheme://host:port
  calls, new_connections, reused, reused_share (0 to 1)
  new, reused_calls      the phases of the calls that opened / reused a
                         connection: n, and {p50, p90} in ms of
                         namelookup_ms, connect_ms, appconnect_ms,
                         starttransfer_ms, total_ms (curl's names: each from
                         the call's start) and setup_ms (DNS + TCP + TLS)
  min_pool               the fewest connections a pool needs
  min_pool_from          "peak_concurrency" or "no_start_times" (then 1)
  setup_p50_ms, setup_n  the median setup, over the setup_n new-connection
                         calls that measured one
  avoidable_connections  new_connections - min_pool, at least 0
  saved_ms               avoidable_connections x setup_p50_ms
  saved_per_call_ms      saved_ms / calls`,
		run: importCmd,
	}
}

// importDoc is what sim import --json prints.
type importDoc struct {
	File   string                `json:"file"`
	Format measure.Format        `json:"format"`
	Calls  int                   `json:"calls"`
	Hosts  []measure.HostSummary `json:"hosts"`
}

func importCmd(ctx context.Context, env *Env, args []string) error {
	c := find("import")
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the summary as JSON (its fields are listed below)")
	formatName := fs.String("format", "", "the input's format: har, curl or k6 (default: told from the content)")
	pos, err := parse(c, env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"takes one FILE (- for standard input)"}
	}
	format, err := measure.ParseFormat(*formatName)
	if err != nil {
		return usageError{"--format: " + err.Error()}
	}
	name := pos[0]
	lim := measure.DefaultLimits
	var in io.Reader = env.Stdin
	if name == "-" {
		name = "standard input"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		// Refuse a large file before reading it.
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > lim.MaxBytes {
			return fmt.Errorf("%s: %w: %s, more than %s (the limit)", name, measure.ErrTooLarge, measure.Size(st.Size()), measure.Size(lim.MaxBytes))
		}
		in = f
	}
	calls, format, err := measure.Read(in, format, lim)
	if err != nil {
		var me *measure.Error
		if errors.As(err, &me) || errors.Is(err, measure.ErrTooLarge) {
			return fmt.Errorf("%s: %w", name, err)
		}
		return fmt.Errorf("reading %s: %w", name, err)
	}
	doc := importDoc{File: name, Format: format, Calls: len(calls), Hosts: measure.Summarize(calls)}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return printImport(env.Stdout, &doc)
}

// printImport prints one block per host: the counts, the phases of new and
// reused calls side by side, and the estimate.
func printImport(w io.Writer, d *importDoc) error {
	fmt.Fprintf(w, "%s: %s, %d calls to %d host(s) (an estimate from your measurements, not a model run)\n", d.File, d.Format, d.Calls, len(d.Hosts))
	for _, h := range d.Hosts {
		fmt.Fprintf(w, "\n%s\n  %d calls: %d opened a connection, %d reused one (%.0f%% reused)\n", h.Host, h.Calls, h.NewConns, h.Reused, 100*h.Share)
		tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  ms, from the call's start\tnew p50\tnew p90\treused p50\treused p90\t\n")
		row := func(name string, a, b measure.Stat) {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t\n", name, stat(h.New.N, a.P50), stat(h.New.N, a.P90), stat(h.ReusedPhs.N, b.P50), stat(h.ReusedPhs.N, b.P90))
		}
		row("namelookup", h.New.NameLookup, h.ReusedPhs.NameLookup)
		row("connect", h.New.Connect, h.ReusedPhs.Connect)
		row("appconnect", h.New.AppConnect, h.ReusedPhs.AppConnect)
		row("starttransfer", h.New.StartTransfer, h.ReusedPhs.StartTransfer)
		row("total", h.New.Total, h.ReusedPhs.Total)
		row("setup (dns+tcp+tls)", h.New.Setup, h.ReusedPhs.Setup)
		if err := tw.Flush(); err != nil {
			return err
		}
		pool := "the peak number of calls at once"
		if h.MinPoolFrom == "no_start_times" {
			pool = "no start times in the file, so 1"
		}
		fmt.Fprintf(w, "  a pool needs at least %d connection(s) (%s)\n", h.MinPool, pool)
		if h.SetupN == 0 {
			fmt.Fprintf(w, "  no new-connection call measured its setup: no estimate\n")
			continue
		}
		fmt.Fprintf(w, "  median setup of a new connection: %.3f ms (%d calls)\n", h.SetupP50, h.SetupN)
		fmt.Fprintf(w, "  reuse would save: %d avoidable connection(s) x %.3f ms = %.3f ms, %.3f ms per call\n",
			h.Avoidable, h.SetupP50, h.SavedMS, h.SavedPerCall)
	}
	return nil
}

// stat prints a value, or "-" when no call was in its group.
func stat(n int, v float64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}
