package dispatch

import (
	"sync/atomic"
	"time"
)

// claimWindow is how long a lane's claim to its share of a Budget lasts
// after its last refusal: long enough to outlast the gaps of a sender that
// the limit keeps refusing (a TCP sender backs off for a round trip or
// more), short enough that a single busy lane takes credit a chunk at a
// time again soon after the others' senders stopped.
const claimWindow = 100 * time.Millisecond

// claimChecks is how many refusals a lane counts between two looks at the
// clock to renew its claim: at the limit a lane is refused at every
// packet its senders offer, and the clock is dearer than the refusal.
const claimChecks = 64

// claim is a lane's claim to its share of a Budget (see Budget), made when
// the budget refuses one of its packets.
//
// A claim is renewed by the lane's refusals, but the clock is read only
// once in claimChecks refusals: so a claim past its deadline still holds if
// the lane was refused since it was last renewed. The other lanes' passes
// look at the claims by the clock (once a pass, when there are some),
// renew those whose lane was refused meanwhile and clear the others.
type claim struct {
	// until is when the claim lapses, unless renewed (0: no claim).
	until atomic.Int64
	// refusals counts the lane's refusals; renewed is its value when the
	// claim was last renewed.
	refusals atomic.Uint32
	renewed  atomic.Uint32
}

// claimLocked claims the lane's share after a refusal, or renews the
// claim once in claimChecks refusals.
// +checklocks:l.mu
func (l *Lane) claimLocked() {
	c := &l.claim
	n := c.refusals.Add(1)
	if u := c.until.Load(); u != 0 && n-c.renewed.Load() < claimChecks {
		return
	}
	until := l.now() + int64(claimWindow)
	for {
		// Another lane may clear the claim meanwhile (see live).
		u := c.until.Load()
		if c.until.CompareAndSwap(u, until) {
			c.renewed.Store(n)
			if u == 0 {
				l.budget.claims.Add(1)
			}
			return
		}
	}
}

// unclaim drops the lane's claim.
func (l *Lane) unclaim() {
	if u := l.claim.until.Load(); u != 0 && l.claim.until.CompareAndSwap(u, 0) {
		l.budget.claims.Add(-1)
	}
}

// shareLocked is how much the lane may count: its share of the limit
// among the lanes that claim theirs, this one included (fairShare); the
// limit itself when no other lane claims (then it costs two loads). With check, the claims are looked at by the clock, and
// lapsed ones cleared; without, every claim made counts.
// +checklocks:l.mu
func (l *Lane) shareLocked(check bool) uint64 {
	b := l.budget
	others := b.claims.Load()
	if l.claim.until.Load() != 0 {
		others--
	}
	if others <= 0 {
		return b.limit.Load()
	}
	if !check {
		return fairShare(b.limit.Load(), uint64(others+1))
	}
	now, k := l.now(), uint64(1)
	for _, o := range b.lanes {
		if o != l && o.claim.live(now, b) {
			k++
		}
	}
	return fairShare(b.limit.Load(), k)
}

// shareFloor is the least share a claim bounds a lane to: one host-GSO
// segment, so that a lane always holds a burst's worth. With a limit under
// shareFloor times the lanes that claim, the claims bound nobody, and the
// budget drops exactly where Linux's one queue would.
const shareFloor = 64 << 10

// fairShare is a lane's share of limit among n lanes.
func fairShare(limit, n uint64) uint64 { return min(limit, max(limit/n, shareFloor)) }

// live says whether the claim holds at now: made, and either before its
// deadline or renewed by a refusal since it was last renewed (which
// renews it from now). A claim that does not hold is cleared. Races with
// the claiming lane are benign: a claim it renews meanwhile may be cleared
// (its next refusal claims again), never counted twice.
func (c *claim) live(now int64, b *Budget) bool {
	u := c.until.Load()
	switch {
	case u == 0:
		return false
	case u > now:
		return true
	}
	if n := c.refusals.Load(); n != c.renewed.Load() {
		if c.until.CompareAndSwap(u, now+int64(claimWindow)) {
			c.renewed.Store(n)
		}
		return true
	}
	if c.until.CompareAndSwap(u, 0) {
		b.claims.Add(-1)
	}
	return false
}
