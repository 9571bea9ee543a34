package cake

import (
	"math"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// standing queues 200 packets of one flow at 0 and dequeues one every
// 1ms, so that the n-th waited n ms: a queue that stands far above
// COBALT's 5ms target. It returns the sojourn (ms) of the first packet
// dropped or marked, and the counts.
func standing(t *testing.T, p pk) (signals []int, sent, drops, marks int, ce int) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Diffserv = BestEffort
	s := testSched(t, cfg)
	for i := range 200 {
		p.seq = uint64(i)
		enqueue(t, s, p, 0)
	}
	for ms := int64(1); s.qlen > 0; ms++ {
		before := s.drops
		pkt, _, ok := s.Dequeue(ms * 1e6)
		if !ok {
			t.Fatalf("unlimited cake sent nothing at %dms with %d queued", ms, s.qlen)
		}
		sent++
		x := s.XStats().Tins[0]
		if s.drops != before || int(x.ECNMarks) != marks {
			signals = append(signals, int(ms))
		}
		marks = int(x.ECNMarks)
		if tos, _ := header.IPv4(pkt.NetworkHeader().Slice()).TOS(); tos&3 == 3 {
			ce++
		}
		pkt.DecRef()
		checkInvariants(t, s)
	}
	return signals, sent, int(s.drops), marks, ce
}

// TestCOBALTStandingQueue: COBALT leaves a queue below its target alone,
// and drops from one that stands above it: first once the sojourn is past
// the target (within an interval of it), then at the control law's rate,
// interval/sqrt(count), each gap shorter than the one before. Over 200ms
// at a 100ms interval that is a handful of drops.
func TestCOBALTStandingQueue(t *testing.T) {
	at, sent, drops, marks, _ := standing(t, pk{payload: 1000})
	if len(at) < 3 || at[0] <= 5 || at[0] > 105 {
		t.Fatalf("drops at sojourns %v ms: want the first past the 5ms target and within target+interval, and more after", at)
	}
	for i := 2; i < len(at); i++ {
		if at[i]-at[i-1] > at[i-1]-at[i-2] {
			t.Errorf("drops at %v ms: gaps grow", at)
		}
	}
	if marks != 0 || sent+drops != 200 || drops != len(at) {
		t.Errorf("sent %d, dropped %d, marked %d of 200: want drops only, all accounted", sent, drops, marks)
	}
}

// TestCOBALTMarksECN: the same standing queue of ECN-capable packets is
// marked CE, not dropped (CoDel's signal; BLUE never engages here).
func TestCOBALTMarksECN(t *testing.T) {
	at, sent, drops, marks, ce := standing(t, pk{payload: 1000, tos: 2})
	if drops != 0 || marks < 3 || sent != 200 || ce != marks {
		t.Errorf("sent %d, dropped %d, marked %d (CE seen %d) at %v ms: want every packet sent, marks only", sent, drops, marks, ce, at)
	}
}

// TestInvSqrt: the cache holds 1/sqrt(count) in Q0.32 (1.0 saturated for
// counts 0 and 1), and past it one Newton step a count stays within 0.5%
// of it as the count climbs, as the control law needs.
func TestInvSqrt(t *testing.T) {
	for c := 2; c < len(invSqrtCache); c++ {
		want := math.Exp2(32) / math.Sqrt(float64(c))
		if math.Abs(float64(invSqrtCache[c])-want) > 2 {
			t.Errorf("count %d: cache %d, want %.0f", c, invSqrtCache[c], want)
		}
	}
	v := cobaltVars{count: 15}
	v.invSqrt()
	for c := uint32(16); c < 2000; c++ {
		v.count = c
		v.invSqrt()
		want := math.Exp2(32) / math.Sqrt(float64(c))
		if math.Abs(float64(v.recInvSqrt)-want)/want > 0.005 {
			t.Fatalf("count %d: %d, want %.0f", c, v.recInvSqrt, want)
		}
	}
}

// TestControlTruncates: the control law scales the interval as Linux's
// reciprocal_scale does, in 32 bits, so an interval of 2^32 ns (4.29s)
// or more counts only modulo 2^32 (a 10s rtt's interval as 1.41s).
func TestControlTruncates(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval uint64
		inv      uint32
		want     int64
	}{
		{"100ms at count 1", 100e6, 0xffffffff, 100e6 - 1},
		{"100ms at count 4", 100e6, 1 << 31, 50e6},
		{"just below 2^32", 1<<32 - 1, 0xffffffff, 1<<32 - 2},
		{"2^32 is 0", 1 << 32, 0xffffffff, 0},
		{"10s", 10e9, 0xffffffff, 10e9 - 2<<32 - 1},
		{"10s at count 4", 10e9, 1 << 31, (10e9 - 2<<32) / 2},
		{"interplanetary (1000s)", 1000_000_000_000, 0xffffffff, 1000_000_000_000%(1<<32) - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := control(1000, tc.interval, tc.inv); got != 1000+tc.want {
				t.Errorf("control(1000, %d, %#x) = %d, want %d", tc.interval, tc.inv, got, 1000+tc.want)
			}
		})
	}
}
