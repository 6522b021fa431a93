//go:build !nolabparse

package lab

// Reading a block's [[tier]] tables. Not in a nolabparse build (see the
// package doc).

import (
	"sort"

	"github.com/connlab/connlab/sim/internal/msgf"

	"github.com/connlab/connlab/sim"
)

// parseTiers reads the block's [[tier]] tables: the tier names in order and
// their keys as settings. line is the block's first line; lines maps key
// paths to lines within it.
func parseTiers(v any, lines map[string]int, line int) (names []string, settings []Setting, rel int, err error) {
	tables, ok := v.([]any)
	if !ok {
		return nil, nil, lines["tier"], msgf.Errorf("tier: write each tier as a [[tier]] table with a name")
	}
	for i, t := range tables {
		tm, ok := t.(map[string]any)
		prefix := msgf.Sprintf("tier[%d]", i)
		if !ok {
			return nil, nil, lines["tier"], msgf.Errorf("tier: write each tier as a [[tier]] table with a name")
		}
		name, ok := tm["name"].(string)
		if !ok {
			return nil, nil, lines[prefix], msgf.Errorf("tier %d needs a name (name = \"app\")", i+1)
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
		return nil, lines[prefix+".tier"], msgf.Errorf("tier: in a variant, set a tier's key as tier.NAME.KEY = value")
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
			return nil, lines[prefix+".tier."+n], msgf.Errorf("tier.%s: want tier.%s.KEY = value", n, n)
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
