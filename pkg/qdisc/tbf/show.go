package tbf

import (
	"fmt"
	"math"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// String prints c as `tc qdisc show` prints a tbf (iproute2's
// tbf_print_opt, from what Linux's tbf_dump reports), field for field:
//
//	tbf rate 1Mbit burst 10Kb peakrate 2Mbit minburst 1600b lat 50ms overhead 14 linklayer atm
//
// As on Linux, the bucket's depth shown is what the kernel keeps, the
// time of Burst bytes at the rate in 64 ns ticks, overhead, mpu and ATM
// cells folded in (burst 10k with linklayer atm shows as 11342b, its 214
// cells), and the queue's bound is shown as the latency it allows
// (limit/rate less the bucket's time: "lat 81.9ms" for limit 20k at
// 1mbit with burst 10k), or as its limit where that is negative. mpu
// shows with Detailed only, as with tc -d. Past tc: "pkt_rate 20000pps
// pkt_burst 32pkt" for a packet ceiling (a packet-only one has no rate
// nor burst), "tbf rate none" for a ceiling removed by Change, and
// "; child ..." for a child qdisc (Discipline.Show gives it its own line,
// as tc does).
func (c Config) String() string { return c.format(false) + c.childString() }

// Detailed prints c as `tc -d qdisc show` does: the buckets' cells and
// mpu, the peak bucket as mtu, and the linklayer always.
func (c Config) Detailed() string { return c.format(true) + c.childString() }

// childString is String's "; child ..." for a child qdisc.
func (c Config) childString() string {
	if s, ok := c.Child.(fmt.Stringer); ok {
		return "; child " + s.String()
	}
	return ""
}

func (c Config) format(details bool) string {
	var b strings.Builder
	r, p := c.rates()
	// What tbf_dump reports: the buckets in ticks, from their ns.
	buffer := rate.NSToTicks(r.LinuxTimeNS(c.Burst))
	var mtu uint32
	if c.PeakRate != 0 {
		mtu = rate.NSToTicks(p.LinuxTimeNS(c.MTU))
	}
	mpu := rate.FormatSize(uint64(c.MPU))
	switch {
	case c.Rate != 0:
		fmt.Fprintf(&b, "tbf rate %s burst %s", rate.FormatRate(c.Rate), rate.FormatSize(rate.TCXmitSize(c.Rate, buffer)))
		if details {
			fmt.Fprintf(&b, "/1 mpu %s", mpu)
		}
	case c.PacketRate != 0:
		b.WriteString("tbf") // a packet-only ceiling
	default:
		b.WriteString("tbf rate none")
	}
	if c.PeakRate != 0 {
		shown := rate.FormatSize(rate.TCXmitSize(c.PeakRate, mtu))
		if details {
			fmt.Fprintf(&b, " peakrate %s mtu %s/1 mpu %s", rate.FormatRate(c.PeakRate), shown, mpu)
		} else {
			fmt.Fprintf(&b, " peakrate %s minburst %s", rate.FormatRate(c.PeakRate), shown)
		}
	}
	if c.PacketRate != 0 {
		fmt.Fprintf(&b, " pkt_rate %dpps pkt_burst %dpkt", c.PacketRate, c.PacketBurst)
	}
	if limit := c.shownLimit(); limit != 0 {
		if lat, ok := c.shownLatency(limit, buffer, mtu); ok {
			fmt.Fprintf(&b, " lat %s", rate.FormatTCTime(lat))
		} else {
			fmt.Fprintf(&b, " limit %s", rate.FormatSize(limit))
		}
	}
	if c.Overhead != 0 {
		fmt.Fprintf(&b, " overhead %d", c.Overhead)
	}
	switch {
	case c.ATM:
		b.WriteString(" linklayer atm")
	case details && c.Rate != 0:
		b.WriteString(" linklayer ethernet")
	}
	return b.String()
}

// shownLimit is the limit Linux keeps for c: Limit, or the one tc's
// tbf_parse_opt computes from Latency (rate*latency + burst, with a peak
// rate at most peakrate*latency + mtu); 0 when neither is set (the
// default limit depends on the link: New fills it in).
func (c Config) shownLimit() uint64 {
	if c.Latency <= 0 || c.Rate == 0 {
		return uint64(c.Limit)
	}
	limit := addSat(rate.New(c.Rate).BytesIn(uint64(c.Latency)), uint64(c.Burst))
	if c.PeakRate != 0 {
		limit = min(limit, addSat(rate.New(c.PeakRate).BytesIn(uint64(c.Latency)), uint64(c.MTU)))
	}
	return min(limit, math.MaxUint32)
}

// shownLatency is the latency tbf_print_opt shows for limit: the time
// the limit takes at the rate less the bucket's (the larger of that and
// the same at the peak rate), in microseconds; ok is false where it is
// negative (tc then shows the limit), or without a rate.
func (c Config) shownLatency(limit uint64, buffer, mtu uint32) (us float64, ok bool) {
	if c.Rate == 0 {
		return 0, false
	}
	us = 1e6*(float64(limit)/float64(c.Rate)) - rate.TCTicksToMicros(buffer)
	if c.PeakRate != 0 {
		us = max(us, 1e6*(float64(limit)/float64(c.PeakRate))-rate.TCTicksToMicros(mtu))
	}
	return us, us >= 0
}

// Show implements qdisc.Shower: the tbf's own line, and its child, if it
// has one, on a line of its own under class 1, as tc shows a qdisc
// grafted with `tc qdisc add dev eth0 parent 8001:1 fq_codel` (its byte
// FIFO, which Linux creates unnamed, is not shown). The child hands the
// tbf everything it sends, so it shows the tbf's Sent; its drops and
// backlog are its own.
func (d *Discipline) Show() qdisc.Showing {
	cfg := d.Config()
	cfg.Child = nil
	s := qdisc.Showing{Stats: d.Stats()}
	s.Kind, s.Options = qdisc.SplitKind(cfg.String())
	d.Child(func(c qdisc.Queue) {
		if c == nil {
			return
		}
		child := qdisc.Showing{Stats: qdisc.Stats{Bytes: s.Stats.Bytes, Packets: s.Stats.Packets, Drops: c.Drops()}}
		n, bytes := c.Len()
		child.Stats.BacklogPackets, child.Stats.BacklogBytes = uint64(n), bytes
		if str, ok := c.(fmt.Stringer); ok {
			child.Kind, child.Options = qdisc.SplitKind(str.String())
		}
		if x, ok := c.(qdisc.XStatser); ok {
			child.XStats = x.TCXStats()
		}
		s.Children = []qdisc.Grafted{{Class: 1, Showing: child}}
	})
	return s
}
