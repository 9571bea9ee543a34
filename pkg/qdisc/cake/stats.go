package cake

import (
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// TinStats are one tin's counters, as cake_dump_stats reports them
// (TCA_CAKE_TIN_STATS_*).
type TinStats struct {
	// ThresholdRate is the tin's rate, in bytes/s (0: unlimited).
	ThresholdRate uint64
	// SentBytes and SentPackets count what was queued in the tin (the
	// ACK filter's and COBALT's drops included, as Linux counts them).
	SentBytes   uint64
	SentPackets uint32
	// BacklogBytes is queued now.
	BacklogBytes uint32
	// Target and Interval are COBALT's, in microseconds.
	TargetUS, IntervalUS uint32
	// PeakDelayUS, AvgDelayUS and BaseDelayUS are the moving peak,
	// average and base (sparse) delay packets waited.
	PeakDelayUS, AvgDelayUS, BaseDelayUS uint32
	// WayIndirectHits, WayMisses and WayCollisions are the
	// set-associative hash's.
	WayIndirectHits, WayMisses, WayCollisions uint32
	// Drops counts COBALT's and the memory limit's drops, ECNMarks the
	// packets marked CE, AckDrops the ACK filter's.
	Drops, ECNMarks, AckDrops uint32
	// SparseFlows (decaying ones included), BulkFlows and
	// UnresponsiveFlows are the flows in each set now.
	SparseFlows, BulkFlows, UnresponsiveFlows uint32
	// MaxSkbLen is the longest packet queued, FlowQuantum the tin's
	// quantum.
	MaxSkbLen   uint32
	FlowQuantum uint32
}

// XStats are cake's own counters (TCA_CAKE_STATS_*), tins in tc's order.
type XStats struct {
	CapacityEstimate uint64 // bytes/s
	MemoryLimit      uint64
	MemoryUsed       uint64 // the most used (Linux's buffer_max_used)
	AvgNetOff        uint32
	MaxNetLen        uint32
	MaxAdjLen        uint32
	MinNetLen        uint32
	MinAdjLen        uint32
	Tins             []TinStats
}

// XStats returns the counters now.
func (s *Sched) XStats() XStats {
	x := XStats{
		CapacityEstimate: s.avgPeakBandwidth,
		MemoryLimit:      s.bufferLimit,
		MemoryUsed:       s.bufferMaxUsed,
		AvgNetOff:        uint32((s.avgNetoff + 0x8000) >> 16),
		MaxNetLen:        s.maxNetlen,
		MaxAdjLen:        s.maxAdjlen,
		MinNetLen:        s.minNetlen,
		MinAdjLen:        s.minAdjlen,
		Tins:             make([]TinStats, 0, s.tinCnt),
	}
	for _, t := range s.tinOrder {
		b := &s.tins[t]
		x.Tins = append(x.Tins, TinStats{
			ThresholdRate:     b.rateBps,
			SentBytes:         b.bytes,
			SentPackets:       b.packets,
			BacklogBytes:      b.backlog,
			TargetUS:          uint32(b.cp.target / 1000),
			IntervalUS:        uint32(b.cp.interval / 1000),
			PeakDelayUS:       uint32(b.peakDelay / 1000),
			AvgDelayUS:        uint32(b.avgDelay / 1000),
			BaseDelayUS:       uint32(b.baseDelay / 1000),
			WayIndirectHits:   b.wayHits,
			WayMisses:         b.wayMisses,
			WayCollisions:     b.wayCollisions,
			Drops:             b.dropped,
			ECNMarks:          b.ecnMark,
			AckDrops:          b.ackDrop,
			SparseFlows:       uint32(b.sparse) + uint32(b.decaying),
			BulkFlows:         uint32(b.bulk),
			UnresponsiveFlows: uint32(b.unresponsive),
			MaxSkbLen:         b.maxSkblen,
			FlowQuantum:       uint32(b.flowQuantum),
		})
	}
	return x
}

// TCXStats implements qdisc.XStatser: cake's counters as `tc -s qdisc
// show` prints them.
func (s *Sched) TCXStats() string { return s.XStats().String() }

// tcTime writes microseconds as tc's sprint_time does since iproute2
// 5.7: "5ms", "1.2s", "80us".
func tcTime(us uint32) string { return rate.FormatTCTime(float64(us)) }

// String writes x as q_cake.c's cake_print_xstats does.
func (x XStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, " memory used: %s of %s\n", rate.FormatSize(x.MemoryUsed), rate.FormatSize(x.MemoryLimit))
	fmt.Fprintf(&b, " capacity estimate: %s\n", rate.FormatRate(x.CapacityEstimate))
	fmt.Fprintf(&b, " min/max network layer size: %12d /%8d\n", x.MinNetLen, x.MaxNetLen)
	fmt.Fprintf(&b, " min/max overhead-adjusted size: %8d /%8d\n", x.MinAdjLen, x.MaxAdjLen)
	fmt.Fprintf(&b, " average network hdr offset: %12d\n\n", x.AvgNetOff)
	switch len(x.Tins) {
	case 3:
		b.WriteString("                   Bulk  Best Effort        Voice\n")
	case 4:
		b.WriteString("                   Bulk  Best Effort        Video        Voice\n")
	default:
		b.WriteString("          ")
		for i := range x.Tins {
			fmt.Fprintf(&b, "        Tin %d", i)
		}
		b.WriteString("\n")
	}
	row := func(name string, f func(t *TinStats) string) {
		b.WriteString(name)
		for i := range x.Tins {
			fmt.Fprintf(&b, " %12s", f(&x.Tins[i]))
		}
		b.WriteString("\n")
	}
	u := func(v uint32) string { return fmt.Sprint(v) }
	row("  thresh  ", func(t *TinStats) string { return rate.FormatRate(t.ThresholdRate) })
	row("  target  ", func(t *TinStats) string { return tcTime(t.TargetUS) })
	row("  interval", func(t *TinStats) string { return tcTime(t.IntervalUS) })
	row("  pk_delay", func(t *TinStats) string { return tcTime(t.PeakDelayUS) })
	row("  av_delay", func(t *TinStats) string { return tcTime(t.AvgDelayUS) })
	row("  sp_delay", func(t *TinStats) string { return tcTime(t.BaseDelayUS) })
	row("  backlog ", func(t *TinStats) string { return rate.FormatSize(uint64(t.BacklogBytes)) })
	row("  pkts    ", func(t *TinStats) string { return u(t.SentPackets) })
	row("  bytes   ", func(t *TinStats) string { return fmt.Sprint(t.SentBytes) })
	row("  way_inds", func(t *TinStats) string { return u(t.WayIndirectHits) })
	row("  way_miss", func(t *TinStats) string { return u(t.WayMisses) })
	row("  way_cols", func(t *TinStats) string { return u(t.WayCollisions) })
	row("  drops   ", func(t *TinStats) string { return u(t.Drops) })
	row("  marks   ", func(t *TinStats) string { return u(t.ECNMarks) })
	row("  ack_drop", func(t *TinStats) string { return u(t.AckDrops) })
	row("  sp_flows", func(t *TinStats) string { return u(t.SparseFlows) })
	row("  bk_flows", func(t *TinStats) string { return u(t.BulkFlows) })
	row("  un_flows", func(t *TinStats) string { return u(t.UnresponsiveFlows) })
	row("  max_len ", func(t *TinStats) string { return u(t.MaxSkbLen) })
	row("  quantum ", func(t *TinStats) string { return u(t.FlowQuantum) })
	return strings.TrimSuffix(b.String(), "\n")
}
