package caketest

import (
	"fmt"
	"time"
)

// Enqueue is cake_enqueue of p at now. It returns the drops it caused:
// DropAckFilter for an older ACK the new one made redundant,
// DropOverlimit for each packet cake_drop took from the fattest queue to
// get back under the memory limit (possibly p itself, or its segments),
// DropGSO if p could not be split. The model keeps its own copy of p's
// bytes.
//
// A packet the kernel could not hold is Refused, with a reason naming
// the field to change: a negative MacLen, a length (Len or, when 0,
// MacLen+len(Data)) of 0, a GSO packet (GSOSize != 0) with GSOSegs 0 or
// above 65535.
func (m *Model) Enqueue(now int64, in Packet) []Event {
	now = m.tick(now)
	if reason := refuse(&in); reason != "" {
		return []Event{{Kind: Refused, At: now, ID: in.ID, Seg: in.Seg, Tin: -1, Queue: -1, Reason: reason}}
	}
	var ev []Event
	p := in.clone()
	length := p.pktLen()

	// cake_classify: the tin, then the queue.
	t := m.selectTin(&p)
	b := m.tins[t]
	idx := m.hash(b, &p)
	f := &b.flows[idx]

	// Make sure the shaper's state is not stale.
	if b.tinBacklog == 0 {
		if b.timeNextPacket < now {
			b.timeNextPacket = now
		}
		if m.qlen == 0 {
			if m.timeNextPacket < now {
				m.failsafeNextPacket = now
				m.timeNextPacket = now
			} else if m.timeNextPacket > now && m.failsafeNextPacket > now {
				m.overlimits++
				m.schedule(min(m.timeNextPacket, m.failsafeNextPacket))
			}
		}
	}

	if length > b.maxSkbLen {
		b.maxSkbLen = length
	}

	if p.isGSO() && m.p.SplitGSO {
		segs, ok := splitGSO(&p)
		if !ok {
			m.drops++
			return append(ev, Event{Kind: DropGSO, At: now, ID: p.ID, Seg: p.Seg, Tin: t, Queue: int(idx), Len: length})
		}
		var slen uint32
		for _, s := range segs {
			e := entry{pkt: s, enqueueTime: now, pktLen: s.skbLen(), trueSize: s.trueSize()}
			e.adjustedLen = m.overhead(&e.pkt)
			f.queue = append(f.queue, e)
			m.qlen++
			slen += e.pktLen
			m.bufferUsed += e.trueSize
			b.packets++
		}
		b.bytes += uint64(slen)
		b.backlogs[idx] += slen
		b.tinBacklog += slen
		m.backlog += slen
		m.avgWindowBytes += uint64(slen)
	} else {
		var ackLen uint32
		e := entry{pkt: p, enqueueTime: now, pktLen: length, trueSize: p.trueSize()}
		e.adjustedLen = m.overhead(&e.pkt)
		f.queue = append(f.queue, e)

		ack := -1
		if m.p.AckFilter != AckNone {
			ack = ackFilter(m.p.AckFilter, f)
		}
		if ack >= 0 {
			a := f.queue[ack]
			f.queue = append(f.queue[:ack:ack], f.queue[ack+1:]...)
			b.ackDrops++
			m.drops++
			ackLen = a.pktLen
			b.bytes += uint64(ackLen)
			m.bufferUsed += e.trueSize - a.trueSize
			if m.p.Ingress {
				m.advanceShaper(b, &a, now, true)
			}
			ev = append(ev, Event{Kind: DropAckFilter, At: now, ID: a.pkt.ID, Seg: a.pkt.Seg, Tin: t, Queue: int(idx), Len: ackLen})
		} else {
			m.qlen++
			m.bufferUsed += e.trueSize
		}
		b.packets++
		// len and ack_pkt_len are ints in Linux: their difference,
		// negative when the ACK dropped is the longer, is sign-extended
		// into the u64 counters (bytes, avg_window_bytes), and wraps in
		// the u32 ones, to the same sums.
		diff := int64(length) - int64(ackLen)
		b.bytes += uint64(diff)
		b.backlogs[idx] += length - ackLen
		b.tinBacklog += length - ackLen
		m.backlog += length - ackLen
		m.avgWindowBytes += uint64(diff)
	}

	if m.overflowTimeout != 0 {
		m.heapifyUp(b.overflowIdx[idx])
	}

	// The incoming capacity estimate (autorate-ingress).
	if m.p.AutorateIngress {
		interval := uint64(now - m.lastPacketTime)
		if interval > uint64(time.Second) {
			interval = uint64(time.Second)
		}
		shift := uint(8)
		if interval > m.avgPacketInterval {
			shift = 2
		}
		m.avgPacketInterval = ewma(m.avgPacketInterval, interval, shift)
		m.lastPacketTime = now
		if interval > m.avgPacketInterval {
			window := uint64(now - m.avgWindowBegin)
			rate := m.avgWindowBytes * uint64(time.Second)
			if window != 0 {
				rate /= window
			} else {
				rate = 0 // div64_u64 by 0: not reachable with a monotonic clock past 0
			}
			shift := uint(8)
			if rate > m.avgPeakBandwidth {
				shift = 2
			}
			m.avgPeakBandwidth = ewma(m.avgPeakBandwidth, rate, shift)
			m.avgWindowBytes = 0
			m.avgWindowBegin = now
			if now > m.lastReconfigTime+250*int64(time.Millisecond) {
				m.rateBps = (m.avgPeakBandwidth * 15) >> 4
				m.reconfigure()
			}
		}
	} else {
		m.avgWindowBytes = 0
		m.lastPacketTime = now
	}

	// The flowchain.
	switch f.set {
	case setNone, setDecaying:
		if f.set == setDecaying {
			b.decayingFlowCount--
		}
		b.listMoveTail(idx, onNew)
		f.set = setSparse
		b.sparseFlowCount++
		f.deficit = int32(m.flowQuantumFor(b, f))
	case setSparseWait:
		// Empty, counted sparse, but in the bulk rotation.
		f.set = setBulk
		b.sparseFlowCount--
		b.bulkFlowCount++
		b.incSrcBulk(f, m.p.FlowMode)
		b.incDstBulk(f, m.p.FlowMode)
	}

	if m.bufferUsed > m.bufferMaxUsed {
		m.bufferMaxUsed = m.bufferUsed
	}
	if m.bufferUsed <= m.bufferLimit {
		return ev
	}
	prevQlen := m.qlen
	for m.bufferUsed > m.bufferLimit {
		m.drop(now, &ev)
	}
	b.dropOverlimit += prevQlen - m.qlen
	return ev
}

// refuse says why the model cannot take p, "" if it can.
func refuse(p *Packet) string {
	switch {
	case p.MacLen < 0:
		return fmt.Sprintf("MacLen %d is negative: give the link header's length, 0 or more", p.MacLen)
	case p.pktLen() == 0:
		return "the packet's length is 0: give Len, or Data"
	case p.isGSO() && (p.GSOSegs == 0 || p.GSOSegs > 65535):
		return fmt.Sprintf("GSOSegs %d of a GSO packet (GSOSize %d) is not 1 to 65535: give the segment count", p.GSOSegs, p.GSOSize)
	}
	return ""
}
