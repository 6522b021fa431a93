package site

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/i18n"
)

// The widgets' generated types: the results (sim schema --ts) and the run
// protocol's messages (sim schema --ts-messages).
var generatedTS = []struct{ file, flag string }{
	{filepath.Join("assets", "ts", "sim", "schema.gen.ts"), "--ts"},
	{filepath.Join("assets", "ts", "sim", "protocol.gen.ts"), "--ts-messages"},
}

// The committed TypeScript types are what `sim schema` gives now: a field
// added to an Event or a message, a phase or a word of the vocabulary fails
// here until make gen writes them again.
func TestSchemaGenerated(t *testing.T) {
	for _, g := range generatedTS {
		want, err := simCLI("schema", g.flag)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(g.file)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from `sim schema %s`: run make gen", g.file, g.flag)
		}
	}
}

// Every phase of the phase table has its UI string (the waterfall's
// legend and tooltips, the home page's figure) in both languages: adding a
// phase to sim/phase.go needs its words here and nothing else.
func TestPhaseStrings(t *testing.T) {
	for _, lang := range i18n.Langs {
		for _, p := range sim.Phases() {
			if _, ok := i18n.Lookup(lang, p.Label); !ok {
				t.Errorf("sim/i18n/%s.toml has no %q (phase %s)", lang, p.Label, p.Key)
			}
		}
	}
}
