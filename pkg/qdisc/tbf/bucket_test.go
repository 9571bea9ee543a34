package tbf

import (
	"math/rand"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// TestBookAllAtIsBookAll holds rateBucket.BookAllAt, the bookings of a
// batch all seen at one time, to BookAll given that time for every packet:
// the same bucket after, the same departures after the first due (which
// are the time itself).
func TestBookAllAtIsBookAll(t *testing.T) {
	const now = int64(1e12)
	rng := rand.New(rand.NewSource(1))
	for _, tc := range []struct {
		name   string
		rate   uint64 // bytes per second
		burst  uint32
		sizes  []uint32 // sizes to draw from
		starts []int64  // t0 before, relative to now (fresh: fresh)
	}{
		{"never limiting", 1250 << 30, 1000 * 1514, []uint32{1514}, []int64{fresh, -1e9, -1, 0}},
		{"a few due, then waits", 12_500_000, 3028, []uint32{1514}, []int64{fresh, -1e9, -121_000, -1, 0, 1e6}},
		{"mixed sizes", 12_500_000, 64 << 10, []uint32{54, 1514, 1514, 1514, 9000}, []int64{fresh, -1e9, -5e6, -1e5, 0, 1e5}},
		{"packets larger than the bucket (after a change)", 125_000, 1514, []uint32{1514, 3028, 60}, []int64{fresh, -1e9, -12e6, -1e6, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rate.New(tc.rate)
			buffer := int64(r.TimeNS(tc.burst))
			for trial := 0; trial < 200; trial++ {
				n := 1 + rng.Intn(200)
				sizes := make([]uint32, n)
				seen := make([]int64, n)
				for i := range sizes {
					sizes[i] = tc.sizes[rng.Intn(len(tc.sizes))]
					seen[i] = now
				}
				start := tc.starts[rng.Intn(len(tc.starts))]
				if start != fresh {
					start += now
				}
				want, got := &rateBucket{rate: r, buffer: buffer}, &rateBucket{rate: r, buffer: buffer}
				want.t0.Store(start)
				got.t0.Store(start)
				wantDep, gotDep := make([]int64, n), make([]int64, n)
				want.BookAll(seen, sizes, wantDep)
				due := got.BookAllAt(now, sizes, gotDep)
				if g, w := got.t0.Load(), want.t0.Load(); g != w {
					t.Fatalf("t0 from %d, sizes %v: BookAllAt leaves %d, BookAll %d", start, sizes, g, w)
				}
				for i := range sizes {
					if i < due {
						if wantDep[i] != now {
							t.Fatalf("t0 from %d, sizes %v: packet %d due at once (due %d), BookAll books it at %d, now %d", start, sizes, i, due, wantDep[i], now)
						}
					} else if gotDep[i] != wantDep[i] {
						t.Fatalf("t0 from %d, sizes %v: packet %d (due %d) booked at %d, BookAll %d", start, sizes, i, due, gotDep[i], wantDep[i])
					}
				}
				if due < n && wantDep[due] == now {
					t.Fatalf("t0 from %d, sizes %v: packet %d may leave now, not counted due (%d)", start, sizes, due, due)
				}
			}
		})
	}
}
