package lab

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/connlab/connlab/sim"
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

// parseTiers reads the block's [[tier]] tables: the tier names in order and
// their keys as settings. line is the block's first line; lines maps key
// paths to lines within it.
func parseTiers(v any, lines map[string]int, line int) (names []string, settings []Setting, rel int, err error) {
	tables, ok := v.([]any)
	if !ok {
		return nil, nil, lines["tier"], fmt.Errorf("tier: write each tier as a [[tier]] table with a name")
	}
	for i, t := range tables {
		tm, ok := t.(map[string]any)
		prefix := fmt.Sprintf("tier[%d]", i)
		if !ok {
			return nil, nil, lines["tier"], fmt.Errorf("tier: write each tier as a [[tier]] table with a name")
		}
		name, ok := tm["name"].(string)
		if !ok {
			return nil, nil, lines[prefix], fmt.Errorf("tier %d needs a name (name = \"app\")", i+1)
		}
		scratch := sim.Default()
		for _, prev := range names {
			_ = scratch.AddTier(prev)
		}
		if err := scratch.AddTier(name); err != nil {
			return nil, nil, lines[prefix+".name"], err
		}
		names = append(names, name)
		for _, k := range sortedKeys(tm, lines, prefix+".") {
			if k == "name" {
				continue
			}
			kl := lines[prefix+"."+k]
			st, err := checkTierSetting("tier."+name+"."+k, tm[k], line+kl-1)
			if err != nil {
				return nil, nil, kl, err
			}
			settings = append(settings, st)
		}
	}
	return names, settings, 0, nil
}

// variantTierSettings flattens a variant's tier.NAME.KEY = value (a nested
// table once decoded) into settings.
func variantTierSettings(v any, lines map[string]int, line int, prefix string) ([]Setting, int, error) {
	byTier, ok := v.(map[string]any)
	if !ok {
		return nil, lines[prefix+".tier"], fmt.Errorf("tier: in a variant, set a tier's key as tier.NAME.KEY = value")
	}
	var out []Setting
	names := make([]string, 0, len(byTier))
	for n := range byTier {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		keys, ok := byTier[n].(map[string]any)
		if !ok {
			return nil, lines[prefix+".tier."+n], fmt.Errorf("tier.%s: want tier.%s.KEY = value", n, n)
		}
		for _, k := range sortedKeys(keys, lines, prefix+".tier."+n+".") {
			kl := lines[prefix+".tier."+n+"."+k]
			st, err := checkTierSetting("tier."+n+"."+k, keys[k], line+kl-1)
			if err != nil {
				return nil, kl, err
			}
			out = append(out, st)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out, 0, nil
}

// checkTierSetting checks tier.NAME.KEY's value on a scratch tier of that
// name; whether the block has the tier is checked when its scenario is
// built.
func checkTierSetting(key string, v any, line int) (Setting, error) {
	name, _, _ := strings.Cut(strings.TrimPrefix(key, "tier."), ".")
	s := sim.Default()
	if err := s.AddTier(name); err != nil {
		return Setting{}, fmt.Errorf("%s: %v", key, err)
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
	raw, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
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
