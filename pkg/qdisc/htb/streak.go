package htb

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// The streak: far from any ceiling, the leaf that sent last sends again,
// and Dequeue takes from it without htb_dequeue's walk, every packet of a
// pass but the first. t.streak is that leaf while a dequeue at t.now
// would take from it: the last dequeue, at level 0, took from its default
// pfifo, found no lower prio holding packets back (and no packet in the
// direct queue, which comes first), and left it its turn (sent); nothing
// since has queued a packet in the direct queue or made a class active
// (EnqueueSorted), changed a class (ChangeClass) or purged the tree; and
// no quota may fall due. A later time may have events due, and takes the
// walk; a charge queues events only after now.

// dequeueStreak is dequeue at t.now from t.streak, the leaf htb_dequeue
// would take from.
func (t *Tree) dequeueStreak() (*stack.PacketBuffer, uint32, bool) {
	cl := t.streak
	// fifoDequeue, inlined. The leaf has packets (sent): !ok cannot
	// happen, but never lose the turn.
	pkt, size, ok := cl.fifo.Dequeue(t.now)
	if !ok {
		return t.dequeue(t.now)
	}
	t.countOut(cl, size)
	prio := cl.prio & (NumPrio - 1)
	t.rows[0][prio].lastID = 0 // as dequeueTree's first step
	if !t.sent(cl, 0, prio, size) {
		t.streak = nil
	}
	return pkt, size, true
}

// chargeStreak is charge for a packet of bytes bytes that the streak's
// leaf cl sent (see dequeueStreak): at level 0, with no quota, and at
// t.now, when cl and every ancestor were last charged. So no credit has
// come since (diff 0), each bucket holds at most its depth already, and
// the charge is each bucket's cost alone: what charge would do, without
// its steps that change nothing.
func (t *Tree) chargeStreak(cl *class, bytes uint32) {
	cl.lends++ // the leaf sends at its own level
	for ; cl != nil; cl = cl.parent {
		cost := cl.costs(bytes)
		cl.tokens = max(cl.tokens-cost.rateNS, 1-mbuffer)
		cl.ctokens = max(cl.ctokens-cost.ceilNS, 1-mbuffer)
		if cl.level != 0 {
			cl.bytes += uint64(bytes)
			cl.packets++
		}
		if cl.mode == CanSend && cl.tokens >= 0 && cl.ctokens >= 0 {
			continue
		}
		t.remode(cl)
	}
}

// streakRun dequeues at t.now from the streak's leaf, into pkts and
// sizes, the packets at its head, of whatever lengths, that leave it and
// every ancestor able to send at its own rate (CanSend), its deficit
// unspent and a packet still queued: as many dequeueStreak calls would,
// with the bookkeeping summed. Each of those dequeues would charge every
// bucket its packet's own cost (rounded for that packet, as
// psched_l2t_ns is), leave it at 0 or more (so none is clamped and no
// mode changes) and keep the leaf's turn; the packet that would end the
// run is dequeueStreak's. It returns how many packets it took, 0 when the
// next one is not such. It reads the sizes of the packets at the head
// into sizes first, so sizes past those it took may be written.
//
// Each condition holds for a prefix of the head's packets, given the
// packets before were charged, so the run is the shortest of the
// prefixes: the deficit's, then each bucket's, found in one pass over the
// sizes a class, the classes before the one that ends the run giving back
// what they were charged for the packets past it.
func (t *Tree) streakRun(pkts *stack.PacketBufferList, sizes []uint32) int {
	cl := t.streak
	for c := cl; c != nil; c = c.parent {
		if c.mode != CanSend {
			return 0
		}
	}
	m := cl.fifo.FrontSizes(sizes[:max(0, min(len(sizes), cl.leafPackets-1))])
	deficit, burst := cl.deficit[0], cl.cfg.Burst
	var gi uint64
	for i, size := range sizes[:m] {
		d := deficit - int32(size)
		if d < 0 {
			m = i
			break
		}
		deficit = d
		if size > burst {
			gi++
		}
	}
	for c := cl; c != nil && m > 0; c = c.parent {
		if k := c.chargeRun(sizes[:m]); k < m {
			for b := cl; b != c; b = b.parent {
				b.refundRun(sizes[k:m])
			}
			gi -= giants(sizes[k:m], burst)
			m = k
		}
	}
	if m == 0 {
		return 0
	}
	// The rest of what m dequeueStreak calls would have booked (countOut,
	// sent, chargeStreak), summed.
	_, bytes := cl.fifo.DequeueTo(pkts, m)
	cl.leafPackets -= m
	t.packets -= m
	t.bytes -= bytes
	cl.packets += uint64(m)
	cl.gi += gi
	cl.deficit[0] -= int32(bytes)
	cl.lends += uint64(m)
	t.rows[0][cl.prio&(NumPrio-1)].lastID = 0
	for c := cl; c != nil; c = c.parent {
		c.bytes += bytes
		if c.level != 0 {
			c.packets += uint64(m)
		}
	}
	return m
}

// chargeRun charges cl's buckets for packets of sizes, in turn, each its
// own cost, while both stay at 0 or more: it returns how many it charged.
func (cl *class) chargeRun(sizes []uint32) int {
	toks, ctoks := cl.tokens, cl.ctokens
	k := 0
	for _, size := range sizes {
		cost := cl.costs(size)
		if toks < cost.rateNS || ctoks < cost.ceilNS {
			break
		}
		toks -= cost.rateNS
		ctoks -= cost.ceilNS
		k++
	}
	cl.tokens, cl.ctokens = toks, ctoks
	return k
}

// refundRun gives back to cl's buckets what chargeRun charged them for
// packets of sizes.
func (cl *class) refundRun(sizes []uint32) {
	for _, size := range sizes {
		cost := cl.costs(size)
		cl.tokens += cost.rateNS
		cl.ctokens += cost.ceilNS
	}
}

// giants is how many of sizes are longer than burst.
func giants(sizes []uint32, burst uint32) uint64 {
	var n uint64
	for _, size := range sizes {
		if size > burst {
			n++
		}
	}
	return n
}
