package dispatch

import "sync/atomic"

// Budget is a bound on the bytes queued across lanes that share it: a
// packet that would take them past it is dropped, as one bfifo would drop
// it.
//
// The shared count moves a chunk at a time, not a packet at a time: each
// lane holds credit (bytes counted in the budget that its packets have not
// used yet) and spends it under its own lock; it touches the shared word
// only when its credit runs out, and gives credit back only when it holds
// more than two chunks. An atomic on a word every producer writes is what
// made several queues cost more than one.
//
// Exactness: when the shared count cannot cover a packet, the lane first
// reclaims the credit of every other lane that holds some (each says so in
// an atomic, Lane.holding, so that finding none costs no lock) and only
// then drops, so a packet is dropped exactly when the bytes queued in all
// lanes would pass the limit. At the limit the lanes' credit moves between
// them a chunk at a time, by reclaims, rather than a packet at a time
// through the shared word. Lanes racing near the limit may drop a packet
// that a serial order would have taken (credit granted to one lane while
// another reclaims); none can pass the limit.
type Budget struct {
	// limit is the bound (SetLimit changes it on a running qdisc).
	limit atomic.Uint64
	// chunk is how much credit a lane takes at once (set by Group.Init
	// and SetLimit).
	chunk atomic.Uint64
	// lanes are the lanes sharing the budget (set by Group.Init).
	lanes []*Lane
	// used is the bytes queued in the lanes plus the credit they hold.
	used atomic.Uint64
}

// NewBudget returns a Budget of limit bytes.
func NewBudget(limit uint64) *Budget {
	b := &Budget{}
	b.limit.Store(limit)
	return b
}

// chunksPerLane is how many chunks of credit the lanes could hold between
// them before they run the budget out: a quarter of the limit each lane.
const chunksPerLane = 4

// share registers the lanes that draw from the budget.
func (b *Budget) share(lanes []*Lane) {
	b.lanes = lanes
	b.chunk.Store(b.limit.Load() / uint64(chunksPerLane*len(lanes)))
}

// SetLimit changes the bound, as Linux's fifo_set_limit does: bytes
// already queued past a lower bound stay queued, and new packets are
// dropped until the backlog falls under it.
func (b *Budget) SetLimit(limit uint64) {
	b.limit.Store(limit)
	b.chunk.Store(limit / uint64(chunksPerLane*max(len(b.lanes), 1)))
}

// grant counts at least need bytes more in the budget, up to a chunk, and
// returns how many; 0 when need does not fit.
func (b *Budget) grant(need uint64) uint64 {
	for {
		used, limit := b.used.Load(), b.limit.Load()
		if used+need > limit {
			return 0
		}
		n := min(max(need, b.chunk.Load()), limit-used)
		if b.used.CompareAndSwap(used, used+n) {
			return n
		}
	}
}

// give takes n bytes out of the count.
func (b *Budget) give(n uint64) {
	if n != 0 {
		b.used.Add(-n)
	}
}

// othersHold says whether a lane but l may hold credit.
func (b *Budget) othersHold(l *Lane) bool {
	for _, o := range b.lanes {
		if o != l && o.holding.Load() {
			return true
		}
	}
	return false
}

// reclaim takes back the credit of every lane but l that holds some,
// locking each in turn (the caller holds no lane's lock).
func (b *Budget) reclaim(l *Lane) {
	for _, o := range b.lanes {
		if o == l || !o.holding.Load() {
			continue
		}
		o.mu.Lock()
		b.give(o.credit)
		o.credit = 0
		o.holding.Store(false)
		o.mu.Unlock()
	}
}

// chargeLocked spends size bytes of the lane's credit, taking more from
// the budget when it runs short; it reports false when the budget cannot
// cover them.
// +checklocks:l.mu
func (l *Lane) chargeLocked(size uint64) bool {
	if l.credit < size {
		got := l.budget.grant(size - l.credit)
		if got == 0 {
			return false
		}
		l.credit += got
	}
	l.credit -= size
	l.heldLocked()
	return true
}

// heldLocked keeps l.holding in step with l.credit.
// +checklocks:l.mu
func (l *Lane) heldLocked() {
	if h := l.credit != 0; h != l.holding.Load() {
		l.holding.Store(h)
	}
}

// refundLocked returns to the lane's credit the bytes of packets that have
// left it (sent or dropped), and gives the budget back what the lane holds
// beyond a chunk when it holds more than two. The lane has a budget.
// +checklocks:l.mu
func (l *Lane) refundLocked(bytes uint64) {
	l.credit += bytes
	if keep := l.budget.chunk.Load(); l.credit > 2*keep {
		l.budget.give(l.credit - keep)
		l.credit = keep
	}
	l.heldLocked()
}
