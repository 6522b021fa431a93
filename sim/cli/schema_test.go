package cli

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness"
)

// TestSchemaCommand: sim schema --json holds sim params --json's list (with
// each enum key's type), the vocabulary, the phases and the JSON types, the
// comparison's row among them; the text form lists the same words.
func TestSchemaCommand(t *testing.T) {
	out, errs, code := runSim(t, "schema", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Params []map[string]any            `json:"params"`
		Enums  map[string][]string         `json:"enums"`
		Phases []map[string]any            `json:"phases"`
		Types  map[string][]map[string]any `json:"types"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	pout, _, _ := runSim(t, "params", "--json")
	var params []map[string]any
	if err := json.Unmarshal([]byte(pout), &params); err != nil {
		t.Fatal(err)
	}
	if len(doc.Params) != len(params) {
		t.Fatalf("%d params, sim params lists %d", len(doc.Params), len(params))
	}
	for i, p := range doc.Params {
		typ, _ := p["enum_type"].(string)
		delete(p, "enum_type")
		if !reflect.DeepEqual(p, params[i]) {
			t.Errorf("param %d: %v\nsim params: %v", i, p, params[i])
		}
		if p["kind"] == "enum" && !reflect.DeepEqual(p["enum"], anySlice(doc.Enums[typ])) {
			t.Errorf("%s: enum %v, type %q has %v", p["key"], p["enum"], typ, doc.Enums[typ])
		}
	}
	if got := doc.Enums["Reuse"]; !slices.Equal(got, sim.Enums()["Reuse"]) || !slices.Contains(got, string(sim.ReuseUpstreamKeepalive)) {
		t.Errorf("Reuse: %q", got)
	}
	if len(doc.Phases) != len(sim.Phases()) || doc.Phases[1]["label"] != "ph_dns" || doc.Phases[1]["color"] == "" {
		t.Errorf("phases: %v", doc.Phases)
	}
	for _, name := range []string{"Event", "Summary", "Stat", "Sample", "PhaseRow"} {
		if len(doc.Types[name]) == 0 {
			t.Errorf("types.%s missing", name)
		}
	}
	// PhaseRow lists what a comparison row marshals to.
	b, _ := json.Marshal(harness.PhaseRow{Note: "n", OneCallMS: 1})
	var row map[string]any
	json.Unmarshal(b, &row)
	var names []string
	for _, f := range doc.Types["PhaseRow"] {
		names = append(names, f["name"].(string))
	}
	if want := slices.Sorted(maps.Keys(row)); !slices.Equal(slices.Sorted(slices.Values(names)), want) {
		t.Errorf("PhaseRow: %q, marshals to %q", names, want)
	}

	text, _, code := runSim(t, "schema")
	for _, want := range []string{"upstream-keepalive", "idle-timeout", "time_starttransfer", "#b65ad5", "EADDRNOTAVAIL: connect()", "local_port"} {
		if code != 0 || !strings.Contains(text, want) {
			t.Errorf("sim schema: exit %d, no %q", code, want)
		}
	}
}

func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
