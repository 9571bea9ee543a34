package node

import (
	"slices"
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
