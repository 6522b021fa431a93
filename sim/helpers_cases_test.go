package sim

import (
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"
)

// helperCases is testdata/helpers.json: cases the Go and the TypeScript
// helpers of one job share (site/helpers_ts_test.go runs the TypeScript).
type helperCases struct {
	ParseDuration []struct {
		Text string   `json:"text"`
		MS   *float64 `json:"ms"`
	} `json:"parse_duration"`
	FormatDuration []struct {
		MS   float64 `json:"ms"`
		Text string  `json:"text"`
	} `json:"format_duration"`
}

// A scenario's durations read as Go's time.ParseDuration reads them (what
// Set uses) and print as FormatDuration prints them; the page's controls
// do the same (site/assets/ts/sim/helpers.ts).
func TestDurationCases(t *testing.T) {
	raw, err := os.ReadFile("testdata/helpers.json")
	if err != nil {
		t.Fatal(err)
	}
	var c helperCases
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.ParseDuration) < 10 || len(c.FormatDuration) < 10 {
		t.Fatalf("%d parse and %d format cases", len(c.ParseDuration), len(c.FormatDuration))
	}
	for _, x := range c.ParseDuration {
		d, err := time.ParseDuration(x.Text)
		switch {
		case x.MS == nil && err == nil:
			t.Errorf("ParseDuration(%q) = %v, want an error", x.Text, d)
		case x.MS != nil && (err != nil || d != time.Duration(math.Round(*x.MS*1e6))):
			t.Errorf("ParseDuration(%q) = %v, %v; want %vms", x.Text, d, err, *x.MS)
		}
	}
	for _, x := range c.FormatDuration {
		if got := FormatDuration(time.Duration(math.Round(x.MS * 1e6))); got != x.Text {
			t.Errorf("FormatDuration(%vms) = %q, want %q", x.MS, got, x.Text)
		}
	}
}
