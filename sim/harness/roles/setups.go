package roles

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
}

var setups = map[string]setup{
	wire.SetupHTTP: {
		doc: "PHP-like worker processes (real OS processes) whose curl-like clients call an HTTPS or HTTP upstream, resolving its name through the harness's DNS server",
		run: func(lp *labProc, ctx context.Context, rep *wire.Report, cleanup *[]func()) (*wire.Report, error) {
			return lp.runWorkers(ctx, rep, cleanup, lp.startHTTP)
		},
	},
	wire.SetupRedis: {
		doc: "worker processes whose go-redis clients (one per request, or a pool per process) call miniredis, or redis-server with --real redis",
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
	wire.SetupProxy: {
		doc: "a closed-loop load generator calls a reverse proxy (a Go one, or nginx with --real nginx) whose workers call the upstream, with or without upstream keep-alive",
		run: (*labProc).runProxy,
	},
	string(sim.SetupStack): {
		doc: "a block's [[tier]] tables on the real programs: a closed-loop Go load → nginx → the article's Flask app under gunicorn (gthread) or Flask's development server → redis-server, with redis-py; calibrated, then measured per hop and per side (the stack role, not a lab process)",
		run: func(*labProc, context.Context, *wire.Report, *[]func()) (*wire.Report, error) {
			return nil, fmt.Errorf("setup %q runs in the stack role (harness.RunPlan), not in a lab process", sim.SetupStack)
		},
	},
}

// Setups lists the setups there are, sorted.
func Setups() []string {
	names := make([]string, 0, len(setups))
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
		line := "  " + name + ":"
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
func Adjust(setupName string, s *sim.Scenario) []string {
	if st, ok := setups[setupName]; ok && st.adjust != nil {
		return st.adjust(s)
	}
	return nil
}
