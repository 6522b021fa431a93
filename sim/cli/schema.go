package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/runsvc"
	"github.com/connlab/connlab/sim/lab"
)

func schemaCommand() *command {
	return &command{
		name:    "schema",
		summary: "describe the scenario keys, the vocabulary, the phases and the JSON of events and results",
		usage:   "[--json | --ts | --ts-messages]",
		example: `  sim schema           # the vocabulary and the phases, as tables
  sim schema --json    # one document: what the site's TypeScript types are made from
  sim schema --ts > site/assets/ts/sim/schema.gen.ts   # those types (make gen)
  sim schema --ts-messages > site/assets/ts/sim/protocol.gen.ts   # the run messages (make gen)

The document is sim.Schema (params, enums, phases, types) with more
entries in types: Phase (a row of the phase table), PhaseRow (a phase of a
model-versus-measured comparison: sim validate --json, the live page's real
runs), and the lab package's Check (an expectation checked), Control (a key
a page lets the reader change), Instance and ScenarioRef (an exercise as a
student sees it). --ts prints the same as TypeScript: a type per enum, an
interface per type, and the phase table as the constant PHASES.
--ts-messages prints the run protocol's messages (sim/server/PROTOCOL.md,
the document's "messages"): an interface each and the unions ClientMsg and
ServerMsg.`,
		run: schemaCmd,
	}
}

// schema is the document `sim schema --json` prints: sim.NewSchema with the
// types the site reads from other packages (the comparison's rows, a lab's
// controls and checks, an exercise) and the run protocol's messages.
func schema() sim.Schema {
	s := sim.NewSchema()
	sim.AddEnum(&s, lab.ExerciseKinds)
	sim.AddEnum(&s, runsvc.RunModes)
	for _, t := range []reflect.Type{
		reflect.TypeFor[sim.Phase](),
		reflect.TypeFor[runsvc.PhaseRow](),
		reflect.TypeFor[lab.Check](),
		reflect.TypeFor[lab.Control](),
		reflect.TypeFor[lab.Instance](),
		reflect.TypeFor[lab.ScenarioRef](),
		reflect.TypeFor[lab.RubricPoint](),
		reflect.TypeFor[BuiltVariant](),
	} {
		s.AddType(t)
	}
	for _, m := range []struct {
		dir, typ string
		t        reflect.Type
	}{
		{"client", "run", reflect.TypeFor[runsvc.Run]()},
		{"client", "cancel", reflect.TypeFor[runsvc.Cancel]()},
		{"client", "lab", reflect.TypeFor[runsvc.LabLoad]()},
		{"client", "exercises", reflect.TypeFor[runsvc.ExercisesReq]()},
		{"server", "error", reflect.TypeFor[runsvc.Error]()},
		{"server", "queued", reflect.TypeFor[runsvc.Queued]()},
		{"server", "started", reflect.TypeFor[runsvc.Started]()},
		{"server", "events", reflect.TypeFor[runsvc.Events]()},
		{"server", "stats", reflect.TypeFor[runsvc.Stats]()},
		{"server", "truncated", reflect.TypeFor[runsvc.Truncated]()},
		{"server", "dropped", reflect.TypeFor[runsvc.Dropped]()},
		{"server", "done", reflect.TypeFor[runsvc.Done]()},
		{"server", "lab", reflect.TypeFor[runsvc.LabLoaded]()},
		{"server", "exercises", reflect.TypeFor[runsvc.Exercises]()},
	} {
		s.AddMessage(m.dir, m.typ, m.t)
	}
	return s
}

func schemaCmd(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("schema", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON document")
	asTS := fs.Bool("ts", false, "print the document as TypeScript types (site/assets/ts/sim/schema.gen.ts)")
	asTSMsgs := fs.Bool("ts-messages", false, "print the run protocol's messages as TypeScript types (site/assets/ts/sim/protocol.gen.ts)")
	pos, err := parse(find("schema"), env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{"takes no arguments"}
	}
	s := schema()
	if n := btoi(*asJSON) + btoi(*asTS) + btoi(*asTSMsgs); n > 1 {
		return usageError{"one of --json, --ts and --ts-messages"}
	}
	if *asTSMsgs {
		_, err := env.Stdout.Write(typeScriptMessages(s))
		return err
	}
	if *asTS {
		_, err := env.Stdout.Write(typeScript(s))
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	w := env.Stdout
	fmt.Fprintln(w, "vocabulary (sim params lists the scenario keys)")
	names := make([]string, 0, len(s.Enums))
	for n := range s.Enums {
		names = append(names, n)
	}
	slices.Sort(names)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, n := range names {
		vals := s.Enums[n]
		if slices.ContainsFunc(vals, func(v string) bool { return strings.Contains(v, " ") }) {
			fmt.Fprintf(tw, "  %s\t%s\n", n, strings.Join(vals, "\n\t"))
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\n", n, strings.Join(vals, "  "))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nphases (cumulative from the start of a call)")
	tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  key\tcurl\tjson\tEvent\tSummary\tsetup\tsegment\tlabel\tcolour")
	for _, p := range s.Phases {
		setup := "-"
		if p.Setup {
			setup = "yes"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Key, dash(p.Curl), p.JSON, p.EventField, dash(p.SummaryField), setup, p.Segment, p.Label, p.Color)
	}
	tw.Flush()
	types := make([]string, 0, len(s.Types))
	for n := range s.Types {
		types = append(types, n)
	}
	slices.Sort(types)
	for _, n := range types {
		fmt.Fprintf(w, "\n%s\n", n)
		tw = tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
		for _, f := range s.Types[n] {
			typ := f.Type
			if f.Enum != "" {
				typ += " (" + f.Enum + ")"
			}
			if f.Nullable {
				typ += " or null"
			}
			kinds := ""
			if len(f.Kinds) > 0 {
				kinds = "on " + strings.Join(f.Kinds, ", ")
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Name, typ, f.Unit, kinds)
		}
		tw.Flush()
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
