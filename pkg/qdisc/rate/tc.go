package rate

import (
	"fmt"
	"math"
)

// tcTicksPerMicrosecond is tc's tick_in_usec on a kernel with
// high-resolution timers: /proc/net/psched's 1000/64, psched ticks of
// 64 ns (PSCHED_SHIFT 6).
const tcTicksPerMicrosecond = 15.625

// TCXmitTime is iproute2's tc_calc_xmittime (as fixed in 6.15): the
// psched ticks of 64 ns that size bytes take at bytesPerSec, rounded up,
// at most 2^32-1. tc sends htb's buffers so, and the kernel keeps them in
// ticks: what `tc class show` prints comes back through TCXmitSize.
func TCXmitTime(bytesPerSec, size uint64) uint32 {
	if bytesPerSec == 0 {
		return math.MaxUint32
	}
	// The operations in tc's order, each rounded as C rounds them.
	us := float64(NanosPerSecond/1000) * (float64(size) / float64(bytesPerSec))
	v := math.Ceil(float64(us * tcTicksPerMicrosecond))
	if v > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

// TCXmitSize is iproute2's tc_calc_xmitsize: the bytes bytesPerSec sends
// in ticks psched ticks, rounded down. tc prints a bucket's depth so, from
// the ticks the kernel reports.
func TCXmitSize(bytesPerSec uint64, ticks uint32) uint64 {
	us := float64(ticks) / tcTicksPerMicrosecond
	return uint64(float64(float64(bytesPerSec)*us) / float64(NanosPerSecond/1000))
}

// NSToTicks is the kernel's PSCHED_NS2TICKS: ns in psched ticks of 64 ns,
// rounded down, as a dump reports a bucket kept in ns (tbf's), in the u32
// it has.
func NSToTicks(ns uint64) uint32 { return uint32(ns >> 6) }

// TCTicksToMicros is tc's tc_core_tick2time: ticks in microseconds.
func TCTicksToMicros(ticks uint32) float64 { return float64(ticks) / tcTicksPerMicrosecond }

// FormatTCTime prints a time in microseconds as tc's sprint_time does
// (the fraction dropped first, as tc's u32 argument drops it): "50ms",
// "49.9ms", "1.5s", "800us".
func FormatTCTime(us float64) string {
	t := uint32(us)
	f := float64(t)
	switch {
	case f >= 1e6:
		return fmt.Sprintf("%.3gs", f/1e6)
	case f >= 1e3:
		return fmt.Sprintf("%.3gms", f/1e3)
	default:
		return fmt.Sprintf("%dus", t)
	}
}
