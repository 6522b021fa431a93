package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/connlab/connlab/sim/harness"
)

// printCalibration prints the costs a stack block's calibration windows
// gave the model.
func printCalibration(w io.Writer, b *harness.BlockValidation) {
	c := b.Calibration
	fmt.Fprintf(w, "  calibration: CPU time per request fitted over %d calibration windows (interleaved with the measured ones), ms\n", c.Windows)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "    tier\tper request\tper connection accepted\tper connection opened\tfit rms\t")
	fmt.Fprintf(tw, "    load\t%.3f\t\t\t\t\n", c.LoadCPU)
	for _, name := range []string{"nginx", "app", "redis"} {
		t := c.Tiers[name]
		if t == nil {
			continue
		}
		per := fmt.Sprintf("%.3f", t.ServerTime)
		if name == "redis" {
			per += " per command"
		}
		fmt.Fprintf(tw, "    %s\t%s\t%.3f\t%.3f\t%.3f\t\n", name, per, t.ServerConnTime, t.ClientConnTime, t.Residual)
	}
	tw.Flush()
	for _, n := range c.Notes {
		fmt.Fprintf(w, "    note: %s\n", n)
	}
	fmt.Fprintf(w, "  tolerance: %s\n", b.Tolerance)
}

// printChain prints a stack variant's comparison per hop and side.
func printChain(w io.Writer, cc *harness.ChainComparison) {
	if in := cc.Input; in != nil {
		parts := []string{fmt.Sprintf("%d CPUs, of which other programs took %.2f in this window", in.CPUs, in.Background),
			fmt.Sprintf("the load was held off the CPUs %.0f times a second, for %.2f ms (median; 99th percentile %.1f ms)", in.LoadStalls, in.LoadStallMS, in.LoadStallP99MS)}
		var spread []string
		for _, t := range []string{"nginx", "app"} {
			if ws := in.WorkerShares[t]; len(ws) > 0 {
				each := make([]string, len(ws))
				for i, v := range ws {
					each[i] = fmt.Sprintf("%.2f", v)
				}
				spread = append(spread, t+" "+strings.Join(each, "/"))
			}
		}
		if len(spread) > 0 {
			parts = append(parts, "each process's part of its tier's work as measured, which places the model's connections ("+strings.Join(spread, ", ")+")")
		}
		for hop, sh := range in.Shares {
			parts = append(parts, fmt.Sprintf("close race on hop %s as measured in this window (server first %.3f, both %.3f)", hop, sh[0], sh[1]))
		}
		fmt.Fprintf(w, "    model given: %s\n", strings.Join(parts, "; "))
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "    hop\tside\tmetric\tmodel\tmeasured\terror\tallowed\t\t")
	for _, r := range cc.Rows {
		hop, side := r.Hop, r.Side
		if hop == "" {
			hop = "stack"
		}
		if side == "" {
			side = "-"
		}
		mark := okMark(r.OK)
		if r.Allowed == "shown" || r.Allowed == "not compared" {
			mark = ""
		}
		errs := "-"
		if r.Model != 0 {
			errs = fmt.Sprintf("%+.1f%%", r.ErrorPct)
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", hop, side, r.Metric, chainNum(r.Model), chainNum(r.Measured), errs, r.Allowed, mark)
	}
	tw.Flush()
	noted := map[string]bool{}
	for _, r := range cc.Rows {
		if k := r.Hop + "\x00" + r.Note; r.Note != "" && !noted[k] {
			noted[k] = true
			if r.Hop == "" {
				fmt.Fprintf(w, "    %s, %s: %s\n", r.Metric, r.Allowed, r.Note)
			} else {
				fmt.Fprintf(w, "    hop %s, %s: %s\n", r.Hop, r.Allowed, r.Note)
			}
		}
	}
	for _, rs := range cc.Race {
		fmt.Fprintf(w, "    close race on hop %s (%d connections closed with their exchange): TIME_WAIT on the accepting side alone %.3f, both %.3f, the connecting side alone %.3f (preset %.3f, %.3f)\n",
			rs.Hop, rs.Closes, rs.Server, rs.Both, rs.Client, rs.Preset[0], rs.Preset[1])
	}
	if len(cc.CPUPerRequestMS) > 0 {
		var parts []string
		for _, t := range []string{"load", "nginx", "app", "redis"} {
			if v, ok := cc.CPUPerRequestMS[t]; ok {
				parts = append(parts, fmt.Sprintf("%s %.3f/%.3f", t, v[0], v[1]))
			}
		}
		fmt.Fprintf(w, "    CPU ms per request, model/measured: %s\n", strings.Join(parts, ", "))
	}
}

func chainNum(x float64) string {
	switch {
	case x == float64(int64(x)):
		return fmt.Sprintf("%d", int64(x))
	case x >= 100 || x <= -100:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.3g", x)
}
