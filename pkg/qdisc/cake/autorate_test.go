package cake

import "testing"

// TestAutorateIngress: with autorate-ingress the shaper's rate follows
// the rate packets arrive at (15/16 of the estimate, at most every
// 250ms), from the bandwidth given as the first estimate, up or down;
// without it the rate stays.
func TestAutorateIngress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		autorate bool
		start    uint64
		lo, hi   uint64
	}{
		{"falls to the arrival rate", true, 4_000_000, 800_000, 1_100_000},
		{"rises to the arrival rate", true, 250_000, 800_000, 1_100_000},
		{"off: stays", false, 4_000_000, 4_000_000, 4_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Bandwidth, cfg.Autorate, cfg.Diffserv = tc.start, tc.autorate, BestEffort
			s := testSched(t, cfg)
			// 1000-byte packets, one every millisecond but for a
			// jitter of a few hundred microseconds: 1,000,000 bytes/s
			// for 5 seconds, all sent.
			for i := range int64(5000) {
				now := i*1_000_000 + (i*7919)%400_000
				enqueue(t, s, pk{src: 1, payload: 1000 - 40}, now)
				for {
					p, _, ok := s.Dequeue(now)
					if !ok {
						break
					}
					p.DecRef()
				}
			}
			if s.rateBps < tc.lo || s.rateBps > tc.hi {
				t.Errorf("rate %d bytes/s after 5s of 1,000,000 bytes/s, want %d to %d (estimate %d)", s.rateBps, tc.lo, tc.hi, s.avgPeakBandwidth)
			}
			if got := s.XStats().Tins[0].ThresholdRate; got != s.rateBps {
				t.Errorf("the tin's threshold %d is not the rate %d", got, s.rateBps)
			}
		})
	}
}

// TestPeek: Peek shows the packet the next Dequeue hands over, and keeps
// it counted.
func TestPeek(t *testing.T) {
	s := testSched(t, DefaultConfig())
	for i := range 3 {
		enqueue(t, s, pk{sport: uint16(i), payload: 100 + i, seq: uint64(i)}, 0)
	}
	var sizes [1]uint32
	var at [1]int64
	if n := s.Peek(5, sizes[:], at[:]); n != 1 || at[0] != 0 {
		t.Fatalf("Peek: %d, arrived %d", n, at[0])
	}
	if n, _ := s.Len(); n != 3 {
		t.Fatalf("Len after Peek: %d, want 3", n)
	}
	checkInvariants(t, s)
	pkt, size, ok := s.Dequeue(5)
	if !ok || size != sizes[0] || pkt.Size() != int(size) {
		t.Fatalf("Dequeue after Peek: %v, %d bytes, peeked %d", ok, size, sizes[0])
	}
	pkt.DecRef()
	if n, _ := s.Len(); n != 2 {
		t.Fatalf("Len: %d, want 2", n)
	}
	checkInvariants(t, s)
}
