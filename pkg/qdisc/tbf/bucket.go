package tbf

import (
	"math"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/sync"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// gate is the token state every lane of a Discipline draws from. String
// describes its buckets as `tc qdisc show` does a tbf's.
type gate interface {
	BookAll(seen []int64, sizes []uint32, departures []int64)
	String() string
}

// drainAfter is dispatch.Drainer's DrainAfter for a bucket of rate r: the
// bytes at the rate, after last (a queue's bytes fit 32 bits; more is
// held at the most).
func drainAfter(r rate.Rate, last int64, bytes uint64) int64 {
	return last + int64(r.TimeNS(uint32(min(bytes, math.MaxUint32))))
}

// fresh is a bucket's time before its first booking: the bucket is full
// at the first packet's time, whatever the epoch of the clock that times
// the lanes, as Linux's tbf is full after tbf_init and after tbf_change
// (tokens = buffer).
const fresh = math.MinInt64

// newGate returns the bucket for cfg, full until its first booking:
// lock-free when there is no peak rate nor packet rate.
func newGate(cfg Config) gate {
	r, peak := cfg.rates()
	buffer := int64(r.TimeNS(cfg.Burst))
	desc := cfg.bucketsString()
	if cfg.PeakRate == 0 && cfg.PacketRate == 0 {
		b := &rateBucket{rate: r, buffer: buffer, desc: desc}
		b.t0.Store(fresh)
		return b
	}
	b := &dualBucket{rate: r, buffer: buffer, tc: fresh, tokens: buffer, desc: desc}
	if cfg.PeakRate != 0 {
		b.peak = peak
		b.mtu = int64(b.peak.TimeNS(cfg.MTU))
		b.ptokens = b.mtu
	}
	if cfg.PacketRate != 0 {
		// A packet is one unit of a rate in units per second.
		b.pktCost = int64(rate.New(cfg.PacketRate).TimeNS(1))
		b.pktBuffer = b.pktCost * int64(cfg.PacketBurst)
		b.pktTokens = b.pktBuffer
	}
	return b
}

// rateBucket is tbf_dequeue's rate bucket kept as one word, so that any
// number of dispatchers can draw from it with compare-and-swap and no
// lock. Linux keeps (t_c, tokens); here t0 = t_c - tokens, the time at
// which the bucket would have been empty. The credit at time t is then
// min(t - t0, buffer) — Linux's min(min(t - t_c, buffer) + tokens, buffer),
// since tokens >= 0 — and sending a packet that costs c at time s leaves
// t0 = max(t0, s - buffer) + c, which is Linux's t_c = s, tokens =
// credit - c. With on-time wake-ups the two are the same, packet for
// packet (the conformance tests hold them to it).
//
// Every packet's departure is booked: t0 moves on at once, as if it had
// left at s, even when s is still to come. A queue's packets are booked in
// the order they leave it, when its pass first sees them (see
// dispatch.Lane), so with one queue this is Linux's accounting still, and
// with several the queues share the tokens, each booking a pass's worth
// at a time.
type rateBucket struct {
	_      [64]byte // t0 is written by every dispatcher: a line of its own
	t0     atomic.Int64
	_      [56]byte
	rate   rate.Rate
	buffer int64
	desc   string
}

// String implements gate.String.
func (b *rateBucket) String() string { return b.desc }

// DrainAfter implements dispatch.Drainer.
func (b *rateBucket) DrainAfter(last int64, bytes uint64) int64 {
	return drainAfter(b.rate, last, bytes)
}

// Start implements dispatch.Starter: the bucket is full from now, if no
// packet was booked yet (the lanes sharing it each call Start).
func (b *rateBucket) Start(now int64) { b.t0.CompareAndSwap(fresh, now-b.buffer) }

// BookAll implements dispatch.Gate.BookAll: the packets' bookings one
// after another, with one compare-and-swap for them all. Each departs, in
// the bucket's books, at s: when its tokens suffice, but not before it was
// seen. A dispatcher on time sends it at s; one that woke late sends it at
// once, as Linux's tbf would already have sent it, instead of the late
// wake-up costing credit.
func (b *rateBucket) BookAll(seen []int64, sizes []uint32, departures []int64) {
	if len(sizes) == 0 {
		return
	}
	// One length for the three: no bounds checks in the loop.
	seen, departures = seen[:len(sizes)], departures[:len(sizes)]
	r, buffer := b.rate, b.buffer // departures could alias b: load once
	size := sizes[0]
	cost := int64(r.TimeNS(size)) // a batch is mostly one size
	for {
		t0 := b.t0.Load()
		t := t0
		if t == fresh {
			t = seen[0] - buffer // full
		}
		for i, sz := range sizes {
			if sz != size {
				size, cost = sz, int64(r.TimeNS(sz))
			}
			s := max(t+cost, seen[i])
			departures[i] = s
			t = max(t, s-buffer) + cost
		}
		if b.t0.CompareAndSwap(t0, t) {
			return
		}
	}
}

// BookAllAt implements dispatch.NowGate.BookAllAt: BookAll's bookings,
// every packet seen at seen. While the tokens suffice, a packet leaves at
// seen and t0 moves on by its cost only (its departure is not written);
// from the first that must wait, each is booked as BookAll books it.
func (b *rateBucket) BookAllAt(seen int64, sizes []uint32, departures []int64) (due int) {
	if len(sizes) == 0 {
		return 0
	}
	departures = departures[:len(sizes)] // no bounds checks in the loop
	r, buffer := b.rate, b.buffer        // departures could alias b: load once
	full := seen - buffer                // t0 of a full bucket
	for {
		t0 := b.t0.Load()
		t := t0
		if t == fresh {
			t = full
		}
		size := sizes[0]
		cost := int64(r.TimeNS(size)) // a batch is mostly one size
		due = 0
		if t+cost <= seen { // BookAll's, with s = seen
			t = max(t, full) + cost
			// t > full from here on: the max is t.
			for due = 1; due < len(sizes); due++ {
				if sz := sizes[due]; sz != size {
					size, cost = sz, int64(r.TimeNS(sz))
				}
				if t+cost > seen {
					break
				}
				t += cost
			}
		}
		for i := due; i < len(sizes); i++ {
			if sz := sizes[i]; sz != size {
				size, cost = sz, int64(r.TimeNS(sz))
			}
			s := t + cost // > seen: t only grows
			departures[i] = s
			t = max(t, s-buffer) + cost
		}
		if b.t0.CompareAndSwap(t0, t) {
			return due
		}
	}
}

// dualBucket is tbf_dequeue with a peak-rate bucket, exactly, and a
// packet bucket (tc police's pkt_rate, in act_police's accounting) when
// asked: the buckets share t_c, and the peak credit is capped by the rate
// bucket's elapsed time as in Linux, so they are kept under a short lock.
// A bucket not configured has cost and depth 0 and never holds a packet
// back.
type dualBucket struct {
	// Set once, by newGate. (One field a line: checklocks maps
	// annotations to fields by their declarations' order.)
	rate      rate.Rate // +checklocksignore
	peak      rate.Rate // +checklocksignore
	buffer    int64     // +checklocksignore
	mtu       int64     // +checklocksignore
	pktCost   int64     // +checklocksignore
	pktBuffer int64     // +checklocksignore
	desc      string    // +checklocksignore

	mu sync.Mutex
	// +checklocks:mu
	tc int64
	// +checklocks:mu
	tokens int64
	// +checklocks:mu
	ptokens int64
	// +checklocks:mu
	pktTokens int64
}

// String implements gate.String.
func (b *dualBucket) String() string { return b.desc }

// DrainAfter implements dispatch.Drainer (at the byte rate: the peak and
// packet rates only make packets leave later).
func (b *dualBucket) DrainAfter(last int64, bytes uint64) int64 {
	return drainAfter(b.rate, last, bytes)
}

// Start implements dispatch.Starter, as rateBucket.Start.
func (b *dualBucket) Start(now int64) {
	b.mu.Lock()
	if b.tc == fresh {
		b.tc = now
	}
	b.mu.Unlock()
}

// BookAll implements dispatch.Gate.BookAll: tbf_dequeue for each packet
// in turn, under one lock, at s, the earliest time, not before seen nor
// the last departure, at which both buckets hold enough (see
// rateBucket.BookAll).
func (b *dualBucket) BookAll(seen []int64, sizes []uint32, departures []int64) {
	b.mu.Lock()
	if b.tc == fresh && len(seen) > 0 {
		b.tc = seen[0] // every bucket is full
	}
	for i, size := range sizes {
		cost := int64(b.rate.TimeNS(size))
		var pcost int64
		if b.mtu != 0 {
			pcost = int64(b.peak.TimeNS(size))
		}
		// The rate test min(s - tc, buffer) + tokens >= cost holds from
		// s = tc + cost - tokens (cost <= buffer), the peak test from
		// tc + pcost - ptokens (pcost < buffer: the peak rate is above the
		// rate and the packet no larger than the burst), and the packet
		// test min(min(s - tc, pktBuffer) + pktTokens, pktBuffer) >=
		// pktCost from tc + pktCost - pktTokens (pktCost <= pktBuffer).
		s := max(seen[i], b.tc+max(cost-b.tokens, pcost-b.ptokens, b.pktCost-b.pktTokens, 0))
		elapsed := s - b.tc
		toks := min(elapsed, b.buffer)
		ptoks := min(toks+b.ptokens, b.mtu) - pcost
		toks = min(toks+b.tokens, b.buffer) - cost
		pktToks := min(min(elapsed, b.pktBuffer)+b.pktTokens, b.pktBuffer) - b.pktCost
		b.tc, b.tokens, b.ptokens, b.pktTokens = s, toks, ptoks, pktToks
		departures[i] = s
	}
	b.mu.Unlock()
}
