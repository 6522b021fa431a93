package lab

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim"
)

// TestMetricNamesAreTheSummaryJSON: the metrics an expectation may name are
// the keys a Summary marshals to, and those of each Stat in it (a chain's
// hops and tiers, keyed by name, are tested with the chains).
func TestMetricNamesAreTheSummaryJSON(t *testing.T) {
	one := 1.0
	raw, _ := json.Marshal(sim.Summary{FirstPortErrorS: &one, RecoveredS: &one, Chain: []string{"app"}})
	var m map[string]any
	json.Unmarshal(raw, &m)
	want := map[string]bool{"error": true}
	for k, v := range m {
		want[k] = true
		if sub, ok := v.(map[string]any); ok {
			for s := range sub {
				want[k+"."+s] = true
			}
		}
	}
	if got := slices.Sorted(maps.Keys(metricNames)); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
		t.Errorf("metric names %q\nSummary JSON %q", got, slices.Sorted(maps.Keys(want)))
	}
	for _, p := range sim.CurlPhases() {
		if !knownMetric([]string{p.JSON, "p50"}) {
			t.Errorf("phase %s: no metric %s.p50", p.Key, p.JSON)
		}
	}
}

// TestLabEventsFollowTheSchema: the events of every lab's variants, cut to
// 2000 requests, carry what their kind carries and only words of sim's
// vocabulary (the first 300 events of each kind in each variant).
func TestLabEventsFollowTheSchema(t *testing.T) {
	files, _ := filepath.Glob("../../labs/*.md")
	short := []Setting{{Key: "requests", Value: int64(2000)}, {Key: "duration", Value: "0s"}}
	for _, f := range files {
		if strings.HasSuffix(f, ".ko.md") {
			continue
		}
		l, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		_, err = l.Run(context.Background(), nil, RunOptions{Seed: 1, Set: short, Sink: func(block, variant string, e *sim.Event) {
			key := block + "/" + variant + "/" + e.Kind.String()
			if seen[key]++; seen[key] > 300 {
				return
			}
			if err := sim.CheckEvent(e); err != nil {
				t.Errorf("%s %s/%s: %v", f, block, variant, err)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) == 0 {
			t.Errorf("%s: no events", f)
		}
	}
}
