package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/connlab/connlab/sim/lab"
)

func labCommand() *command {
	return &command{
		name:    "lab",
		summary: "show a lab as read: its blocks, variants, controls, expectations and exercises",
		usage:   "[--json] FILE",
		example: `  sim lab labs/idle-timeouts.md
  sim lab --json labs/idle-timeouts.ko.md   # what the site's pages are made from

--json prints lab.Data: every ` + "```sim" + ` block as read (base settings,
variants with their labels and settings, expectations) with the keys its
page shows as controls and as fixed values, and every ` + "```exercise" + `
block. make data writes it to site/data/labs/LANG/PAGE.json; the page's
model in the browser runs it without reading the Markdown again.`,
		run: labCmd,
	}
}

func labCmd(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the lab as JSON (lab.Data)")
	pos, err := parse(find("lab"), env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"want exactly one FILE"}
	}
	l, err := lab.ReadFileContext(ctx, pos[0])
	if err != nil {
		return err
	}
	d, err := l.Data()
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	w := env.Stdout
	fmt.Fprintf(w, "%s: %s\n", d.File, d.Title)
	for _, b := range d.Blocks {
		fmt.Fprintf(w, "\nblock %s (line %d): %s\n", b.ID, b.FenceLine, b.Title)
		tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
		var names []string
		for _, v := range b.Variants {
			names = append(names, v.Name)
		}
		fmt.Fprintf(tw, "  variants\t%s\n", strings.Join(names, ", "))
		var controls []string
		for _, c := range b.Controls {
			controls = append(controls, fmt.Sprintf("%s = %v", c.Key, c.Value))
		}
		fmt.Fprintf(tw, "  controls\t%s\n", dash(strings.Join(controls, ", ")))
		var fixed []string
		for _, s := range b.Fixed {
			fixed = append(fixed, fmt.Sprintf("%s = %v", s.Key, s.Value))
		}
		fmt.Fprintf(tw, "  fixed\t%s\n", dash(strings.Join(fixed, ", ")))
		for _, x := range b.Expect {
			fmt.Fprintf(tw, "  expect\t%s\n", x.Text)
		}
		tw.Flush()
	}
	if len(d.Exercises) > 0 {
		fmt.Fprintln(w, "\nexercises")
		tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
		for _, x := range d.Exercises {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", x.ID, x.Kind, x.Title)
		}
		tw.Flush()
	}
	return nil
}
