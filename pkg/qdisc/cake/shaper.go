package cake

// The shaper: each packet's charge (overhead compensation), the
// deficit-mode clocks it advances, autorate-ingress's estimate, and
// qdisc.Shaper's NextEvent and Activated.

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// overhead is cake_overhead: what the shaper is charged for a packet of
// size bytes (Linux's qdisc_pkt_len) whose link header is off bytes: each
// of a GSO packet's segments charged as its own packet.
func (s *Sched) overhead(pkt *stack.PacketBuffer, size uint32) uint32 {
	off := uint32(len(pkt.LinkHeader().Slice()))
	s.avgNetoff = ewma(s.avgNetoff, uint64(off)<<16, 8)
	segs := uint32(gso.Segments(pkt))
	if segs <= 1 {
		return s.calcOverhead(size, off)
	}
	hdr := uint32(max(pkt.Size()-pkt.Data().Size(), 0))
	seg := uint32(pkt.GSOOptions.MSS) + hdr
	if uint64(seg)*uint64(segs-1) >= uint64(size) {
		return s.calcOverhead(size, off) // not the packet WireSize sized
	}
	last := size - seg*(segs-1)
	return s.calcOverhead(seg, off)*(segs-1) + s.calcOverhead(last, off)
}

// calcOverhead is cake_calc_overhead: WireLen, with the lengths seen
// recorded for the statistics.
func (s *Sched) calcOverhead(length, off uint32) uint32 {
	net := length
	if !s.cfg.Raw {
		net = uint32(max(int64(length)-int64(off), 0))
	}
	s.maxNetlen = max(s.maxNetlen, net)
	s.minNetlen = min(s.minNetlen, net)
	adj := uint32(min(WireLen(s.cfg, length, off), 1<<32-1))
	s.maxAdjlen = max(s.maxAdjlen, adj)
	s.minAdjlen = min(s.minAdjlen, adj)
	return adj
}

// ewma is cake_ewma: avg moved 1/2^shift of the way to sample.
func ewma(avg, sample uint64, shift uint) uint64 {
	avg -= avg >> shift
	avg += sample >> shift
	return avg
}

// estimate is autorate-ingress's capacity estimate (in cake_enqueue): the
// peak rate packets arrive at, which becomes the shaper's rate (15/16 of
// it) at most every 250ms.
func (s *Sched) estimate(now int64) {
	interval := uint64(max(now-s.lastPacketTime, 0))
	interval = min(interval, 1e9)
	shift := uint(8)
	if interval > s.avgPacketInterval {
		shift = 2
	}
	s.avgPacketInterval = ewma(s.avgPacketInterval, interval, shift)
	s.lastPacketTime = now
	if interval <= s.avgPacketInterval {
		return
	}
	window := uint64(max(now-s.avgWindowBegin, 0))
	var bw uint64
	if window != 0 {
		bw = s.avgWindowBytes * 1e9 / window
	}
	shift = 8
	if bw > s.avgPeakBandwidth {
		shift = 2
	}
	s.avgPeakBandwidth = ewma(s.avgPeakBandwidth, bw, shift)
	s.avgWindowBytes = 0
	s.avgWindowBegin = now
	if now > s.lastReconfig+250e6 {
		s.rateBps = s.avgPeakBandwidth * 15 >> 4
		s.reconfigure()
		// Linux leaves last_reconfig_time at cake_init's.
	}
}

// advanceShaper is cake_advance_shaper: it charges a packet of adj bytes
// to tin b's clock and the global one (and, for a packet sent, the
// failsafe clock, at 1.5 times the rate).
func (s *Sched) advanceShaper(b *tin, adj uint32, now int64, drop bool) {
	if s.rateNS == 0 {
		return
	}
	tinDur := int64(uint64(adj) * b.rateNS >> b.rateShift)
	globalDur := int64(uint64(adj) * s.rateNS >> s.rateShift)
	failsafeDur := globalDur + globalDur>>1
	if b.timeNext < now {
		b.timeNext += tinDur
	} else if b.timeNext < now+tinDur {
		b.timeNext = now + tinDur
	}
	s.timeNext += globalDur
	if !drop {
		s.failsafeNext += failsafeDur
	}
}

// NextEvent implements qdisc.Shaper.NextEvent: the time Linux arms its
// watchdog for, when the shaper is ahead.
func (s *Sched) NextEvent() int64 { return min(s.timeNext, s.failsafeNext) }

// Activated implements qdisc.Shaper.Activated: a packet queued into an
// empty cake may leave at once (or when the shaper, idle, comes due).
func (s *Sched) Activated() bool { return s.activated }
