package rate

import "testing"

// TestTCXmit checks tc_calc_xmittime and tc_calc_xmitsize against values
// worked by hand: ticks of 64 ns, 15.625 a microsecond.
func TestTCXmit(t *testing.T) {
	for _, tc := range []struct {
		rate, size uint64
		ticks      uint32
		shown      uint64
	}{
		{rate: 1_250_000, size: 1600, ticks: 20000, shown: 1600},  // 10mbit: 1280 us
		{rate: 12_500_000, size: 1600, ticks: 2000, shown: 1600},  // 100mbit: 128 us
		{rate: 625_000, size: 15360, ticks: 384000, shown: 15360}, // 5mbit, 15k: 24576 us
		{rate: 125_000_000, size: 1600, ticks: 200, shown: 1600},  // 1gbit: 12.8 us (tc before 6.15: 187 ticks, 1375b)
		{rate: 10_000_000_000, size: 1600, ticks: 3, shown: 1920}, // 80gbit: 0.16 us is 2.5 ticks, up to 3 (192 ns)
		{rate: 1, size: 1 << 40, ticks: 1<<32 - 1, shown: 274},    // past 2^32-1 ticks: tc's UINT_MAX (274.9 s)
	} {
		ticks := TCXmitTime(tc.rate, tc.size)
		if ticks != tc.ticks {
			t.Errorf("TCXmitTime(%d, %d) = %d, want %d", tc.rate, tc.size, ticks, tc.ticks)
		}
		if got := TCXmitSize(tc.rate, ticks); got != tc.shown {
			t.Errorf("TCXmitSize(%d, %d) = %d, want %d", tc.rate, ticks, got, tc.shown)
		}
	}
}

// TestFormatTCTime checks sprint_time's forms: %.3g of ms or s, whole us.
func TestFormatTCTime(t *testing.T) {
	for _, tc := range []struct {
		us   float64
		want string
	}{
		{50000, "50ms"},
		{49888.6, "49.9ms"},
		{81920, "81.9ms"},
		{1_500_000, "1.5s"},
		{999.9, "999us"},
		{1000, "1ms"},
		{123456, "123ms"},
	} {
		if got := FormatTCTime(tc.us); got != tc.want {
			t.Errorf("FormatTCTime(%v) = %q, want %q", tc.us, got, tc.want)
		}
	}
}
