package harness

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/lab"
)

// printedQuantities is what a lab page prints of each recorded block that
// is not a stack block (those: TestStackBlockCalibration), "lab/block" →
// the quantities held to the record. sized: within 15 % of the measured
// value, and in the record's order; ordered: in the record's order only.
// total_ms.p50 of a variant whose record compared it by kind (MixedNote:
// about as many calls on new connections as on kept ones, so the median
// falls between the two) is compared as new_conn_total_ms.p50 and
// reused_total_ms.p50, as the record does.
var printedQuantities = map[string]struct{ sized, ordered []string }{
	// The PHP pages print each variant's median call and its counts.
	"php-persistent-share/across-requests": {sized: []string{"total_ms.p50"}},
	"php-persistent-share/within-script":   {sized: []string{"total_ms.p50"}},
	"php-persistent-share/before-85":       {sized: []string{"total_ms.p50"}},
	"php-persistent-pools/workers":         {sized: []string{"total_ms.p50"}},
	"php-persistent-pools/idle":            {sized: []string{"total_ms.p50"}},
	"php-persistent-pools/option-sets":     {sized: []string{"total_ms.p50"}},
	// The nginx page prints the throughput with and without the fix.
	"nginx-keepalive/without": {sized: []string{"throughput_rps", "total_ms.p50"}},
	"nginx-keepalive/with":    {sized: []string{"throughput_rps", "total_ms.p50"}},
	// The pool page's round trip is 0.1 ms, below the range its record
	// judges times in (BelowRangeNote): its times are held to the
	// record's order (pool.total_ms.p50 < no-pool's), not their size.
	"connection-pool/no-pool": {sized: []string{"throughput_rps"}, ordered: []string{"total_ms.p50"}},
	"connection-pool/pool":    {sized: []string{"throughput_rps"}, ordered: []string{"total_ms.p50"}},
}

// knownDifferences are the printed variants that differ from their record
// by a mechanism the page teaches, "lab/block/variant" → the mechanism,
// applied to the page's scenario (the result is held to the record in the
// printed value's place, size and order), and the words of the page (en,
// ko) that teach it.
var knownDifferences = map[string]struct {
	apply  func(s *sim.Scenario)
	en, ko string
}{
	// The model resumes the TLS session after the pause; every real run
	// makes a full TLS 1.2 handshake (roles.curlTimers): libcurl asks for
	// no tickets (SSL_OP_NO_TICKET), and Go's crypto/tls keeps no session
	// IDs (servers.TestUpstreamResumesTLS12ByTicketOnly,
	// phpwasm.TestTLS12ResumptionNeedsSessionIDs).
	"php-persistent-pools/idle/pause-80s": {
		apply: func(s *sim.Scenario) { s.TLSResume = false },
		en:    "libcurl asks for no tickets (`SSL_OP_NO_TICKET` in curl's `openssl.c`)",
		ko:    "libcurl은 세션 티켓을 요청하지 않고",
	},
}

// printedVariant is what a record keeps of one variant, as far as the
// printed model is compared with it.
type printedVariant struct {
	Name     string       `json:"name"`
	Settings string       `json:"settings"`
	Measured *sim.Summary `json:"measured"`
	Error    string       `json:"real_error"`
	Scaling  []string     `json:"scaling"`
	Phases   []PhaseRow   `json:"phases"`
}

type printedRecord struct {
	Recorded string `json:"recorded"`
	Blocks   []struct {
		ID       string           `json:"id"`
		Setup    string           `json:"setup"`
		Variants []printedVariant `json:"variants"`
	} `json:"blocks"`
}

// metricOf reads a quantity of printedQuantities from a summary.
func metricOf(s *sim.Summary, q string) float64 {
	switch q {
	case "total_ms.p50":
		return s.Total.P50
	case "new_conn_total_ms.p50":
		return s.NewConnTotal.P50
	case "reused_total_ms.p50":
		return s.ReusedTotal.P50
	case "throughput_rps":
		return s.ThroughputRPS
	}
	panic("no quantity " + q)
}

// TestPrintedModelAgainstRecord holds what each recorded lab page prints
// (its blocks run as written, seed 1, as sim run --json does) to the
// record of the real run (LAB.real.json), block by block: every count the
// harness compares (CompareCounts: exact, or ±N where a pool's growth
// depends on timing) on the page's block at the record's length, each
// quantity of printedQuantities within 15 % of the measured one, and no
// two variants of the lab in the other order than the record's (which is
// faster, which fix is worth more). A refused variant prints the error the
// real software threw. A record's block that is neither here nor a stack
// block calibrated from its record fails.
func TestPrintedModelAgainstRecord(t *testing.T) {
	records, _ := filepath.Glob(filepath.Join(labsDir, "*.real.json"))
	checked := 0
	for _, path := range records {
		name := strings.TrimSuffix(filepath.Base(path), ".real.json")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var rec printedRecord
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			checked += holdPrinted(t, readLab(t, name+".md"), &rec)
		})
	}
	if checked == 0 {
		t.Error("no printed quantity was held to a record")
	}
}

// holdPrinted compares one lab with its record and returns how many
// quantities it compared.
func holdPrinted(t *testing.T, l *lab.Lab, rec *printedRecord) int {
	name := strings.TrimSuffix(filepath.Base(l.File), ".md")
	checked := 0
	// Every compared value, "block/variant" → quantity → [printed, measured].
	values := map[string]map[string][2]float64{}
	for _, rb := range rec.Blocks {
		key := name + "/" + rb.ID
		bl, err := l.Block(rb.ID)
		if err != nil {
			t.Errorf("%s: the record has block %q, the page not: %v", key, rb.ID, err)
			continue
		}
		q, ok := printedQuantities[key]
		if rb.Setup == SetupStack {
			if ok {
				t.Errorf("%s: a stack block is held to its record by TestStackBlockCalibration", key)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: recorded, but no quantity of it is held to the record (printedQuantities)", key)
			continue
		}
		res, err := bl.RunVariants(context.Background(), lab.RunOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := NewPlan(context.Background(), bl, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range bl.Variants {
			vk := rb.ID + "/" + v.Name
			j := slices.IndexFunc(rb.Variants, func(rv printedVariant) bool { return rv.Name == v.Name })
			if j < 0 {
				t.Errorf("%s: not in the record (sim validate --record)", vk)
				continue
			}
			rv, pv, vp := rb.Variants[j], res.Variants[i], plan.Variants[i]
			if rv.Settings != bl.Settings(v) {
				t.Errorf("%s changed since it was recorded (sim validate --record): recorded %s; now %s", vk, rv.Settings, bl.Settings(v))
				continue
			}
			if pv.Error != "" || rv.Error != "" {
				if ModelText(pv.Error) != rv.Error {
					t.Errorf("%s: the page prints the error %q, the real software threw %q", vk, ModelText(pv.Error), rv.Error)
				}
				checked++
				continue
			}
			if rv.Measured == nil {
				t.Errorf("%s: the record has no measurement", vk)
				continue
			}
			// Counts: the page's own run where the record ran as long;
			// else the page's block cut to the record's length (the
			// harness's plan, whose scaling the record names).
			counted := pv.Summary
			if counted.Requests != rv.Measured.Requests {
				if !slices.Equal(vp.Scaling, rv.Scaling) {
					t.Errorf("%s: the harness would run it as %q; the record ran %q", vk, vp.Scaling, rv.Scaling)
					continue
				}
				r, err := sim.Run(context.Background(), vp.Scenario, sim.Options{Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				counted = &r.Summary
			}
			for _, c := range CompareCounts(counted, rv.Measured, vp.Timing, vp.Overlap, vp.Setup == SetupProxy) {
				if !c.OK {
					t.Errorf("%s: %s: the page's model %v, the record %v (allowed: %s)", vk, c.Name, c.Model, c.Measured, c.Allowed)
				}
			}
			shown := pv.Summary
			if kd, ok := knownDifferences[name+"/"+vk]; ok {
				for file, words := range map[string]string{l.File: kd.en, strings.TrimSuffix(l.File, ".md") + ".ko.md": kd.ko} {
					if src, err := os.ReadFile(file); err != nil || !strings.Contains(strings.Join(strings.Fields(string(src)), " "), words) {
						t.Errorf("%s: the page differs from the record by a mechanism %s should teach (%q): %v", vk, file, words, err)
					}
				}
				s := *pv.Scenario
				kd.apply(&s)
				r, err := sim.Run(context.Background(), s, sim.Options{Seed: 1})
				if err != nil {
					t.Fatal(err)
				}
				shown = &r.Summary
			}
			values[vk] = map[string][2]float64{}
			mixed := slices.ContainsFunc(rv.Phases, func(p PhaseRow) bool { return p.Phase == "total" && p.Note == MixedNote })
			for _, qn := range append(slices.Clone(q.sized), q.ordered...) {
				qs := []string{qn}
				if qn == "total_ms.p50" && mixed {
					qs = []string{"new_conn_total_ms.p50", "reused_total_ms.p50"}
				}
				for _, qn2 := range qs {
					p, m := metricOf(shown, qn2), metricOf(rv.Measured, qn2)
					if shown != pv.Summary {
						t.Logf("%s: %s: printed %.4g; with the difference the page teaches %.4g", vk, qn2, metricOf(pv.Summary, qn2), p)
					}
					values[vk][qn2] = [2]float64{p, m}
					if !slices.Contains(q.sized, qn) {
						continue
					}
					checked++
					t.Logf("%s: %s: printed %.4g, measured %.4g (%+.1f %%)", vk, qn2, p, m, 100*(p-m)/m)
					if math.Abs(p-m) > 0.15*m {
						what := "the page prints"
						if shown != pv.Summary {
							what = "the page's model with the difference it teaches gives"
						}
						t.Errorf("%s: %s: %s %.4g, the record measured %.4g (%+.1f %%, more than 15 %% apart)", vk, qn2, what, p, m, 100*(p-m)/m)
					}
				}
			}
		}
	}
	// The order: no two variants of the lab the other way round (1 %
	// apart or more in both, as TestStackBlockCalibration).
	for _, a := range slices.Sorted(maps.Keys(values)) {
		for _, b := range slices.Sorted(maps.Keys(values)) {
			for qn, va := range values[a] {
				vb, ok := values[b][qn]
				if !ok {
					continue
				}
				if va[0] > 1.01*vb[0] && vb[1] > 1.01*va[1] {
					t.Errorf("%s: the page puts %s (%.4g) above %s (%.4g); the record measured the other order (%.4g, %.4g)",
						qn, a, va[0], b, vb[0], va[1], vb[1])
				}
			}
		}
	}
	return checked
}
