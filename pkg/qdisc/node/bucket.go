package node

import (
	"math"
	"math/bits"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/sync"
)

// Bucket is the token bucket of a sandbox's class of its node: the gate
// (dispatch.Gate) the lanes of its qdisc book every packet with after
// their own, at the rate its Member last computed (SetRate), safe for
// every lane at once. Tokens are kept in byte-nanoseconds (bytes × 1e9),
// so that any rate in bytes a second refills them exactly.
type Bucket struct {
	mu sync.Mutex
	// +checklocks:mu
	rate uint64
	// +checklocks:mu
	burst uint64
	// tc is the time of tokens (ns); fresh before the first booking.
	// +checklocks:mu
	tc int64
	// +checklocks:mu
	tokens uint64

	// inForce is rate, for Rate: the lanes read it every booking
	// (BookBytes), without the lock. It is written with rate, under mu.
	inForce atomic.Uint64

	// waited says a packet had to wait for tokens since Waited last
	// read it: the class wants more than its share.
	waited atomic.Bool
}

// fresh is a bucket's time before its first booking: full at the first
// packet.
const fresh = math.MinInt64

// NewBucket returns a full bucket of burst bytes at rate bytes a second.
func NewBucket(rate, burst uint64) *Bucket {
	b := &Bucket{}
	b.mu.Lock()
	b.rate, b.burst, b.tc = max(rate, 1), burst, fresh
	b.inForce.Store(b.rate)
	b.mu.Unlock()
	return b
}

// SetRate sets the rate tokens come at from now on (bytes a second).
func (b *Bucket) SetRate(rate uint64) {
	b.mu.Lock()
	b.rate = max(rate, 1)
	b.inForce.Store(b.rate)
	b.mu.Unlock()
}

// Rate returns the rate in force.
func (b *Bucket) Rate() uint64 { return b.inForce.Load() }

// Waited reports whether a packet had to wait for tokens since the last
// call.
func (b *Bucket) Waited() bool { return b.waited.Swap(false) }

// Tokens returns the tokens at the last booking, in bytes.
func (b *Bucket) Tokens() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens / 1e9
}

// BookAll implements dispatch.Gate.BookAll: each packet departs when the
// tokens suffice, not before it was seen nor before the packet booked
// before it.
func (b *Bucket) BookAll(seen []int64, sizes []uint32, departures []int64) {
	seen, departures = seen[:len(sizes)], departures[:len(sizes)] // no bounds checks in the loop
	b.mu.Lock()
	full, rate := b.burst*1e9, b.rate
	tc, tokens := b.tc, b.tokens
	var k quotient
	waited := false
	for i, size := range sizes {
		s := seen[i]
		if tc == fresh {
			tc, tokens = s, full
		}
		start := max(s, tc)
		tokens = min(full, tokens+refill(rate, start-tc, full))
		cost := uint64(size) * 1e9
		dep := start
		if tokens >= cost {
			tokens -= cost
		} else {
			var wait uint64
			wait, tokens = k.wait(cost, tokens, size, rate)
			dep = start + int64(wait)
		}
		waited = waited || dep > s
		tc = dep
		departures[i] = dep
	}
	b.tc, b.tokens = tc, tokens
	b.mu.Unlock()
	if waited {
		b.setWaited()
	}
}

// BookAllAt implements dispatch.NowGate.BookAllAt: BookAll with every
// packet seen at seen, the first ones the tokens let leave at once due
// (their departures not written), the rest booked as BookAll books them.
func (b *Bucket) BookAllAt(seen int64, sizes []uint32, departures []int64) (due int) {
	b.mu.Lock()
	full := b.burst * 1e9
	if b.tc == fresh {
		b.tc, b.tokens = seen, full
	}
	if seen >= b.tc {
		tokens := min(full, b.tokens+refill(b.rate, seen-b.tc, full))
		for due < len(sizes) {
			cost := uint64(sizes[due]) * 1e9
			if tokens < cost {
				break
			}
			tokens -= cost
			due++
		}
		b.tc, b.tokens = seen, tokens
	}
	if due == len(sizes) {
		b.mu.Unlock()
		return due
	}
	// The rest are booked as BookAll books them. The tokens' time is now
	// at or past seen, so each departs at the last departure, once the
	// tokens suffice (no tokens come in between).
	rest, departures := sizes[due:], departures[due:len(sizes)] // no bounds checks in the loop
	full, rate := b.burst*1e9, b.rate
	tc, tokens := b.tc, b.tokens
	var k quotient
	for i, size := range rest {
		tokens = min(full, tokens)
		if cost := uint64(size) * 1e9; tokens >= cost {
			tokens -= cost
		} else {
			var wait uint64
			wait, tokens = k.wait(cost, tokens, size, rate)
			tc += int64(wait)
		}
		departures[i] = tc
	}
	b.tc, b.tokens = tc, tokens
	b.mu.Unlock()
	if tc > seen { // departures only grow
		b.setWaited()
	}
	return due
}

// setWaited records that a packet waited. The flag is written only if
// the Runner has read it since it was last set.
func (b *Bucket) setWaited() {
	if !b.waited.Load() {
		b.waited.Store(true)
	}
}

// quotient is the quotient and remainder by the rate of the cost of the
// last size that waited (0: none yet; a packet of none never waits), with
// which the packets of that size that wait one after another are booked
// with one division, not one each.
type quotient struct {
	size uint32
	q, r uint64
}

// wait returns how long a packet of size bytes, costing cost, waits with
// tokens < cost (⌈(cost-tokens)/rate⌉ ns) and the tokens it leaves
// (tokens+wait·rate-cost). With cost = q·rate + r (r < rate) and tokens
// < r+rate, as a packet that waited leaves them (less than a rate's
// worth), that is q if tokens >= r, else q+1.
func (k *quotient) wait(cost, tokens uint64, size uint32, rate uint64) (wait, left uint64) {
	if size != k.size {
		k.q, k.r = bits.Div64(0, cost, rate)
		k.size = size
	}
	switch {
	case tokens >= k.r && tokens-k.r < rate:
		return k.q, tokens - k.r
	case tokens < k.r:
		return k.q + 1, tokens + rate - k.r
	}
	wait = ceilDiv(cost-tokens, rate)
	return wait, tokens + wait*rate - cost
}

// refill is the byte-nanoseconds rate brings in dt ns, at most full.
func refill(rate uint64, dt int64, full uint64) uint64 {
	if dt <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(rate, uint64(dt))
	if hi != 0 || lo > full {
		return full
	}
	return lo
}

// ceilDiv is a/b rounded up (b not 0).
func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }
