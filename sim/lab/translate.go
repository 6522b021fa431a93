package lab

import (
	"slices"
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"
)

// ScenarioDiff says how b's scenario differs from a's ("" when they run the
// same): the keys and values, tiers, variants (names and settings),
// expectations and the prediction's metric, tolerance and values. Texts a
// reader reads (title, note, labels, comments, the prediction's question
// and choices) may differ: a translation's block has its own.
func ScenarioDiff(a, b *Block) string {
	settings := func(sts []Setting) string {
		var parts []string
		for _, st := range sts {
			parts = append(parts, msgf.Sprintf("%s=%#v", st.Key, st.Value))
		}
		return strings.Join(parts, ", ")
	}
	if x, y := settings(a.Base), settings(b.Base); x != y {
		return msgf.Sprintf("keys {%s}, not {%s}", y, x)
	}
	if !slices.Equal(a.Tiers, b.Tiers) {
		return msgf.Sprintf("tiers %v, not %v", b.Tiers, a.Tiers)
	}
	if len(a.Variants) != len(b.Variants) {
		return msgf.Sprintf("%d variants, not %d", len(b.Variants), len(a.Variants))
	}
	for i := range a.Variants {
		va, vb := a.Variants[i], b.Variants[i]
		if va.Name != vb.Name || settings(va.Settings) != settings(vb.Settings) {
			return msgf.Sprintf("variant %s {%s}, not %s {%s}", vb.Name, settings(vb.Settings), va.Name, settings(va.Settings))
		}
	}
	var ea, eb []string
	for _, x := range a.Expects {
		ea = append(ea, x.Text)
	}
	for _, x := range b.Expects {
		eb = append(eb, x.Text)
	}
	if !slices.Equal(ea, eb) {
		return msgf.Sprintf("expect %q, not %q", eb, ea)
	}
	pa, pb := a.Predict, b.Predict
	switch {
	case (pa == nil) != (pb == nil):
		return "a [predict] table in one language only"
	case pa != nil && (pa.Kind != pb.Kind || pa.Metric != pb.Metric || pa.Tolerance != pb.Tolerance ||
		pa.TolerancePct != pb.TolerancePct || !slices.Equal(pa.Values, pb.Values) || len(pa.Choices) != len(pb.Choices)):
		return msgf.Sprintf("predict %s %q ±%v%s %v, not %s %q ±%v%s %v", pb.Kind, pb.Metric, pb.Tolerance, pctSign(pb.TolerancePct), pb.Values,
			pa.Kind, pa.Metric, pa.Tolerance, pctSign(pa.TolerancePct), pa.Values)
	}
	return ""
}

func pctSign(pct bool) string {
	if pct {
		return "%"
	}
	return ""
}
