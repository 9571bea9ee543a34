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
	b.mu.Unlock()
	return b
}

// SetRate sets the rate tokens come at from now on (bytes a second).
func (b *Bucket) SetRate(rate uint64) {
	b.mu.Lock()
	b.rate = max(rate, 1)
	b.mu.Unlock()
}

// Rate returns the rate in force.
func (b *Bucket) Rate() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rate
}

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
	b.mu.Lock()
	defer b.mu.Unlock()
	full := b.burst * 1e9
	waited := false
	for i, size := range sizes {
		start := seen[i]
		if b.tc == fresh {
			b.tc, b.tokens = start, full
		}
		start = max(start, b.tc)
		b.tokens = min(full, b.tokens+refill(b.rate, start-b.tc, full))
		cost := uint64(size) * 1e9
		dep := start
		if b.tokens >= cost {
			b.tokens -= cost
		} else {
			wait := ceilDiv(cost-b.tokens, b.rate)
			dep = start + int64(wait)
			b.tokens = b.tokens + wait*b.rate - cost
		}
		waited = waited || dep > seen[i]
		b.tc = dep
		departures[i] = dep
	}
	if waited {
		b.waited.Store(true)
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
		b.tokens = min(full, b.tokens+refill(b.rate, seen-b.tc, full))
		b.tc = seen
		for due < len(sizes) {
			cost := uint64(sizes[due]) * 1e9
			if b.tokens < cost {
				break
			}
			b.tokens -= cost
			due++
		}
	}
	b.mu.Unlock()
	if due == len(sizes) {
		return due
	}
	var seenAll [64]int64
	rest := sizes[due:]
	for len(rest) > 0 {
		n := min(len(rest), len(seenAll))
		for i := range n {
			seenAll[i] = seen
		}
		b.BookAll(seenAll[:n], rest[:n], departures[len(sizes)-len(rest):][:n])
		rest = rest[n:]
	}
	return due
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
