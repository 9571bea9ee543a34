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
		rateNS, ceilNS := cl.costs(bytes)
		cl.tokens = max(cl.tokens-rateNS, 1-mbuffer)
		cl.ctokens = max(cl.ctokens-ceilNS, 1-mbuffer)
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
// sizes, the packets at its head that are as long as the one it sent last
// and that leave it and every ancestor able to send at its own rate
// (CanSend), its deficit unspent and a packet still queued: as many
// dequeueStreak calls would, with one bookkeeping and one charge for them
// all. Those dequeues would each charge the same costs, leave every
// bucket at 0 or more (so none is clamped and no mode changes) and keep
// the leaf's turn; the packet that would end the run is dequeueStreak's.
// It returns how many packets it took, 0 when the next one is not such.
func (t *Tree) streakRun(pkts *stack.PacketBufferList, sizes []uint32) int {
	cl := t.streak
	size := cl.costLen // every class on the way up was last charged for it
	if s, ok := cl.fifo.FrontSize(); !ok || s != size || size == 0 {
		return 0
	}
	limit := min(len(sizes), cl.leafPackets-1)
	limit = min(limit, fits(int64(cl.deficit[0]), int64(size), limit))
	for c := cl; c != nil && limit > 0; c = c.parent {
		if c.mode != CanSend {
			return 0
		}
		rateNS, ceilNS := c.costs(size)
		limit = fits(c.tokens, rateNS, limit)
		limit = fits(c.ctokens, ceilNS, limit)
	}
	m := 0
	for m < limit {
		if s, _ := cl.fifo.FrontSize(); s != size {
			break
		}
		pkt, _, _ := cl.fifo.Dequeue(t.now)
		pkts.PushBack(pkt)
		sizes[m] = size
		m++
	}
	if m == 0 {
		return 0
	}
	// What m dequeueStreak calls would have booked (countOut, sent,
	// chargeStreak), summed.
	bytes := uint64(m) * uint64(size)
	cl.leafPackets -= m
	t.packets -= m
	t.bytes -= bytes
	cl.packets += uint64(m)
	if size > cl.cfg.Burst {
		cl.gi += uint64(m)
	}
	cl.deficit[0] -= int32(bytes)
	cl.lends += uint64(m)
	t.rows[0][cl.prio&(NumPrio-1)].lastID = 0
	for c := cl; c != nil; c = c.parent {
		rateNS, ceilNS := c.costs(size)
		c.tokens -= int64(m) * rateNS
		c.ctokens -= int64(m) * ceilNS
		c.bytes += bytes
		if c.level != 0 {
			c.packets += uint64(m)
		}
	}
	return m
}

// fits returns how many charges of cost ns, at most limit, a bucket of
// toks ns pays and stays at 0 or more: all of them when cost is 0.
func fits(toks, cost int64, limit int) int {
	if cost <= 0 || toks >= int64(limit)*cost {
		return limit
	}
	if toks < 0 {
		return 0
	}
	return int(toks / cost)
}
