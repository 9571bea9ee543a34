package node

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBucket: departures as a token bucket gives them: full at the first
// packet, then one packet's cost apart at the rate; BookAllAt's due ones
// leave at once; a new rate counts from the tokens' time on; Waited says
// whether a packet waited.
func TestBucket(t *testing.T) {
	const ms = int64(1e6)
	for _, tc := range []struct {
		name  string
		rate  uint64 // bytes a second
		burst uint64
		seen  []int64
		sizes []uint32
		want  []int64
	}{
		{"a burst then the rate", 1_000_000, 3000, []int64{0, 0, 0, 0}, []uint32{1500, 1500, 1500, 1500}, []int64{0, 0, 1500 * 1000, 3000 * 1000}},
		{"seen later, tokens back", 1_000_000, 1500, []int64{0, 10 * ms}, []uint32{1500, 1500}, []int64{0, 10 * ms}},
		{"a packet past the burst", 1_000_000, 1500, []int64{0, 0}, []uint32{1500, 4000}, []int64{0, 4 * ms}},
		{"an odd rate, rounded up", 3, 1, []int64{0}, []uint32{2}, []int64{333_333_334}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBucket(tc.rate, tc.burst)
			got := make([]int64, len(tc.sizes))
			b.BookAll(tc.seen, tc.sizes, got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("departures %v, want %v", got, tc.want)
			}
			waited := !slices.Equal(tc.want, tc.seen)
			if b.Waited() != waited {
				t.Errorf("Waited() = %v, want %v", !waited, waited)
			}
			if b.Waited() {
				t.Error("Waited() stayed true after it was read")
			}
		})
	}
	t.Run("BookAllAt", func(t *testing.T) {
		b := NewBucket(1_000_000, 3000)
		deps := make([]int64, 4)
		if due := b.BookAllAt(0, []uint32{1500, 1500, 1500, 1500}, deps); due != 2 || deps[2] != 1500*1000 || deps[3] != 3000*1000 {
			t.Errorf("due %d, departures %v; want 2 due, then 1.5 ms and 3 ms", due, deps)
		}
	})
	t.Run("SetRate", func(t *testing.T) {
		b := NewBucket(1_000_000, 1500)
		deps := make([]int64, 2)
		b.BookAll([]int64{0, 0}, []uint32{1500, 1500}, deps)
		b.SetRate(2_000_000)
		b.BookAll([]int64{0}, []uint32{1500}, deps[:1])
		if deps[0] != 1500*1000+750*1000 {
			t.Errorf("after the rate doubled, the next packet leaves at %d ns, want %d", deps[0], 1500*1000+750*1000)
		}
	})
}

// TestBucketBooksAsDividing: BookAll and BookAllAt book as a bucket that
// divides for every packet that waits (the model below, the bucket's
// arithmetic written out packet by packet), on random rates, depths,
// sizes, times and rate changes.
func TestBucketBooksAsDividing(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 1))
	for round := range 2000 {
		rate := []uint64{1, 3, 1_000_000, 125_000_000, 337_316_176_470, 12_500_000_000_000}[rng.IntN(6)] + uint64(rng.IntN(1000))
		burst := []uint64{1, 1500, UplinkBurst, 1 << 20}[rng.IntN(4)]
		b, m := NewBucket(rate, burst), newDividing(rate, burst)
		now := int64(rng.IntN(1e9))
		for step := range 50 {
			if rng.IntN(8) == 0 {
				r := uint64(rng.Int64N(1 << uint(rng.IntN(45))))
				b.SetRate(r)
				m.rate = max(r, 1)
			}
			now += int64(rng.IntN(3)) * rng.Int64N(1+2*int64(UplinkBurst)*1e9/int64(m.rate)+1)
			n := 1 + rng.IntN(200)
			sizes := make([]uint32, n)
			one := uint32(1 + rng.IntN(65536))
			for i := range sizes {
				sizes[i] = one
				if rng.IntN(4) == 0 {
					sizes[i] = uint32(rng.IntN(65537))
				}
			}
			got, want := make([]int64, n), make([]int64, n)
			if rng.IntN(2) == 0 {
				seen := make([]int64, n)
				for i := range seen {
					seen[i] = now + rng.Int64N(1000) - 500
				}
				b.BookAll(seen, sizes, got)
				m.bookAll(seen, sizes, want)
			} else {
				due := b.BookAllAt(now, sizes, got)
				wantDue := m.bookAllAt(now, sizes, want)
				if due != wantDue {
					t.Fatalf("round %d step %d: BookAllAt due %d, want %d", round, step, due, wantDue)
				}
				clear(got[:due])
				clear(want[:due])
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d step %d (rate %d, burst %d, sizes %v): departures %v, want %v", round, step, m.rate, burst, sizes, got, want)
			}
			if w, mw := b.Waited(), m.waited; w != mw {
				t.Fatalf("round %d step %d: Waited() = %v, want %v", round, step, w, mw)
			}
			m.waited = false
			b.mu.Lock()
			tc, tokens := b.tc, b.tokens
			b.mu.Unlock()
			if tc != m.tc || tokens != m.tokens {
				t.Fatalf("round %d step %d: tc %d tokens %d, want %d %d", round, step, tc, tokens, m.tc, m.tokens)
			}
		}
	}
}

// dividing is TestBucketBooksAsDividing's model: a bucket that books
// packet by packet, dividing for each that waits.
type dividing struct {
	rate, burst, tokens uint64
	tc                  int64
	waited              bool
}

func newDividing(rate, burst uint64) *dividing {
	return &dividing{rate: max(rate, 1), burst: burst, tc: fresh}
}

func (m *dividing) bookAll(seen []int64, sizes []uint32, departures []int64) {
	full := m.burst * 1e9
	for i, size := range sizes {
		if m.tc == fresh {
			m.tc, m.tokens = seen[i], full
		}
		start := max(seen[i], m.tc)
		m.tokens = min(full, m.tokens+refill(m.rate, start-m.tc, full))
		cost := uint64(size) * 1e9
		dep := start
		if m.tokens >= cost {
			m.tokens -= cost
		} else {
			wait := (cost - m.tokens + m.rate - 1) / m.rate
			dep = start + int64(wait)
			m.tokens = m.tokens + wait*m.rate - cost
		}
		m.waited = m.waited || dep > seen[i]
		m.tc = dep
		departures[i] = dep
	}
}

func (m *dividing) bookAllAt(seen int64, sizes []uint32, departures []int64) (due int) {
	full := m.burst * 1e9
	if m.tc == fresh {
		m.tc, m.tokens = seen, full
	}
	if seen >= m.tc {
		m.tokens = min(full, m.tokens+refill(m.rate, seen-m.tc, full))
		m.tc = seen
		for ; due < len(sizes) && m.tokens >= uint64(sizes[due])*1e9; due++ {
			m.tokens -= uint64(sizes[due]) * 1e9
		}
	}
	rest := make([]int64, len(sizes)-due)
	for i := range rest {
		rest[i] = seen
	}
	m.bookAll(rest, sizes[due:], departures[due:])
	return due
}
