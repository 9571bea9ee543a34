package caketest

import "encoding/binary"

// ewma is cake_ewma: avg moves 1/2^shift of the way to sample.
func ewma(avg, sample uint64, shift uint) uint64 {
	avg -= avg >> shift
	avg += sample >> shift
	return avg
}

// calcOverhead is cake_calc_overhead: the length the shaper charges for
// len bytes of which off are the link header. With the overhead flag the
// link header is replaced by Overhead; without it Overhead is added to
// the whole. Then the MPU floor, then ATM cells (48 bytes of payload in
// 53) or PTM's one byte in 64 (or part of 64). It tracks the network and
// adjusted length extremes tc -s prints (u16 in Linux, and here).
func (m *Model) calcOverhead(length, off uint32) uint32 {
	if m.p.OverheadFlag {
		length -= off
	}
	if uint32(m.maxNetlen) < length {
		m.maxNetlen = uint16(length)
	}
	if uint32(m.minNetlen) > length {
		m.minNetlen = uint16(length)
	}
	length = uint32(max(int32(length)+int32(m.p.Overhead), int32(m.p.MPU)))
	switch m.p.ATM {
	case ATMATM:
		length += 47
		length /= 48
		length *= 53
	case ATMPTM:
		length += (length + 63) / 64
	}
	if uint32(m.maxAdjlen) < length {
		m.maxAdjlen = uint16(length)
	}
	if uint32(m.minAdjlen) > length {
		m.minAdjlen = uint16(length)
	}
	return length
}

// overhead is cake_overhead: calcOverhead for a plain packet; for a GSO
// packet (not split) each segment's length: gso_size plus the headers up
// to the end of the TCP (or UDP) header, the last segment the rest, each
// adjusted on its own.
func (m *Model) overhead(p *Packet) uint32 {
	off := uint32(p.MacLen)
	length := p.pktLen()
	m.avgNetoff = uint32(ewma(uint64(m.avgNetoff), uint64(off)<<16, 8))
	if !p.isGSO() {
		return m.calcOverhead(length, off)
	}
	hdrLen := uint32(p.MacLen)
	if thoff, proto, ok := p.transportOffset(); ok {
		hdrLen += uint32(thoff)
		if proto == ipprotoTCP {
			if th := p.at(thoff, 20); th != nil {
				hdrLen += uint32(th[12]>>4) * 4
			}
		} else if p.at(thoff, 8) != nil {
			hdrLen += 8
		}
	}
	segs := uint32(uint16(p.GSOSegs))
	length = p.GSOSize + hdrLen
	lastLen := p.skbLen() - p.GSOSize*(segs-1)
	return m.calcOverhead(length, off)*(segs-1) + m.calcOverhead(lastLen, off)
}

// advanceShaper is cake_advance_shaper: charge the packet's adjusted
// length to the tin's clock (from now if the tin was idle, never less
// than now+its time) and to the global clock, and, unless the packet was
// dropped, to the failsafe clock at 1.5 times the global rate.
func (m *Model) advanceShaper(b *tin, e *entry, now int64, drop bool) uint32 {
	length := e.adjustedLen
	if m.rateNS != 0 {
		tinDur := (uint64(length) * b.rateNS) >> b.rateShft
		globalDur := (uint64(length) * m.rateNS) >> m.rateShft
		failsafeDur := globalDur + globalDur>>1
		if b.timeNextPacket < now {
			b.timeNextPacket += int64(tinDur)
		} else if b.timeNextPacket < now+int64(tinDur) {
			b.timeNextPacket = now + int64(tinDur)
		}
		m.timeNextPacket += int64(globalDur)
		if !drop {
			m.failsafeNextPacket += int64(failsafeDur)
		}
	}
	return length
}

// ---- the overflow heap ----

func (m *Model) heapSwap(i, j uint16) {
	ii, jj := m.overflowHeap[i], m.overflowHeap[j]
	m.overflowHeap[i], m.overflowHeap[j] = jj, ii
	m.tins[ii.t].overflowIdx[ii.b] = j
	m.tins[jj.t].overflowIdx[jj.b] = i
}

func (m *Model) heapBacklog(i uint32) uint32 {
	e := m.overflowHeap[i]
	return m.tins[e.t].backlogs[e.b]
}

// heapify is cake_heapify: sift entry i down the max-heap of backlogs.
// Linux keeps comparing with mb, the backlog that moved up; with
// Params.TrueHeap mb is the backlog sifted down (see TrueHeap).
func (m *Model) heapify(i uint16) {
	const a = heapSize
	mb := m.heapBacklog(uint32(i))
	mi := uint32(i)
	for mi < a {
		l := mi + mi + 1
		r := l + 1
		if l < a {
			if lb := m.heapBacklog(l); lb > mb {
				mi, mb = l, lb
			}
		}
		if r < a {
			if rb := m.heapBacklog(r); rb > mb {
				mi, mb = r, rb
			}
		}
		if mi != uint32(i) {
			m.heapSwap(i, uint16(mi))
			i = uint16(mi)
			if m.p.TrueHeap {
				mb = m.heapBacklog(mi)
			}
		} else {
			break
		}
	}
}

// heapifyUp is cake_heapify_up: sift entry i up.
func (m *Model) heapifyUp(i uint16) {
	for i > 0 && uint32(i) < heapSize {
		p := (i - 1) >> 1
		if m.heapBacklog(uint32(i)) > m.heapBacklog(uint32(p)) {
			m.heapSwap(i, p)
			i = p
		} else {
			break
		}
	}
}

// drop is cake_drop: drop the head of the queue with the largest backlog
// (the heap is rebuilt first when overflow_timeout has run out), feed
// BLUE that flow's overflow, and return the tin and queue.
func (m *Model) drop(now int64, ev *[]Event) (int, int) {
	if m.overflowTimeout == 0 {
		for i := heapSize/2 - 1; i >= 0; i-- {
			m.heapify(uint16(i))
		}
	}
	m.overflowTimeout = 65535

	top := m.overflowHeap[0]
	t, idx := int(top.t), int(top.b)
	b := m.tins[t]
	f := &b.flows[idx]
	if len(f.queue) == 0 {
		// The heap has gone wrong: rebuild it next time.
		m.overflowTimeout = 0
		return t, idx
	}
	e := f.queue[0]
	f.queue = f.queue[1:]

	if f.cvars.queueFull(&b.cparams, now) {
		b.unresponsiveFlowCount++
	}
	m.bufferUsed -= e.trueSize
	b.backlogs[idx] -= e.pktLen
	b.tinBacklog -= e.pktLen
	m.backlog -= e.pktLen

	f.dropped++
	b.tinDropped++
	m.drops++

	if m.p.Ingress {
		m.advanceShaper(b, &e, now, true)
	}
	m.qlen--
	m.heapify(0)
	*ev = append(*ev, Event{Kind: DropOverlimit, At: now, ID: e.pkt.ID, Seg: e.pkt.Seg, Tin: t, Queue: idx, Len: e.pktLen})
	return t, idx
}

// dequeueOne is cake_dequeue_one: the head of the current flow.
func (m *Model) dequeueOne() (entry, bool) {
	b := m.tins[m.curTin]
	f := &b.flows[m.curFlow]
	if len(f.queue) == 0 {
		return entry{}, false
	}
	e := f.queue[0]
	f.queue = f.queue[1:]
	b.backlogs[m.curFlow] -= e.pktLen
	b.tinBacklog -= e.pktLen
	m.backlog -= e.pktLen
	m.bufferUsed -= e.trueSize
	m.qlen--
	if m.overflowTimeout != 0 {
		m.heapify(b.overflowIdx[m.curFlow])
	}
	return e, true
}

// clearTin is cake_clear_tin: drop what tin t holds. Like Linux it leaves
// cur_tin at t and cur_flow past the last queue.
func (m *Model) clearTin(t int) {
	m.curTin = t
	for m.curFlow = 0; m.curFlow < numQueues; m.curFlow++ {
		for {
			if _, ok := m.dequeueOne(); !ok {
				break
			}
		}
	}
}

// splitGSO is skb_gso_segment as split-gso uses it, by lengths: a TCP or
// UDP GSO packet becomes ceil(payload/GSOSize) segments, each with the
// packet's headers (network and transport) and GSOSize bytes of payload,
// the last with the rest. A segment's IPv4 total length, ID (the
// packet's plus the segment's index) and header checksum, or IPv6
// payload length, are rewritten; the transport header is copied as is
// (no decision of cake's reads it again). ok is false where Linux's
// segmentation fails: not TCP or UDP, headers not there, or no more
// payload than one segment.
func splitGSO(p *Packet) ([]Packet, bool) {
	thoff, proto, ok := p.transportOffset()
	if !ok {
		return nil, false
	}
	var hdr int
	switch proto {
	case ipprotoTCP:
		th := p.at(thoff, 20)
		if th == nil || th[12]>>4 < 5 {
			return nil, false
		}
		hdr = thoff + int(th[12]>>4)*4
	case ipprotoUDP:
		hdr = thoff + 8
	default:
		return nil, false
	}
	if p.at(0, hdr) == nil {
		return nil, false
	}
	payload := len(p.Data) - hdr
	mss := int(p.GSOSize)
	if payload <= mss {
		return nil, false
	}
	var segs []Packet
	for i, off := 0, hdr; off < len(p.Data); i, off = i+1, off+mss {
		end := min(off+mss, len(p.Data))
		d := make([]byte, 0, hdr+end-off)
		d = append(d, p.Data[:hdr]...)
		d = append(d, p.Data[off:end]...)
		if d[0]>>4 == 4 {
			binary.BigEndian.PutUint16(d[2:4], uint16(len(d)))
			id := binary.BigEndian.Uint16(d[4:6])
			binary.BigEndian.PutUint16(d[4:6], id+uint16(i))
			ihl := int(d[0]&0xf) * 4
			binary.BigEndian.PutUint16(d[10:12], 0)
			binary.BigEndian.PutUint16(d[10:12], ipChecksum(d[:ihl]))
		} else {
			binary.BigEndian.PutUint16(d[4:6], uint16(len(d)-40))
		}
		segs = append(segs, Packet{
			ID: p.ID, Seg: uint32(i), Proto: p.Proto, Data: d, MacLen: p.MacLen,
		})
	}
	return segs, true
}

// ipChecksum is the IPv4 header checksum of h (its checksum field 0).
func ipChecksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
