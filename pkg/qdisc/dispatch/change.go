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
// in order, and is booked anew with the new gate. Packets queued before
// the change that are larger than the new bound still leave, each charged
// in full.
//
// SetGate never runs a pass on the caller's goroutine: the caller holds
// the control path's locks (see Lock order), and a pass writes to the
// lower link or delivers to the stack. A lane waiting for the old gate's
// departure stops waiting on the Alarm and its dispatcher is woken, to
// book the queue with the new gate on its own goroutine; until that pass
// has run the lane is not Quiescent.
func (l *Lane) SetGate(g Gate, maxPacketBytes uint32) {
	l.mu.Lock()
	if s, ok := g.(Starter); ok {
		s.Start(l.now())
	}
	l.gate, l.ownGate = chain(g, l.uplink), g
	l.timed = l.gate != nil || l.stamped
	l.maxPacket.Store(uint64(maxPacketBytes))
	l.booked.clear()
	l.lastWait = 0
	// An idle lane has nothing booked; a running one's pass books with
	// the new gate when it next looks at the queue.
	l.wakeThrottledLocked()
}

// wakeThrottledLocked, if the lane waits on the alarm, ends the wait and
// wakes its dispatcher; then it releases the lock. The pass that
// throttled the lane has ended (it may still be leaving runInline: one
// pass at a time holds, since a pass ends before it makes the lane
// throttled).
// +checklocksrelease:l.mu
func (l *Lane) wakeThrottledLocked() {
	if l.closed || l.state != throttled {
		l.mu.Unlock()
		return
	}
	l.alarm.leave()
	l.state = running
	l.mu.Unlock()
	l.wake.Assert()
}

// SetGate gives every lane of the group the gate g (shared, as New
// shares one) and the largest packet bound: see Lane.SetGate.
func (g *Group) SetGate(gate Gate, maxPacketBytes uint32) {
	for i := range g.Lanes {
		g.Lanes[i].SetGate(gate, maxPacketBytes)
	}
}

// SetLimits changes the bounds of the lanes' own queues on a running qdisc:
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
			l.own.SetLimits(maxPackets, perLane)
		}
		l.mu.Unlock()
	}
	if len(g.Lanes) > 0 && g.Lanes[0].budget != nil {
		g.Lanes[0].budget.SetLimit(maxBytes)
	}
}

// Gate returns the lanes' own gate, the one SetGate set (nil: none),
// without the lower link's (Uplink).
func (g *Group) Gate() Gate {
	l := &g.Lanes[0]
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ownGate
}

// Wake makes a lane waiting on the Alarm look at its queue again at once:
// its dispatcher is woken, and the caller runs no pass (see SetGate). A
// control call that moved a Shaper's next event earlier (htb's quota
// renewed by the operator) calls it; an idle or running lane needs
// nothing.
func (l *Lane) Wake() {
	l.mu.Lock()
	l.wakeThrottledLocked()
}
