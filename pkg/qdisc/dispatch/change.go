package dispatch

// Starter is a Gate that wants to know when SetGate puts it in force, on
// the lanes' clock: tbf's buckets are full from then, as tbf_change fills
// them. (Packets queued before a change may have been seen earlier.)
type Starter interface {
	Start(now int64)
}

// SetGate replaces the lane's gate (nil: every packet is due at once, no
// ceiling) and the largest packet it takes (0: any), in place, as Linux's
// tbf_change swaps a tbf's buckets under its lock: what is queued stays,
// in order, and is booked anew with the new gate. A lane waiting for the
// old gate's departure runs a pass at once, on the caller's goroutine (or
// on the alarm's, if a pass is just finishing), so that it waits for the
// new gate's instead. Packets queued before the
// change that are larger than the new bound still leave, each charged in
// full.
func (l *Lane) SetGate(g Gate, maxPacketBytes uint32) {
	l.mu.Lock()
	if s, ok := g.(Starter); ok {
		s.Start(l.now())
	}
	l.gate = g
	l.timed = g != nil || l.stamped
	l.maxPacket.Store(uint64(maxPacketBytes))
	l.booked.clear()
	l.lastWait = 0
	if l.closed || l.state != throttled {
		l.mu.Unlock()
		return
	}
	if l.inPass { // the pass that throttled it is finishing: leave it to the alarm
		now := l.now()
		l.deadline = now
		l.alarm.arm(now, now)
		l.mu.Unlock()
		return
	}
	l.alarm.leave()
	l.state = running
	l.inPass = true
	l.mu.Unlock()
	l.runInline()
}

// SetGate gives every lane of the group the gate g (shared, as New
// shares one) and the largest packet bound: see Lane.SetGate.
func (g *Group) SetGate(gate Gate, maxPacketBytes uint32) {
	for i := range g.Lanes {
		g.Lanes[i].SetGate(gate, maxPacketBytes)
	}
}

// SetLimits changes the bounds of the lanes' FIFOs on a running qdisc:
// packets per lane and, with no Budget, bytes per lane; with a Budget,
// maxBytes is the budget's limit. As Linux's fifo_set_limit, what is
// queued past a lower bound stays queued, and new packets are dropped
// until the backlog is under it. A lane whose queue is a qdisc of its own
// (fq_codel) keeps that queue's bounds.
func (g *Group) SetLimits(maxPackets int, maxBytes uint64) {
	for i := range g.Lanes {
		l := &g.Lanes[i]
		l.mu.Lock()
		if !l.stamped {
			perLane := maxBytes
			if l.budget != nil {
				perLane = 0
			}
			l.fifo.SetLimits(maxPackets, perLane)
		}
		l.mu.Unlock()
	}
	if len(g.Lanes) > 0 && g.Lanes[0].budget != nil {
		g.Lanes[0].budget.SetLimit(maxBytes)
	}
}

// Gate returns the lanes' gate (nil: none).
func (g *Group) Gate() Gate {
	l := &g.Lanes[0]
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gate
}
