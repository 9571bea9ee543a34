package caketest

import "math"

// Change is cake_change at now, as `tc qdisc change ... cake` sends it: an
// attribute for each setting of p that differs from the model's, then
// cake_reconfigure. A new rate, diffserv mode, rtt, target or memory
// limit retunes the tins and COBALT at once; nothing queued moves,
// except that the tins a smaller diffserv mode lacks are emptied
// (cake_clear_tin: their packets are lost uncounted, as in Linux). As
// cake_change does when TCA_CAKE_OVERHEAD or TCA_CAKE_RAW comes, a new
// overhead or a change to or from raw restarts the min and max lengths.
func (m *Model) Change(p Params, now int64) error {
	if err := p.validate(); err != nil {
		return err
	}
	m.tick(now)
	p = p.withDefaults()
	old := m.p
	m.p = p
	if p.Rate != old.Rate {
		m.rateBps = p.Rate
	}
	if p.Overhead != old.Overhead || p.OverheadFlag != old.OverheadFlag {
		m.maxNetlen, m.maxAdjlen = 0, 0
		m.minNetlen, m.minAdjlen = math.MaxUint16, math.MaxUint16
	}
	m.reconfigure()
	return nil
}
