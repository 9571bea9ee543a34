package cake

// Enqueue (cake_enqueue): a packet's tin, split-gso, the ACK filter,
// the flow's set, and the memory limit.

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// selectTin is cake_select_tin: the tin by DSCP (besteffort: tin 0), nh
// pkt's network header if the send path parsed it. The netstack has no
// firewall mark or skb priority to override it.
func (s *Sched) selectTin(pkt *stack.PacketBuffer, nh []byte) int {
	var d uint8
	if s.cfg.Wash {
		d = dscp(pkt, nh, true)
	}
	if s.cfg.Diffserv == BestEffort {
		return 0
	}
	if !s.cfg.Wash {
		d = dscp(pkt, nh, false)
	}
	t := int(s.tinIndex[d&63])
	if t >= s.tinCnt {
		t = 0
	}
	return t
}

// Enqueue implements qdisc.Queue.Enqueue: cake_enqueue at now. It takes
// every packet but a GSO packet split-gso cannot cut (false: a drop,
// nothing taken), and makes room past the memory limit by dropping from
// the head of the fattest flow of any tin.
func (s *Sched) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	if s.tables == nil {
		s.allocTables()
	}
	nh := pkt.NetworkHeader().Slice()
	ti := s.selectTin(pkt, nh)
	b := &s.tins[ti]
	idx := s.hash(b, pkt, nh)
	f := &b.flows[idx]

	// Keep the shaper's state from going stale while idle.
	if b.backlog == 0 {
		if b.timeNext < now {
			b.timeNext = now
		}
		if s.qlen == 0 {
			if s.timeNext < now {
				s.failsafeNext, s.timeNext = now, now
			} else if s.timeNext > now && s.failsafeNext > now {
				s.overlimits++
			}
		}
	}
	s.activated = s.qlen == 0
	b.maxSkblen = max(b.maxSkblen, size)

	if s.cfg.SplitGSO && gso.Segments(pkt) > 1 {
		hdr := uint64(max(pkt.Size()-pkt.Data().Size(), 0))
		pieces, err := gso.Split(pkt, hdr+uint64(pkt.GSOOptions.MSS))
		if err != nil {
			s.drops++
			return false
		}
		pkt.DecRef()
		var slen uint64
		for _, p := range pieces {
			psize := uint32(min(gso.WireSize(p), 1<<32-1))
			i := s.pool.alloc()
			s.pool.e[i] = entry{pkt: p, next: none, size: psize, mem: uint32(p.MemSize()), enq: now}
			s.pool.e[i].adj = s.overhead(p, psize)
			s.push(f, i)
			s.qlen++
			slen += uint64(psize)
			s.bufferUsed += uint64(s.pool.e[i].mem)
			b.packets++
		}
		b.bytes += slen
		b.backlogs[idx] += uint32(slen)
		b.backlog += uint32(slen)
		s.backlog += slen
		s.avgWindowBytes += slen
	} else {
		i := s.pool.alloc()
		s.pool.e[i] = entry{pkt: pkt, next: none, size: size, mem: uint32(pkt.MemSize()), enq: now}
		s.pool.e[i].adj = s.overhead(pkt, size)
		s.push(f, i)
		ack := int32(none)
		if s.cfg.AckFilter != NoAckFilter {
			ack = s.ackFilter(f)
		}
		var ackLen uint32
		if ack != none {
			a := s.pool.e[ack]
			b.ackDrop++
			s.drops++
			ackLen = a.size
			b.bytes += uint64(ackLen)
			s.bufferUsed = s.bufferUsed + uint64(s.pool.e[i].mem) - uint64(a.mem)
			if s.cfg.Ingress {
				s.advanceShaper(b, a.adj, now, true)
			}
			a.pkt.DecRef()
			s.pool.release(ack)
		} else {
			s.qlen++
			s.bufferUsed += uint64(s.pool.e[i].mem)
		}
		b.packets++
		// What the ACK took out may be more than the packet brings:
		// the sums wrap, as Linux's, and come out right.
		d := size - ackLen
		d64 := uint64(int64(size) - int64(ackLen))
		b.bytes += d64
		b.backlogs[idx] += d
		b.backlog += d
		s.backlog += d64
		s.avgWindowBytes += d64
	}

	if s.overflowTimeout != 0 {
		s.heapifyUp(b.overflowIdx[idx])
	}

	if s.cfg.Autorate {
		s.estimate(now)
	} else {
		s.avgWindowBytes = 0
		s.lastPacketTime = now
	}

	switch f.set {
	case setNone, setDecaying:
		if f.set == setNone {
			b.pushTail(listNew, idx)
		} else {
			b.decaying--
			b.move(listNew, idx)
		}
		f.set = setSparse
		b.sparse++
		f.deficit = s.flowQuantum(b, f)
	case setSparseWait:
		f.set = setBulk
		b.sparse--
		b.bulk++
		s.incBulk(b, f)
	}

	s.bufferMaxUsed = max(s.bufferMaxUsed, s.bufferUsed)
	if s.bufferUsed <= s.bufferLimit {
		return true
	}
	before := s.qlen
	for s.bufferUsed > s.bufferLimit && s.qlen > 0 {
		s.drop(now)
	}
	b.dropOverlimit += uint32(before - s.qlen)
	return true
}
