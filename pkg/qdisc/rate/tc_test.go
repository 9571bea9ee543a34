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

// TestATM checks ATM cell framing against cell counts worked by hand: a
// packet of n bytes after overhead and mpu takes ceil(n/48) cells of 53
// bytes.
func TestATM(t *testing.T) {
	for _, tc := range []struct {
		length         uint32
		overhead       int32
		mpu            uint32
		cells          uint64
		withoutFraming uint64
	}{
		{length: 1, cells: 1, withoutFraming: 1},
		{length: 48, cells: 1, withoutFraming: 48},
		{length: 49, cells: 2, withoutFraming: 49},
		{length: 96, cells: 2, withoutFraming: 96},
		{length: 1500, cells: 32, withoutFraming: 1500},               // 31.25 cells
		{length: 1500, overhead: 10, cells: 32, withoutFraming: 1510}, // 31.46
		{length: 1500, overhead: 40, cells: 33, withoutFraming: 1540}, // 32.08
		{length: 40, mpu: 64, cells: 2, withoutFraming: 64},           // mpu first, then cells
		{length: 10240, cells: 214, withoutFraming: 10240},            // tc shows burst 10k atm as 11342b
		{length: 0, cells: 0, withoutFraming: 0},
	} {
		r := New(1_000_000).WithOverhead(tc.overhead).WithMPU(tc.mpu)
		if got := r.Len(tc.length); got != tc.withoutFraming {
			t.Errorf("Len(%d) with overhead %d, mpu %d = %d, want %d", tc.length, tc.overhead, tc.mpu, got, tc.withoutFraming)
		}
		a := r.WithATM(true)
		if got, want := a.Len(tc.length), tc.cells*53; got != want {
			t.Errorf("ATM Len(%d) with overhead %d, mpu %d = %d, want %d cells, %d bytes", tc.length, tc.overhead, tc.mpu, got, tc.cells, want)
		}
		// At 1 MB/s a byte is 1000 ns.
		if got, want := a.TimeNS(tc.length), tc.cells*53*1000; got != want || a.LinuxTimeNS(tc.length) != want {
			t.Errorf("ATM TimeNS(%d) = %d (Linux's %d), want %d", tc.length, got, a.LinuxTimeNS(tc.length), want)
		}
	}
}
