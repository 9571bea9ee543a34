package node

import (
	"slices"
	"sync"
	"sync/atomic"
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
		// Linux's psched_l2t_ns, as tbf's: 2 bytes at 3 bytes a second,
		// less the bucket of 1 byte, 666666666 - 333333333 ns.
		{"an odd rate, as Linux costs it", 3, 1, []int64{0}, []uint32{2}, []int64{333_333_333}},
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
		// Two packets at 1 MB/s with a burst of one: the second is booked
		// at 1.5 ms, 1500 bytes past now. At 2 MB/s from now that debt
		// is paid at 0.75 ms, and the next packet leaves 0.75 ms later.
		b := NewBucket(1_000_000, 1500)
		deps := make([]int64, 2)
		b.BookAll([]int64{0, 0}, []uint32{1500, 1500}, deps)
		b.SetRate(0, 2_000_000)
		b.BookAll([]int64{0}, []uint32{1500}, deps[:1])
		if deps[0] != 1500*1000 {
			t.Errorf("after the rate doubled, the next packet leaves at %d ns, want %d", deps[0], 1500*1000)
		}
		if b.Rate() != 2_000_000 {
			t.Errorf("Rate() = %d, want 2000000", b.Rate())
		}
		// Idle a while: the credit is the burst, whatever the rate was.
		b.SetRate(10*ms, 1_000_000)
		if got := b.Tokens(20 * ms); got != 1500 {
			t.Errorf("Tokens after 10 ms idle = %d bytes, want the burst, 1500", got)
		}
	})
	t.Run("concurrent", func(t *testing.T) {
		// Lanes booking while the rate changes: no lane books with a rate
		// that is no longer in force, so in any window the bytes booked
		// to leave are at most the burst and the fastest rate's.
		b := NewBucket(1_000_000, 1500)
		var wg sync.WaitGroup
		deps := make([][]int64, 4)
		for l := range deps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := make([]int64, 1)
				for range 500 {
					b.BookAll([]int64{0}, []uint32{1500}, d)
					deps[l] = append(deps[l], d[0])
				}
			}()
		}
		for i := range 200 {
			b.SetRate(0, uint64(1_000_000+i%2*1_000_000))
		}
		wg.Wait()
		var all []int64
		for _, d := range deps {
			all = append(all, d...)
		}
		slices.Sort(all)
		// 2000 packets of 1500 bytes, at no more than 2 MB/s after a
		// burst of one: the last leaves at 1.5 s or later.
		if last := all[len(all)-1]; last < 1499*1_500_000/2 {
			t.Errorf("2000 packets booked to leave by %d ns: faster than the fastest rate", last)
		}
	})
}

// TestMemberKeepsItsClass: a Member computes with its class as the
// runtime gave it, whatever its slot on the board says (a neighbour that
// wrote it), and never holds itself below its rate.
func TestMemberKeepsItsClass(t *testing.T) {
	ms := members(t, [3]uint8{}, 1e9)
	b := ms[0].board
	atomic.StoreUint64(&b.slot(ms[0].slot)[sRate], 1)
	atomic.StoreUint64(&b.slot(ms[0].slot)[sCeil], 1)
	now := int64(1e9)
	var got uint64
	for range 3 {
		for _, m := range ms {
			s, err := m.Share(now, Counters{Busy: true})
			if err != nil {
				t.Fatal(err)
			}
			if m == ms[0] {
				got = s
			}
		}
		now += int64(Period)
	}
	if want := uint64(10*mbit + 40*mbit*5/21); got+1 < want || got > want+1 {
		t.Errorf("with its slot's rate and ceil forged to 1, 1:10's share is %d bytes/s, want %d", got, want)
	}
}
