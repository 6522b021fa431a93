package cli

import (
	"fmt"
	"strconv"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/lab"
)

// chainRows adds, for a block with tiers, a few rows per hop (the
// connections into a tier, by side) and per tier.
func chainRows(r *lab.BlockResult, row func(string, func(*sim.Summary) string)) {
	var chain []string
	for _, v := range r.Variants {
		if v.Summary != nil && len(v.Summary.Chain) > len(chain) {
			chain = v.Summary.Chain
		}
	}
	hop := func(name string, f func(h *sim.HopSummary) string) func(*sim.Summary) string {
		return func(s *sim.Summary) string {
			if h := s.Hop[name]; h != nil {
				return f(h)
			}
			return "-"
		}
	}
	tier := func(name string, f func(t *sim.TierSummary) string) func(*sim.Summary) string {
		return func(s *sim.Summary) string {
			if t := s.Tier[name]; t != nil {
				return f(t)
			}
			return "-"
		}
	}
	// A hop's lookups and TLS handshakes, where some variant has them.
	secured := map[string]bool{}
	for _, v := range r.Variants {
		if v.Summary == nil {
			continue
		}
		for name, h := range v.Summary.Hop {
			secured[name] = secured[name] || h.Lookups+h.TLSFull+h.TLSResumed > 0
		}
	}
	for i, name := range chain {
		from := "load"
		if i > 0 {
			from = chain[i-1]
		}
		label := fmt.Sprintf("%s → %s", from, name)
		row(label+": connects / reused", hop(name, func(h *sim.HopSummary) string {
			return strconv.Itoa(h.Connects) + " / " + strconv.Itoa(h.Reused)
		}))
		if secured[name] {
			row(label+": DNS lookups / TLS full / resumed", hop(name, func(h *sim.HopSummary) string {
				return fmt.Sprintf("%d / %d / %d", h.Lookups, h.TLSFull, h.TLSResumed)
			}))
		}
		row(label+": TIME_WAIT "+from+" / "+name+" (both)", hop(name, func(h *sim.HopSummary) string {
			return fmt.Sprintf("%d / %d (%d)", h.TimeWaitClient, h.TimeWaitServer, h.Simultaneous)
		}))
		row(label+": open / idle peak", hop(name, func(h *sim.HopSummary) string {
			return strconv.Itoa(h.OpenPeak) + " / " + strconv.Itoa(h.IdlePeak)
		}))
		row(label+": EADDRNOTAVAIL", hop(name, func(h *sim.HopSummary) string { return strconv.Itoa(h.PortErrors) }))
		row(name+": utilisation / queue_ms p50", tier(name, func(t *sim.TierSummary) string {
			return num(t.Utilisation) + " / " + num(t.Queue.P50)
		}))
	}
}
