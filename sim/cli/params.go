package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/connlab/connlab/sim"
)

func paramsCommand() *command {
	return &command{
		name:    "params",
		summary: "list every scenario key with its default, limits and meaning",
		usage:   "[--json]",
		example: "  sim params\n  sim params --json   # what the lab pages build their controls from",
		run: func(ctx context.Context, env *Env, args []string) error {
			fs := flag.NewFlagSet("params", flag.ContinueOnError)
			asJSON := fs.Bool("json", false, "print the list as JSON")
			pos, err := parse(find("params"), env, fs, args)
			if err != nil {
				return err
			}
			if len(pos) > 0 {
				return usageError{"takes no arguments"}
			}
			if *asJSON {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(sim.Params())
			}
			tw := tabwriter.NewWriter(env.Stdout, 2, 8, 2, ' ', 0)
			fmt.Fprintln(tw, "key\tdefault\tlimits\tmeaning")
			for _, p := range sim.Params() {
				limits := ""
				switch {
				case p.Min != "" || p.Max != "":
					limits = p.Min + " … " + p.Max
				case len(p.Enum) > 0:
					limits = fmt.Sprint(p.Enum)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Key, p.Default, limits, p.Help)
			}
			return tw.Flush()
		},
	}
}
