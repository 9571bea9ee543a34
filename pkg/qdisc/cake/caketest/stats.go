package caketest

// TinStats are one tin's counters as cake_dump_stats reports them and
// tc -s qdisc show prints them.
type TinStats struct {
	// Tin is the tin's index (tc lists tins in dump order, not index
	// order: diffserv3 and diffserv4 put tin 1, the bulk tin, first).
	Tin int
	// ThreshRate is the tin's rate in bytes/s ("thresh").
	ThreshRate uint64
	// TargetUS and IntervalUS are COBALT's ("target", "interval").
	TargetUS, IntervalUS uint32
	// PeakDelayUS, AvgDelayUS, BaseDelayUS are the delay EWMAs ("pk_delay",
	// "av_delay", "sp_delay").
	PeakDelayUS, AvgDelayUS, BaseDelayUS uint32
	// BacklogBytes is the bytes queued ("backlog").
	BacklogBytes uint32
	// Packets and Bytes count what was enqueued ("pkts", "bytes"; a
	// dropped ACK's bytes count twice, as in Linux).
	Packets uint32
	Bytes   uint64
	// WayIndirectHits, WayMisses, WayCollisions are the set-associative
	// hash's ("way_inds", "way_miss", "way_cols").
	WayIndirectHits, WayMisses, WayCollisions uint32
	// SparseFlows (new and decaying), BulkFlows, UnresponsiveFlows
	// ("sp_flows", "bk_flows", "un_flows").
	SparseFlows, BulkFlows, UnresponsiveFlows uint32
	// MaxSkbLen is the longest packet ("max_len"); FlowQuantum the flow
	// quantum ("quantum").
	MaxSkbLen, FlowQuantum uint32
	// Drops, Marks, AckDrops ("drops", "marks", "ack_drop").
	Drops, Marks, AckDrops uint32
}

// Stats are cake's counters: the qdisc's and each tin's.
type Stats struct {
	// CapacityEstimate is avg_peak_bandwidth in bytes/s.
	CapacityEstimate uint64
	// MemoryLimit is buffer_limit; MemoryUsed is buffer_max_used (tc's
	// "memory used" is the high-water mark); MemoryNow is buffer_used.
	MemoryLimit, MemoryUsed, MemoryNow uint32
	// AvgNetOff, MinNetLen, MaxNetLen, MinAdjLen, MaxAdjLen are the
	// length statistics ("min/max network layer size", "min/max overhead-
	// adjusted size", "average network hdr offset").
	AvgNetOff                                  uint32
	MinNetLen, MaxNetLen, MinAdjLen, MaxAdjLen uint16
	// Bytes and Packets were sent; Drops counts every drop; Overlimits
	// the times the shaper held back; BacklogBytes and Packets are
	// queued now (sch->bstats, sch->qstats, sch->q.qlen).
	Bytes, Packets, Drops, Overlimits uint64
	BacklogBytes, BacklogPackets      uint32
	// Tins are in dump order.
	Tins []TinStats
}

// Stats returns the counters.
func (m *Model) Stats() Stats {
	s := Stats{
		CapacityEstimate: m.avgPeakBandwidth,
		MemoryLimit:      m.bufferLimit,
		MemoryUsed:       m.bufferMaxUsed,
		MemoryNow:        m.bufferUsed,
		AvgNetOff:        (m.avgNetoff + 0x8000) >> 16,
		MinNetLen:        m.minNetlen,
		MaxNetLen:        m.maxNetlen,
		MinAdjLen:        m.minAdjlen,
		MaxAdjLen:        m.maxAdjlen,
		Bytes:            m.bytes,
		Packets:          m.packets,
		Drops:            m.drops,
		Overlimits:       m.overlimits,
		BacklogBytes:     m.backlog,
		BacklogPackets:   m.qlen,
	}
	for i := 0; i < m.tinCnt; i++ {
		t := int(m.tinOrder[i])
		b := m.tins[t]
		s.Tins = append(s.Tins, TinStats{
			Tin:               t,
			ThreshRate:        b.rateBps,
			TargetUS:          uint32(b.cparams.target / 1000),
			IntervalUS:        uint32(b.cparams.interval / 1000),
			PeakDelayUS:       uint32(b.peakDelay / 1000),
			AvgDelayUS:        uint32(b.avgeDelay / 1000),
			BaseDelayUS:       uint32(b.baseDelay / 1000),
			BacklogBytes:      b.tinBacklog,
			Packets:           b.packets,
			Bytes:             b.bytes,
			WayIndirectHits:   b.wayHits,
			WayMisses:         b.wayMisses,
			WayCollisions:     b.wayCollisions,
			SparseFlows:       uint32(b.sparseFlowCount) + uint32(b.decayingFlowCount),
			BulkFlows:         uint32(b.bulkFlowCount),
			UnresponsiveFlows: uint32(b.unresponsiveFlowCount),
			MaxSkbLen:         b.maxSkbLen,
			FlowQuantum:       uint32(b.flowQuantum),
			Drops:             b.tinDropped,
			Marks:             b.tinECNMark,
			AckDrops:          b.ackDrops,
		})
	}
	return s
}

// RateNS returns the qdisc's shaper constants: ns per byte is
// rateNS/2^rateShift (cake_set_rate's rate_ns and rate_shft).
func (m *Model) RateNS() (rateNS uint64, rateShift uint16) { return m.rateNS, m.rateShft }

// Queued returns how many packets the model holds (sch->q.qlen).
func (m *Model) Queued() int { return int(m.qlen) }
