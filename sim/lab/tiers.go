package lab

import (
	"strings"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/internal/jsonlite"
)

// A block may describe a chain of tiers, one [[tier]] table each, in
// order:
//
//	[[tier]]
//	name = "nginx"
//	workers = 2
//	reuse = "none"
//
// A tier's keys are scenario keys set over the block's (see sim/chain.go);
// they become the settings "tier.NAME.KEY" of the block, and a variant or
// --set changes them the same way: tier.nginx.reuse = "upstream-keepalive".

// checkTierSetting checks tier.NAME.KEY's value on a scratch tier of that
// name; whether the block has the tier is checked when its scenario is
// built.
func checkTierSetting(key string, v any, line int) (Setting, error) {
	name, _, _ := strings.Cut(strings.TrimPrefix(key, "tier."), ".")
	s := sim.Default()
	if err := s.AddTier(name); err != nil {
		return Setting{}, msgf.Errorf("%s: %v", key, err)
	}
	if err := s.Set(key, v); err != nil {
		return Setting{}, err
	}
	return Setting{Key: key, Value: v, Line: line}, nil
}

// tierParam returns the description of the key a tier setting sets.
func tierParam(key string) (sim.Param, bool) {
	rest := strings.TrimPrefix(key, "tier.")
	_, sub, ok := strings.Cut(rest, ".")
	if !ok {
		return sim.Param{}, false
	}
	return sim.LookupParam(sub)
}

// hopMetrics and tierMetrics name what hop.NAME.… and tier.NAME.… read.
var hopMetrics, tierMetrics = jsonNames(sim.HopSummary{}), jsonNames(sim.TierSummary{})

// knownChainMetric reports whether path reads a hop or a tier of a chain:
// hop.NAME.METRIC or tier.NAME.METRIC (the name is checked when the
// expectation is evaluated).
func knownChainMetric(path []string) bool {
	if len(path) < 3 {
		return false
	}
	rest := strings.Join(path[2:], ".")
	switch path[0] {
	case "hop":
		return hopMetrics[rest]
	case "tier":
		return tierMetrics[rest]
	}
	return false
}

// jsonNames lists the JSON names of v's fields, and of their fields
// ("call_ms.p50").
func jsonNames(v any) map[string]bool {
	names := map[string]bool{}
	raw, _ := jsonlite.Marshal(v)
	x, _ := jsonlite.Decode(raw)
	m, _ := x.(map[string]any)
	for k, x := range m {
		names[k] = true
		if sub, ok := x.(map[string]any); ok {
			for s := range sub {
				names[k+"."+s] = true
			}
		}
	}
	return names
}
