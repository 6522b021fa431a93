package roles

import (
	"slices"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim"
)

// TestSetupsMatchScenarioKey: every value of the scenario's setup key but
// auto has a setup here, and every setup here is a value of the key.
func TestSetupsMatchScenarioKey(t *testing.T) {
	p, ok := sim.LookupParam("setup")
	if !ok {
		t.Fatal("no setup key in sim.Scenario")
	}
	var want []sim.Setup
	for _, v := range p.Enum {
		if v != string(sim.SetupAuto) {
			want = append(want, sim.Setup(v))
		}
	}
	slices.Sort(want)
	if got := Setups(); !slices.Equal(got, want) {
		t.Errorf("setups %v, the setup key's values %v (without auto)", got, want)
	}
	if p.Default != "auto" || !p.Fixed {
		t.Errorf("setup key: default %q, fixed %v; want auto, shown as fixed text", p.Default, p.Fixed)
	}
	for _, name := range Setups() {
		if !strings.Contains(SetupHelp(), "  "+string(name)+": ") {
			t.Errorf("SetupHelp has no line for %s", name)
		}
	}
}

// TestMainArgs: Main plays a role only for its own subcommand.
func TestMainArgs(t *testing.T) {
	for _, args := range [][]string{nil, {}, {"run", "x.md"}, {"lab"}, {"--" + Command}} {
		if code, ok := Main(args); ok {
			t.Errorf("Main(%q) played a role (exit %d)", args, code)
		}
	}
	if code, ok := Main([]string{Command, "juggler"}); !ok || code != 2 {
		t.Errorf("an unknown role: exit %d, handled %v; want 2, true", code, ok)
	}
}
