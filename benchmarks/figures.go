package benchmarks

import (
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// Figures: what the tables, the JSON and the charts read off a Result.

// Bufferbloat figures: the probes' RTT above the idle RTT in ms, Jain's
// index over the bulk streams, and the UDP echoes lost.
var (
	ProbeP50Above = func(r measure.Result) float64 { return msAbove(r.RTT(0.5), r.IdleRTT) }
	ProbeP99Above = func(r measure.Result) float64 { return msAbove(r.RTT(0.99), r.IdleRTT) }
	UDPP50Above   = func(r measure.Result) float64 { return msAbove(r.UDPRTT(0.5), r.IdleRTT) }
	UDPP99Above   = func(r measure.Result) float64 { return msAbove(r.UDPRTT(0.99), r.IdleRTT) }
	Fairness      = func(r measure.Result) float64 { return Jain(r.StreamBps) }
	UDPLost       = func(r measure.Result) float64 { return float64(r.UDPLost) }
	Drops         = func(r measure.Result) float64 { return float64(r.Drops) }
	Marks         = func(r measure.Result) float64 { return float64(r.ECNMarks) }
)

func msAbove(d, idle time.Duration) float64 {
	return float64(max(d-idle, 0)) / float64(time.Millisecond)
}

// Mbps is a measure.Result's field in Mbit/s.
func Mbps(f func(measure.Result) float64) func(measure.Result) float64 {
	return func(r measure.Result) float64 { return f(r) * 8 / 1e6 }
}

// Goodput, Wire, Ratio, CPUPct, CPUPerGB and RTT50 pick a measure.Result's figures.
var (
	Goodput  = func(r measure.Result) float64 { return r.GoodputBps }
	Wire     = func(r measure.Result) float64 { return r.WireBps }
	Ratio    = func(r measure.Result) float64 { return r.Ratio() }
	CPUPct   = func(r measure.Result) float64 { return r.CPUPercent() }
	CPUPerGB = func(r measure.Result) float64 { return r.CPUPerGB() }
	RTT50    = func(r measure.Result) float64 { return float64(r.RTT(0.5)) / float64(time.Millisecond) }
	RTT99    = func(r measure.Result) float64 { return float64(r.RTT(0.99)) / float64(time.Millisecond) }
	// CPUPerPkt is µs of CPU per 1514-byte packet; WakeupsPerSec the
	// qdisc's timer wake-ups a second; LateP50 and LateP99 are timer
	// wake-up lateness in µs.
	CPUPerPkt     = func(r measure.Result) float64 { return float64(r.CPUPerPacket()) / float64(time.Microsecond) }
	WakeupsPerSec = func(r measure.Result) float64 { return float64(r.Wakeups) / r.Elapsed.Seconds() }
	LateP50       = func(r measure.Result) float64 { return float64(r.Lateness.Quantile(0.5)) / float64(time.Microsecond) }
	LateP99       = func(r measure.Result) float64 { return float64(r.Lateness.Quantile(0.99)) / float64(time.Microsecond) }
)
