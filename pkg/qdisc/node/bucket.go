package node

import (
	"math"
	"runtime"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/sync"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Bucket is the token bucket of a sandbox's class of its node: the gate
// (dispatch.Gate) the lanes of its qdisc book every packet with after
// their own, at the rate its Member last computed (SetRate), safe for
// every lane at once and lock-free for them, as tbf's rate bucket is:
// one word, t0, the time the bucket would have been empty, at the rate
// of st. The credit at time t is min(t - t0, buffer) ns of sending; a
// packet that costs c ns, seen at s, leaves when the credit reaches c,
// and moves t0 to max(t0, departure - buffer) + c.
//
// SetRate converts t0 to the new rate's time, keeping the bytes of
// credit: it swaps t0 for a locked mark while it does, so a lane that
// read the old rate cannot book with it after (its compare-and-swap of
// t0 fails) and a lane that reads the mark waits for the new t0.
type Bucket struct {
	_  [64]byte // t0 is written by every lane: a line of its own
	t0 atomic.Int64
	_  [56]byte
	st atomic.Pointer[bucketRate]
	// burst is the bucket's depth in bytes.
	burst uint64

	// setMu serializes SetRate.
	setMu sync.Mutex

	// waited says a packet had to wait for tokens since Waited last
	// read it: the class wants more than its share.
	waited atomic.Bool
}

// bucketRate is a rate in force: its costs and the bucket's depth in ns.
type bucketRate struct {
	r           rate.Rate
	bytesPerSec uint64
	buffer      int64
}

// The marks t0 holds besides a time: fresh before the first booking
// (the bucket is full at the first packet), locked while SetRate
// converts it.
const (
	fresh  = math.MinInt64
	locked = math.MinInt64 + 1
)

// newRate returns rate's costs for a bucket of burst bytes.
func newRate(bytesPerSec, burst uint64) *bucketRate {
	bytesPerSec = max(bytesPerSec, 1)
	r := rate.New(bytesPerSec)
	return &bucketRate{r: r, bytesPerSec: bytesPerSec, buffer: int64(min(r.TimeNS(uint32(min(burst, math.MaxUint32))), math.MaxInt64/4))}
}

// NewBucket returns a full bucket of burst bytes at rate bytes a second.
func NewBucket(rate, burst uint64) *Bucket {
	b := &Bucket{burst: burst}
	b.st.Store(newRate(rate, burst))
	b.t0.Store(fresh)
	return b
}

// SetRate sets the rate tokens come at from now on (bytes a second; now
// on the lanes' clock, in ns), keeping the bytes of credit the bucket
// holds at now.
func (b *Bucket) SetRate(now int64, bytesPerSec uint64) {
	b.setMu.Lock()
	defer b.setMu.Unlock()
	next := newRate(bytesPerSec, b.burst)
	for {
		t0 := b.t0.Load()
		if t0 == locked || !b.t0.CompareAndSwap(t0, locked) {
			runtime.Gosched()
			continue
		}
		old := b.st.Load()
		b.st.Store(next)
		if t0 == fresh {
			b.t0.Store(fresh)
			return
		}
		// Credit in ns at the old rate (negative: packets booked past
		// now), in bytes, in ns at the new one.
		credit := min(now-t0, old.buffer)
		bytes := float64(credit) * float64(old.bytesPerSec) / 1e9
		b.t0.Store(now - int64(bytes*1e9/float64(next.bytesPerSec)))
		return
	}
}

// Rate returns the rate in force, bytes a second.
func (b *Bucket) Rate() uint64 { return b.st.Load().bytesPerSec }

// Waited reports whether a packet had to wait for tokens since the last
// call.
func (b *Bucket) Waited() bool { return b.waited.Swap(false) }

// Tokens returns the bucket's credit in bytes as of now (ns on the lanes'
// clock).
func (b *Bucket) Tokens(now int64) uint64 {
	t0, st := b.t0.Load(), b.st.Load()
	if t0 == fresh || t0 == locked {
		return b.burst
	}
	credit := min(now-t0, st.buffer)
	if credit <= 0 {
		return 0
	}
	return uint64(float64(credit) * float64(st.bytesPerSec) / 1e9)
}

// BookAll implements dispatch.Gate.BookAll: each packet departs when the
// credit covers it, not before it was seen nor before the packet booked
// before it.
func (b *Bucket) BookAll(seen []int64, sizes []uint32, departures []int64) {
	if len(sizes) == 0 {
		return
	}
	seen, departures = seen[:len(sizes)], departures[:len(sizes)]
	for {
		t0 := b.t0.Load()
		if t0 == locked {
			runtime.Gosched()
			continue
		}
		st := b.st.Load()
		t := t0
		if t == fresh {
			t = seen[0] - st.buffer
		}
		waited := false
		for i, sz := range sizes {
			cost := int64(st.r.TimeNS(sz))
			s := max(t+cost, seen[i])
			waited = waited || s > seen[i]
			departures[i] = s
			t = max(t, s-st.buffer) + cost
		}
		if b.t0.CompareAndSwap(t0, t) {
			if waited {
				b.waited.Store(true)
			}
			return
		}
	}
}

// BookAllAt implements dispatch.NowGate.BookAllAt: BookAll with every
// packet seen at seen; the first ones the credit lets leave at once are
// due (their departures not written), the rest are booked as BookAll
// books them.
func (b *Bucket) BookAllAt(seen int64, sizes []uint32, departures []int64) (due int) {
	if len(sizes) == 0 {
		return 0
	}
	departures = departures[:len(sizes)]
	for {
		t0 := b.t0.Load()
		if t0 == locked {
			runtime.Gosched()
			continue
		}
		st := b.st.Load()
		full := seen - st.buffer
		t := t0
		if t == fresh {
			t = full
		}
		t = max(t, full)
		due = 0
		waited := false
		for i, sz := range sizes {
			cost := int64(st.r.TimeNS(sz))
			s := max(t+cost, seen)
			if s == seen && due == i {
				due++
			} else {
				departures[i] = s
				waited = true
			}
			t = max(t, s-st.buffer) + cost
		}
		if b.t0.CompareAndSwap(t0, t) {
			if waited {
				b.waited.Store(true)
			}
			return due
		}
	}
}
