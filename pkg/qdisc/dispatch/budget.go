package dispatch

import (
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// Budget is a bound on the bytes queued across lanes that share it: a
// packet that would take them past it is dropped, as one bfifo would drop
// it. It is Linux's one limit (its tbf has one queue): the bytes queued in
// all the lanes never pass it, and a single busy lane may fill all of it.
//
// The shared count moves a chunk at a time, not a packet at a time: each
// lane holds credit (bytes counted in the budget that its packets have not
// used yet) and spends it under its own lock; it touches the shared word
// only when its credit runs out, and gives credit back only when it holds
// more than two chunks. An atomic on a word every producer writes is what
// made several queues cost more than one.
//
// Shares: with one limit over all the lanes, a lane whose producers keep
// it full would hold all of it, for the bytes its packets free return to
// its own credit, which its own producers spend at once; the other lanes'
// producers are refused and their dispatchers idle (tbf with 2 lanes and
// 4 producers cost 1.3-1.5x fifo a packet). So a lane refused a packet
// claims its share (see claim), and while k other lanes claim theirs, a
// lane that counts its share, limit/(k+1) but not less than shareFloor,
// is refused too, and gives back what it counts past it as its packets
// leave, for the claimants to take. A claim lapses claimWindow after its
// lane's last refusal.
//
// Against Linux's one queue, that changes one thing: while another lane
// claims its share, a packet may be dropped with the backlog under the
// limit, its lane holding its share. The backlog never passes the limit;
// a single busy lane fills all of it when no other lane was refused in
// the last claimWindow; and with a limit under shareFloor times the lanes
// that claim, a share bounds nobody.
//
// Exactness: when the shared count cannot cover a packet, the lane first
// reclaims the credit of every other lane that holds some (each says so in
// an atomic, Lane.holding, so that finding none costs no lock) and only
// then drops, so that, where no share bounds the lane, a packet is dropped
// exactly when the bytes queued in all lanes would pass the limit. Lanes
// racing near the limit may drop a packet that a serial order would have
// taken (credit granted to one lane while another reclaims); none can pass
// the limit.
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
	// claims is how many lanes claim their share (see claim).
	claims atomic.Int64
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

// refusal says whether, and why not, the budget covers a packet.
type refusal uint8

const (
	granted refusal = iota
	// full: the lanes count the whole limit.
	full
	// overShare: the lane counts its share while other lanes claim
	// theirs.
	overShare
)

// admitBudgetLocked charges a packet of size bytes to the lane's budget,
// or refuses it (ErrNoBufferSpace, a drop) when the budget would pass its
// limit, or the lane its share while others claim theirs. When the budget
// runs out while other lanes hold credit, the lock is released while
// their credit is reclaimed, and the packet is looked at again. A refused
// lane claims its share.
// +checklocks:l.mu
func (l *Lane) admitBudgetLocked(size uint64) tcpip.Error {
	why := l.chargeLocked(size)
	if why == full && l.budget.othersHold(l) {
		l.mu.Unlock()
		l.budget.reclaim(l)
		l.mu.Lock()
		if l.closed {
			return &tcpip.ErrClosedForSend{}
		}
		why = l.chargeLocked(size)
	}
	if why == granted {
		return nil
	}
	l.refused++
	l.claimLocked()
	return &tcpip.ErrNoBufferSpace{}
}

// chargeLocked spends size bytes of the lane's credit, taking more from
// the budget when it runs short; it says why not when the budget cannot
// cover them.
// +checklocks:l.mu
func (l *Lane) chargeLocked(size uint64) refusal {
	if l.credit < size {
		got, why := l.grantLocked(size - l.credit)
		if why != granted {
			return why
		}
		l.credit += got
	}
	l.credit -= size
	l.heldLocked()
	return granted
}

// grantLocked counts at least need bytes more in the budget for the lane,
// up to a chunk and within its share, and returns how many; 0, and why,
// when need does not fit.
// +checklocks:l.mu
func (l *Lane) grantLocked(need uint64) (uint64, refusal) {
	b := l.budget
	share := l.shareLocked(false)
	if l.counted+need > share {
		return 0, overShare
	}
	for {
		used, limit := b.used.Load(), b.limit.Load()
		if used+need > limit {
			return 0, full
		}
		n := min(max(need, b.chunk.Load()), limit-used, share-l.counted)
		if b.used.CompareAndSwap(used, used+n) {
			l.counted += n
			return n, granted
		}
	}
}

// giveLocked takes n of the lane's bytes out of the count.
// +checklocks:l.mu
func (l *Lane) giveLocked(n uint64) {
	if n != 0 {
		l.counted -= n
		l.budget.used.Add(-n)
	}
}

// heldLocked keeps l.holding in step with l.credit.
// +checklocks:l.mu
func (l *Lane) heldLocked() {
	if h := l.credit != 0; h != l.holding.Load() {
		l.holding.Store(h)
	}
}

// refundLocked returns to the lane's credit the bytes of packets that have
// left it (sent or dropped), and gives the budget back the credit by which
// the lane counts more than its share, then what it holds beyond a chunk
// when it holds more than two. Here, once a pass, the lapsed claims are
// found. The lane has a budget.
// +checklocks:l.mu
func (l *Lane) refundLocked(bytes uint64) {
	l.credit += bytes
	if share := l.shareLocked(true); l.counted > share {
		over := min(l.credit, l.counted-share)
		l.giveLocked(over)
		l.credit -= over
	}
	if keep := l.budget.chunk.Load(); l.credit > 2*keep {
		l.giveLocked(l.credit - keep)
		l.credit = keep
	}
	l.heldLocked()
}

// leaveBudgetLocked gives the budget back the lane's credit and the bytes
// of its packets, released at Close, and drops its claim.
// +checklocks:l.mu
func (l *Lane) leaveBudgetLocked(released uint64) {
	l.giveLocked(released + l.credit)
	l.credit = 0
	l.holding.Store(false)
	l.unclaim()
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
		o.giveLocked(o.credit)
		o.credit = 0
		o.holding.Store(false)
		o.mu.Unlock()
	}
}
