package rate

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
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

// tcTimeUnits are get_time's units, in ns.
var tcTimeUnits = map[string]float64{
	"": 1e3, "s": 1e9, "sec": 1e9, "secs": 1e9,
	"ms": 1e6, "msec": 1e6, "msecs": 1e6,
	"us": 1e3, "usec": 1e3, "usecs": 1e3,
}

// ParseTCTime reads a time as tc's get_time does: a number and a unit (s,
// ms, us and their longer forms), a bare number microseconds; tc keeps
// whole microseconds in a u32, as this does.
func ParseTCTime(v string) (time.Duration, error) {
	end := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(v)
	}
	per, ok := tcTimeUnits[strings.ToLower(v[end:])]
	n, err := strconv.ParseFloat(v[:end], 64)
	if !ok || err != nil || end == 0 {
		return 0, errors.New("want a time such as 50ms, 1.5ms, 300us or 1s (a bare number is microseconds)")
	}
	us := math.Floor(n * per / 1e3)
	if us > math.MaxUint32 {
		return 0, fmt.Errorf("above tc's %d microseconds (a u32)", uint32(math.MaxUint32))
	}
	return time.Duration(us) * time.Microsecond, nil
}
