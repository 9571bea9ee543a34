package cake

import (
	"testing"
)

// TestShaperDepartures: the shaper sends exactly its rate, each packet
// charged its overhead-compensated length (WireLen): cake_advance_shaper's
// departures derived by hand. At 1,000,000 bytes/s cake_set_rate's time
// per byte is 1000<<24 >> 24 ns: exactly 1000ns a byte. A pass that runs
// late keeps the schedule (deficit mode: no drift, no burst past it).
func TestShaperDepartures(t *testing.T) {
	const rate = 1_000_000
	type step struct {
		at   int64
		sent bool
		next int64 // NextEvent after a dequeue that sent nothing
	}
	for _, tc := range []struct {
		name  string
		cfg   func(*Config)
		p     pk
		steps []step
	}{
		{"raw: 1514 bytes each, 1514us apart", func(c *Config) {}, pk{payload: 1460, link: 14},
			[]step{{0, true, 0}, {0, false, 1514000}, {1513999, false, 1514000}, {1514000, true, 0}, {1514000, false, 3028000}, {3028000, true, 0}}},
		{"overhead 18 mpu 64 without the link header: 1518 bytes", func(c *Config) { c.Raw, c.Overhead, c.MPU = false, 18, 64 }, pk{payload: 1460, link: 14},
			[]step{{0, true, 0}, {0, false, 1518000}, {1518000, true, 0}, {1518000, false, 3036000}}},
		{"atm: 32 cells of 53 bytes", func(c *Config) { c.Raw, c.Overhead, c.ATM = false, 18, ATMCells }, pk{payload: 1460, link: 14},
			[]step{{0, true, 0}, {0, false, 1696000}, {1696000, true, 0}}},
		{"ptm: one byte in 64 more", func(c *Config) { c.Raw, c.Overhead, c.ATM = false, 0, PTM }, pk{payload: 1460, link: 14},
			[]step{{0, true, 0}, {0, false, 1524000}}},
		{"mpu raises a small packet", func(c *Config) { c.Raw, c.MPU = false, 100 }, pk{payload: 0, link: 14},
			[]step{{0, true, 0}, {0, false, 100000}}},
		{"late pass keeps the schedule", func(c *Config) {}, pk{payload: 1460, link: 14},
			[]step{{0, true, 0}, {2000000, true, 0}, {2000000, false, 3028000}, {3028000, true, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Bandwidth, cfg.Diffserv = rate, BestEffort
			tc.cfg(&cfg)
			s := testSched(t, cfg)
			for range 5 {
				enqueue(t, s, tc.p, 0)
			}
			for i, st := range tc.steps {
				pkt, _, ok := s.Dequeue(st.at)
				if ok {
					pkt.DecRef()
				}
				if ok != st.sent {
					t.Fatalf("step %d: Dequeue(%d) sent %v, want %v", i, st.at, ok, st.sent)
				}
				if !ok {
					if got := s.NextEvent(); got != st.next {
						t.Fatalf("step %d: NextEvent %d, want %d", i, got, st.next)
					}
				}
				checkInvariants(t, s)
			}
		})
	}
}

// TestSetRate: cake_set_rate's arithmetic, by hand: the time per byte in
// ns<<shift below 2^34, the flow quantum rate>>12 within 300..1514, and
// COBALT's target and interval raised at low rates to 1.5 MTU times.
func TestSetRate(t *testing.T) {
	for _, tc := range []struct {
		rate             uint64
		ns               uint64
		shift            uint8
		quantum          uint16
		target, interval uint64
	}{
		// 1e6 B/s: 1e9<<34/1e6 = 1000<<34, halved 10 times.
		{1_000_000, 1000 << 24, 24, 300, 5_000_000, 100_000_000},
		// 12.5e6 B/s (100Mbit): 80<<34 halved 7 times; quantum 3051 capped.
		{12_500_000, 80 << 27, 27, 1514, 5_000_000, 100_000_000},
		// 10_000 B/s: 100000<<34 halved 17 times; a 1514-byte packet
		// takes 151.4ms, so target 227.1ms, and interval twice that
		// (above rtt + 222.1ms).
		{10_000, 100000 << 17, 17, 300, 227_100_000, 454_200_000},
		{0, 0, 0, 1514, 5_000_000, 100_000_000},
	} {
		var b tin
		b.setRate(tc.rate, 1514, 5_000_000, 100_000_000)
		if b.rateNS != tc.ns || b.rateShift != tc.shift || b.flowQuantum != tc.quantum || b.cp.target != tc.target || b.cp.interval != tc.interval {
			t.Errorf("rate %d: ns %d shift %d quantum %d target %d interval %d; want %d %d %d %d %d", tc.rate,
				b.rateNS, b.rateShift, b.flowQuantum, b.cp.target, b.cp.interval, tc.ns, tc.shift, tc.quantum, tc.target, tc.interval)
		}
	}
}
