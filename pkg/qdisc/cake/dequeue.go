package cake

// Dequeue (cake_dequeue): the tins by priority or DRR, a tin's flows
// by DRR++ under COBALT with their quanta, and Peek.

import "gvisor.dev/gvisor/pkg/tcpip/stack"

// quantumDiv[n] is 65535/n (n >= 1): a flow's quantum shared by n bulk
// flows of its host, in 1/65536ths.
var quantumDiv = func() (d [queues + 1]uint16) {
	d[0] = 65535
	for i := 1; i <= queues; i++ {
		d[i] = uint16(65535 / i)
	}
	return d
}()

// flowQuantum is cake_get_flow_quantum: the tin's flow quantum shared by
// the bulk flows of the flow's busiest host (in the dual and triple
// modes), dithered.
func (s *Sched) flowQuantum(b *tin, f *flow) int32 {
	load := uint16(1)
	if dualSrc(s.cfg.Isolation) {
		load = max(load, b.hosts[f.srchost].srcBulk)
	}
	if dualDst(s.cfg.Isolation) {
		load = max(load, b.hosts[f.dsthost].dstBulk)
	}
	return int32((uint32(b.flowQuantum)*uint32(quantumDiv[load]) + uint32(uint16(s.random32()))) >> 16)
}

// dequeueOne is cake_dequeue_one: the head of the current flow.
func (s *Sched) dequeueOne() (int32, bool) {
	b := &s.tins[s.curTin]
	f := &b.flows[s.curFlow]
	i := s.pop(f)
	if i == none {
		return none, false
	}
	e := &s.pool.e[i]
	b.backlogs[s.curFlow] -= e.size
	b.backlog -= e.size
	s.backlog -= uint64(e.size)
	s.bufferUsed -= uint64(e.mem)
	s.qlen--
	if s.overflowTimeout != 0 {
		s.heapify(b.overflowIdx[s.curFlow])
	}
	return i, true
}

// Dequeue implements qdisc.Queue.Dequeue: cake_dequeue at now. It hands
// over nothing while the shaper is ahead of now (NextEvent says until
// when), and drops what COBALT drops on the way.
func (s *Sched) Dequeue(now int64) (*stack.PacketBuffer, uint32, bool) {
	if s.hasPeeked {
		s.hasPeeked = false
		e := s.pool.e[s.peeked]
		s.pool.release(s.peeked)
		s.peeked = none
		s.qlen--
		s.backlog -= uint64(e.size)
		return e.pkt, e.size, true
	}
	i, ok := s.dequeue(now)
	if !ok {
		return nil, 0, false
	}
	e := s.pool.e[i]
	s.pool.release(i)
	return e.pkt, e.size, true
}

// dequeue is cake_dequeue, returning the entry (still allocated).
func (s *Sched) dequeue(now int64) (int32, bool) {
	firstFlow := true
	for {
		// begin:
		if s.qlen == 0 {
			return none, false
		}
		if s.timeNext > now && s.failsafeNext > now {
			s.overlimits++
			return none, false
		}
		var b *tin
		if s.rateNS == 0 {
			// Unlimited: balance the tins by DRR.
			wrapped, empty := false, true
			b = &s.tins[s.curTin]
			for b.deficit < 0 || b.sparse+b.bulk == 0 {
				if b.deficit <= 0 {
					b.deficit += int32(b.quantum)
				}
				if b.sparse+b.bulk != 0 {
					empty = false
				}
				s.curTin++
				if s.curTin >= s.tinCnt {
					s.curTin = 0
					if wrapped {
						if empty {
							return none, false
						}
					} else {
						wrapped = true
					}
				}
				b = &s.tins[s.curTin]
			}
		} else {
			// Shaped: the highest-priority tin that is due, or else
			// the one due first.
			best, bestTin := int64(1<<63-1), 0
			for t := range s.tinCnt {
				tb := &s.tins[t]
				if tb.sparse+tb.bulk > 0 {
					d := tb.timeNext - now
					if d <= 0 || d <= best {
						best, bestTin = d, t
					}
				}
			}
			s.curTin = bestTin
			b = &s.tins[bestTin]
			if b.sparse+b.bulk == 0 {
				return none, false
			}
		}
		i, ok, again := s.serveTin(b, now, &firstFlow)
		if again {
			continue
		}
		return i, ok
	}
}

// serveTin serves tin b by DRR++ (the rest of cake_dequeue, from retry):
// it returns the packet sent, or again to start over (a flow turned out
// empty).
func (s *Sched) serveTin(b *tin, now int64, firstFlow *bool) (int32, bool, bool) {
	for {
		// retry:
		l := listDecaying
		if !*firstFlow || b.lists[listDecaying].head == none {
			l = listNew
			if b.lists[listNew].head == none {
				l = listOld
				if b.lists[listOld].head == none {
					l = listDecaying
					if b.lists[listDecaying].head == none {
						return none, false, true
					}
				}
			}
		}
		fi := int(b.lists[l].head)
		f := &b.flows[fi]
		s.curFlow = fi
		*firstFlow = false

		if f.deficit <= 0 {
			if f.set == setSparse {
				if f.head != none {
					b.sparse--
					b.bulk++
					s.incBulk(b, f)
					f.set = setBulk
				} else {
					f.set = setSparseWait
				}
			}
			f.deficit += s.flowQuantum(b, f)
			b.move(listOld, fi)
			continue
		}

		for {
			i, ok := s.dequeueOne()
			if !ok {
				if f.cv.queueEmpty(&b.cp, now) {
					b.unresponsive--
				}
				if f.cv.pDrop != 0 || f.cv.count != 0 || now < f.cv.dropNext {
					b.move(listDecaying, fi)
					switch f.set {
					case setBulk:
						b.bulk--
						s.decBulk(b, f)
						b.decaying++
					case setSparse, setSparseWait:
						b.sparse--
						b.decaying++
					}
					f.set = setDecaying
				} else {
					b.remove(fi)
					switch f.set {
					case setSparse, setSparseWait:
						b.sparse--
					case setBulk:
						b.bulk--
						s.decBulk(b, f)
					default:
						b.decaying--
					}
					f.set = setNone
				}
				return none, false, true
			}
			e := &s.pool.e[i]
			bulk := uint32(0)
			if s.cfg.Ingress {
				bulk = uint32(b.bulk)
			}
			if !f.cv.shouldDrop(&b.cp, now, e.enq, bulk, e.pkt, &s.rnd) || f.head == none {
				b.ecnMark += boolInt(f.cv.ecnMarked)
				delay := uint64(max(now-e.enq, 0))
				b.avgDelay = ewma(b.avgDelay, delay, 8)
				b.peakDelay = ewma(b.peakDelay, delay, ewmaShift(delay > b.peakDelay))
				b.baseDelay = ewma(b.baseDelay, delay, ewmaShift(delay < b.baseDelay))
				s.advanceShaper(b, e.adj, now, false)
				f.deficit -= int32(e.adj)
				b.deficit -= int32(e.adj)
				if s.overflowTimeout != 0 {
					s.overflowTimeout--
				}
				return i, true, false
			}
			// COBALT drops it; take another.
			if s.cfg.Ingress {
				s.advanceShaper(b, e.adj, now, true)
				f.deficit -= int32(e.adj)
				b.deficit -= int32(e.adj)
			}
			f.dropped++
			b.dropped++
			s.drops++
			e.pkt.DecRef()
			s.pool.release(i)
			if s.cfg.Ingress {
				break // retry: the flow's deficit changed
			}
		}
	}
}

func boolInt(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// ewmaShift is the delay averages' weight: fast (1/4) towards the
// extreme they track, slow (1/256) away from it.
func ewmaShift(fast bool) uint {
	if fast {
		return 2
	}
	return 8
}

// Peek implements qdisc.Queue.Peek: cake decides at now which packet
// leaves next (COBALT may drop others on the way) and keeps it, counted,
// for the next Dequeue.
func (s *Sched) Peek(now int64, sizes []uint32, arrived []int64) int {
	if len(sizes) == 0 {
		return 0
	}
	if !s.hasPeeked {
		i, ok := s.dequeue(now)
		if !ok {
			return 0
		}
		s.peeked, s.hasPeeked = i, true
		s.qlen++
		s.backlog += uint64(s.pool.e[i].size)
	}
	e := &s.pool.e[s.peeked]
	sizes[0], arrived[0] = e.size, e.enq
	return 1
}
