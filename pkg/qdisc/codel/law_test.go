package codel_test

import (
	"math"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/codel"
)

// endless is a queue that never runs dry: every packet it hands over has
// waited a second (976562 units of 1024 ns), and a megabyte stays queued behind it, so that CoDel,
// once dropping, stays dropping and its drops come exactly on its
// schedule.
type endless struct {
	now   uint32
	seq   uint64
	drops int
}

func (e *endless) Dequeue() (*tpkt, bool) {
	e.seq++
	return &tpkt{seq: e.seq, size: 1500, enq: e.now - 976562}, true
}
func (e *endless) Drop(*tpkt)      { e.drops++ }
func (e *endless) Backlog() uint32 { return 1 << 20 }

// newtonBound is how far below the exact law, interval/sqrt(count), Linux's
// gap after the count-th drop of a dropping state (entered afresh) may
// fall, relative to it. Linux's 1/sqrt(count) is one Newton step per count
// from the last count's value, x' = x/2 * (3 - count*x^2), from 1 - 2^-16
// at count 1, truncated to 16 bits:
//   - count 1: 1 - 2^-16, so the gap is short by at most 2^-16;
//   - count 2: one step from (about) 1 gives 1/2, 29.3% below 1/sqrt(2);
//   - count k >= 3: with y = x*sqrt(k), a step takes y to y*(3-y^2)/2,
//     which is at most 1 (Newton never overshoots here: Linux never drops
//     later than the exact law) and at least 1 - 3/2*(y-1)^2; the previous
//     count's value, y about sqrt(k/(k-1)) ~ 1 + 1/(2(k-1)) here, so the
//     step is short by at most 3/(8(k-1)^2). Truncating to 16 bits loses
//     under 2^-16 of x a step, and the next step shrinks an error in x by
//     3/(2(k-1)) <= 3/4, so at most 4*2^-16 of x, sqrt(k)*4*2^-16 of the
//     gap.
func newtonBound(k int) float64 {
	switch k {
	case 1:
		return 1.0 / 65536
	case 2:
		return 1 - math.Sqrt(2)/2 + 1.0/65536
	}
	return 3/(8*float64(k-1)*float64(k-1)) + math.Sqrt(float64(k))*4/65536
}

// TestControlLawAgainstSqrt checks the package's drop schedule against the
// exact control law, computed with math.Sqrt: in a dropping state that
// never ends, the gap after the k-th drop is at most interval/sqrt(k) (in
// 1024-ns units, truncated) and at least that less newtonBound(k) of it.
// The clock steps one unit at a time across each window, and the test
// checks that no drop comes before it.
func TestControlLawAgainstSqrt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval uint32 // codel time units
		drops    int
	}{
		{"interval 100ms", 97656, 300},
		{"interval 1ms", 976, 2000},
		{"interval 4s", 3906250, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			par := codel.Params{Target: 1, Interval: codel.Time(tc.interval), MTU: 1514}
			var v codel.Vars
			var st codel.Stats
			q := &endless{now: 1 << 31}
			call := func() int {
				before := q.drops
				codel.Dequeue[*tpkt](q, &v, &par, &st, codel.Time(q.now))
				return q.drops - before
			}
			call() // sets first_above_time = now + interval
			q.now += tc.interval + 1
			if call() != 1 || v.Count != 1 {
				t.Fatalf("no drop (count %d) an interval after going above target", v.Count)
			}
			last := q.now
			for k := 1; k < tc.drops; k++ {
				exact := float64(tc.interval) / math.Sqrt(float64(k))
				hi := uint32(exact)
				lo := uint32(exact * (1 - newtonBound(k)))
				q.now = last + lo - 1
				if n := call(); n != 0 {
					t.Fatalf("count %d: a drop %d units after the last, before %d (exact law %.1f, bound %.4g)", k, lo-1, lo, exact, newtonBound(k))
				}
				for q.now = last + lo; q.now <= last+hi; q.now++ {
					if n := call(); n > 0 {
						if n != 1 {
							t.Fatalf("count %d: %d drops at once", k, n)
						}
						break
					}
				}
				if q.now > last+hi {
					t.Fatalf("count %d: no drop within %d units of the last (exact law %.1f)", k, hi, exact)
				}
				if v.Count != uint32(k+1) {
					t.Fatalf("count %d after drop %d", v.Count, k+1)
				}
				last = q.now
			}
		})
	}
}
