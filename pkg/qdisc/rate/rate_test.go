package rate

import (
	"math/big"
	"math/rand"
	"os"
	"testing"
)

// long reports whether the long runs are asked for (NETQDISC_LONG set):
// qdisctest.Long, which this package's tests cannot import (qdisctest
// imports rate).
func long() bool { return os.Getenv("NETQDISC_LONG") != "" }

// TestLinuxMultShift checks the multiplier and shift against values worked
// out by hand from psched_ratecfg_precompute__: the first shift at which
// 1e9<<shift / rate has bit 31 set, or 1e9<<shift has bit 63 set.
func TestLinuxMultShift(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  uint64
		mult  uint32
		shift uint8
	}{
		// 2e9 < 2^31 at shift 1, so shift 2: 4e9 has bit 31 set.
		{"1 B/s", 1, 4_000_000_000, 2},
		// 8000 * 2^19 = 4194304000 >= 2^31.
		{"1 Mbit/s", 125_000, 4_194_304_000, 19},
		// 0.8 * 2^32 = 3435973836.8 at shift 32.
		{"10 Gbit/s", 1_250_000_000, 3_435_973_836, 32},
		// 2^31 exactly at shift 31.
		{"8 Gbit/s", 1_000_000_000, 1 << 31, 31},
		// 1e9<<34 has bit 63 set first: floor(0.08 * 2^34) = 1374389534.
		{"100 Gbit/s", 12_500_000_000, 1_374_389_534, 34},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(tc.rate)
			if r.Mult() != tc.mult || r.Shift() != tc.shift {
				t.Errorf("New(%d): mult %d shift %d, want mult %d shift %d", tc.rate, r.Mult(), r.Shift(), tc.mult, tc.shift)
			}
		})
	}
}

// exactNS returns len*1e9/rate as an exact fraction.
func exactNS(l, rate uint64) *big.Rat {
	num := new(big.Int).Mul(new(big.Int).SetUint64(l), big.NewInt(NanosPerSecond))
	return new(big.Rat).SetFrac(num, new(big.Int).SetUint64(rate))
}

func floorNS(l, rate uint64) uint64 {
	e := exactNS(l, rate)
	return new(big.Int).Quo(e.Num(), e.Denom()).Uint64()
}

// checkTime asserts the precision the qdiscs rely on: TimeNS is the exact
// floor of len*1e9/rate (so within 1 ns, and within one part in 2^30),
// never below Linux's psched_l2t_ns and above it by at most 1 ns plus one
// part in 2^31.
func checkTime(t *testing.T, r Rate, l uint32) {
	t.Helper()
	got := r.TimeNS(l)
	want := floorNS(uint64(l), r.BytesPerSecond())
	if got != want {
		t.Fatalf("rate %d B/s, len %d: TimeNS %d, want floor(len*1e9/rate) = %d", r.BytesPerSecond(), l, got, want)
	}
	diff := new(big.Rat).Sub(exactNS(uint64(l), r.BytesPerSecond()), new(big.Rat).SetInt64(int64(got)))
	bound := new(big.Rat).SetFrac64(int64(want), 1<<30)
	if bound.Cmp(big.NewRat(1, 1)) < 0 {
		bound = big.NewRat(1, 1)
	}
	if diff.Abs(diff).Cmp(bound) > 0 {
		t.Fatalf("rate %d, len %d: TimeNS %d is %s ns off, more than %s", r.BytesPerSecond(), l, got, diff.FloatString(3), bound.FloatString(3))
	}
	linux := r.LinuxTimeNS(l)
	if got < linux || got > linux+1+got>>31 {
		t.Fatalf("rate %d, len %d: TimeNS %d vs Linux %d: want Linux <= TimeNS <= Linux + 1 + TimeNS/2^31", r.BytesPerSecond(), l, got, linux)
	}
}

func TestTimeNSEdges(t *testing.T) {
	rates := []uint64{1, 2, 3, 7, 999, 1000, 125_000, 1_250_000, 12_500_000, 125_000_000, 999_999_937, 1_000_000_000, 1 << 32, (1 << 32) + 1, 5_000_000_000, 12_499_999_999, 12_500_000_000}
	lens := []uint32{0, 1, 2, 3, 5, 54, 1514, 1515, 9000, 65535, 65536, 128<<10 - 1, 128 << 10}
	for _, rt := range rates {
		r := New(rt)
		for _, l := range lens {
			checkTime(t, r, l)
		}
	}
}

// TestTimeNSProperty draws random rates (log-uniform over 1 B/s..12.5 GB/s,
// where Linux's own multiplier misses the bound about once in 200 pairs)
// and random lengths up to 128 KiB: 200000 pairs in the long run
// (NETQDISC_LONG, as qdisctest.Long), the first 40000 by default, 20000
// with -short.
func TestTimeNSProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(20261121))
	n := 40_000
	if long() {
		n = 200_000
	}
	if testing.Short() {
		n = 20_000
	}
	for i := 0; i < n; i++ {
		var rt uint64
		switch i % 3 {
		case 0: // log-uniform
			rt = uint64(1) << uint(rng.Intn(34))
			rt += uint64(rng.Int63n(int64(rt)))
		case 1: // uniform over the whole range
			rt = 1 + uint64(rng.Int63n(12_500_000_000))
		default: // near a power of ten, as people configure
			p := uint64(1)
			for k := rng.Intn(10); k > 0; k-- {
				p *= 10
			}
			rt = p + uint64(rng.Intn(3)) - 1
			if rt == 0 {
				rt = 1
			}
		}
		if rt > 12_500_000_000 {
			rt = 12_500_000_000
		}
		checkTime(t, New(rt), uint32(rng.Intn(128<<10+1)))
	}
}

func TestOverheadAndMPU(t *testing.T) {
	r := New(1_000_000) // 1 µs per byte
	for _, tc := range []struct {
		name     string
		r        Rate
		len      uint32
		wantNS   uint64
		wantLen  uint64
		wantOver int32
	}{
		{"plain", r, 100, 100_000, 100, 0},
		{"overhead", r.WithOverhead(24), 100, 124_000, 124, 24},
		{"negative overhead", r.WithOverhead(-14), 100, 86_000, 86, -14},
		{"negative overhead below 0", r.WithOverhead(-200), 100, 0, 0, -200},
		{"mpu raises small packets", r.WithMPU(64), 40, 64_000, 64, 0},
		{"mpu leaves large packets", r.WithMPU(64), 1500, 1_500_000, 1500, 0},
		{"overhead then mpu", r.WithOverhead(4).WithMPU(64), 54, 64_000, 64, 4},
		{"overhead past mpu", r.WithOverhead(14).WithMPU(64), 54, 68_000, 68, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Len(tc.len); got != tc.wantLen {
				t.Errorf("Len(%d) = %d, want %d", tc.len, got, tc.wantLen)
			}
			if got := tc.r.TimeNS(tc.len); got != tc.wantNS {
				t.Errorf("TimeNS(%d) = %d, want %d", tc.len, got, tc.wantNS)
			}
			if got := tc.r.LinuxTimeNS(tc.len); got != tc.wantNS {
				t.Errorf("LinuxTimeNS(%d) = %d, want %d", tc.len, got, tc.wantNS)
			}
			if tc.r.Overhead() != tc.wantOver {
				t.Errorf("Overhead() = %d, want %d", tc.r.Overhead(), tc.wantOver)
			}
		})
	}
}

func TestZeroRateIsUnlimited(t *testing.T) {
	var r Rate
	if r.TimeNS(1500) != 0 || New(0).TimeNS(1<<20) != 0 || New(0).LinuxTimeNS(1500) != 0 {
		t.Errorf("zero rate: TimeNS = %d, want 0", r.TimeNS(1500))
	}
}

func TestBytesIn(t *testing.T) {
	for _, tc := range []struct {
		rate, ns, want uint64
	}{
		{1_250_000, 50_000_000, 62_500},                 // 10 Mbit/s for 50 ms
		{12_500_000_000, 1_000_000_000, 12_500_000_000}, // 100 Gbit/s for 1 s
		{3, 1, 0},
		{^uint64(0), ^uint64(0), ^uint64(0)}, // saturates
	} {
		if got := New(tc.rate).BytesIn(tc.ns); got != tc.want {
			t.Errorf("rate %d BytesIn(%d) = %d, want %d", tc.rate, tc.ns, got, tc.want)
		}
	}
}

// BenchmarkTimeNS shows the per-packet cost: a multiply and a shift.
func BenchmarkTimeNS(b *testing.B) {
	r := New(12_500_000)
	var sink uint64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sink += r.TimeNS(uint32(i) & 0xffff)
	}
	_ = sink
}
