package cake

// Change reconfigures the running queue to cfg in place, as cake_change
// does: the shaper's rate (and so each tin's and COBALT's tuning), rtt and
// target, overhead compensation, isolation, the ACK filter, wash,
// split-gso, ingress, autorate-ingress and the memory limit take effect at
// the next packet; nothing queued is dropped or reordered. As with tc, a
// setting is changed only where cfg differs from the Config in force: a
// change that keeps the bandwidth keeps the rate autorate-ingress has
// estimated. Linux also
// lets the diffserv mode change, and drops what is queued in the tins the
// new mode lacks; here such a change is refused while those tins hold
// packets (replace the qdisc, or change it when they have drained).
func (s *Sched) Change(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if n := tinCount[cfg.Diffserv]; n < s.tinCnt {
		for t := n; t < maxTins; t++ {
			if s.tins[t].holdsPackets() {
				return configErr("diffserv", "%s has %d tins, and tin %d holds packets that Linux would drop; change it when they have left, or replace the qdisc", cfg.Diffserv, n, t)
			}
		}
	}
	old := s.cfg
	s.cfg = cfg
	if old.Raw != cfg.Raw || old.Overhead != cfg.Overhead { // as TCA_CAKE_OVERHEAD or TCA_CAKE_RAW do
		s.maxNetlen, s.maxAdjlen = 0, 0
		s.minNetlen, s.minAdjlen = ^uint32(0), ^uint32(0)
	}
	if cfg.Bandwidth != old.Bandwidth {
		s.rateBps = cfg.Bandwidth // else autorate-ingress's estimate stays, as without TCA_CAKE_BASE_RATE64
	}
	s.reconfigure()
	return nil
}

// holdsPackets reports whether any of b's flows holds a packet.
func (b *tin) holdsPackets() bool {
	if b.flowTable == nil {
		return false
	}
	for i := range b.flows {
		if b.flows[i].head != none {
			return true
		}
	}
	return false
}
