package fqcodel_test

// linuxFQCoDel is a model of Linux's fq_codel, written in the test from
// sch_fq_codel.c (fq_codel_enqueue, fq_codel_drop, fq_codel_dequeue) and
// include/net/codel_impl.h (codel_should_drop, codel_dequeue, the Newton
// step and the control law), with codel_time_t's 1024-ns units and wrap.
// Packets are (seq, size, flow index); none is ECN-capable.
type linuxFQCoDel struct {
	limit, quantum, dropBatch, memLimit uint32
	target, interval, mtu               uint32

	flows    []mflow
	newFlows []int
	oldFlows []int
	backlogs []uint32

	qlen, backlog, memory uint32
	peeked                *mpkt

	maxpacket, dropOverlimit, newFlowCount, codelDrops uint32
}

type mpkt struct {
	seq        uint64
	size, mem  uint32
	enqueuedAt uint32
}

type mflow struct {
	q                            []mpkt
	deficit                      int32
	inList                       bool
	count, lastcount             uint32
	dropping                     bool
	recInvSqrt                   uint16
	firstAbove, dropNext, ldelay uint32
}

func newLinuxFQCoDel(flows, limit, quantum, dropBatch, memLimit, mtu uint32, targetNS, intervalNS int64) *linuxFQCoDel {
	return &linuxFQCoDel{
		limit: limit, quantum: quantum, dropBatch: dropBatch, memLimit: memLimit,
		target: uint32(targetNS >> 10), interval: uint32(intervalNS >> 10), mtu: mtu,
		flows: make([]mflow, flows), backlogs: make([]uint32, flows),
	}
}

func ctime(ns int64) uint32 { return uint32(uint64(ns) >> 10) }

func removeIdx(l []int, idx int) []int {
	for i, v := range l {
		if v == idx {
			return append(l[:i:i], l[i+1:]...)
		}
	}
	panic("not in list")
}

// enqueue is fq_codel_enqueue; it returns the packets it dropped.
func (m *linuxFQCoDel) enqueue(p mpkt, hash uint32, now int64) []mpkt {
	idx := int((uint64(hash) * uint64(len(m.flows))) >> 32)
	p.enqueuedAt = ctime(now)
	f := &m.flows[idx]
	f.q = append(f.q, p)
	m.backlogs[idx] += p.size
	m.backlog += p.size
	if !f.inList {
		m.newFlows = append(m.newFlows, idx)
		f.inList = true
		m.newFlowCount++
		f.deficit = int32(m.quantum)
	}
	m.memory += p.mem
	m.qlen++
	if m.qlen <= m.limit && m.memory <= m.memLimit {
		return nil
	}
	// fq_codel_drop
	maxb, fat := uint32(0), 0
	for i, b := range m.backlogs {
		if b > maxb {
			maxb, fat = b, i
		}
	}
	threshold := maxb >> 1
	ff := &m.flows[fat]
	var dropped []mpkt
	var length uint32
	for {
		d := ff.q[0]
		ff.q = ff.q[1:]
		length += d.size
		m.memory -= d.mem
		dropped = append(dropped, d)
		if uint32(len(dropped)) >= m.dropBatch || length >= threshold {
			break
		}
	}
	ff.count += uint32(len(dropped))
	m.backlogs[fat] -= length
	m.backlog -= length
	m.qlen -= uint32(len(dropped))
	m.dropOverlimit += uint32(len(dropped))
	return dropped
}

func (m *linuxFQCoDel) newton(f *mflow) {
	invsqrt := uint32(f.recInvSqrt) << 16
	invsqrt2 := uint32((uint64(invsqrt) * uint64(invsqrt)) >> 32)
	val := (uint64(3) << 32) - uint64(f.count)*uint64(invsqrt2)
	val >>= 2
	val = (val * uint64(invsqrt)) >> 31
	f.recInvSqrt = uint16(val >> 16)
}

func (m *linuxFQCoDel) controlLaw(t uint32, f *mflow) uint32 {
	return t + uint32((uint64(m.interval)*uint64(uint32(f.recInvSqrt)<<16))>>32)
}

// flowDequeue is fq_codel's dequeue_func.
func (m *linuxFQCoDel) flowDequeue(idx int) *mpkt {
	f := &m.flows[idx]
	if len(f.q) == 0 {
		return nil
	}
	p := f.q[0]
	f.q = f.q[1:]
	m.backlogs[idx] -= p.size
	m.memory -= p.mem
	m.qlen--
	m.backlog -= p.size
	return &p
}

func (m *linuxFQCoDel) shouldDrop(p *mpkt, f *mflow, now uint32) bool {
	if p == nil {
		f.firstAbove = 0
		return false
	}
	f.ldelay = now - p.enqueuedAt
	if p.size > m.maxpacket {
		m.maxpacket = p.size
	}
	if int32(f.ldelay-m.target) < 0 || m.backlog <= m.mtu {
		f.firstAbove = 0
		return false
	}
	if f.firstAbove == 0 {
		f.firstAbove = now + m.interval
		return false
	}
	return int32(now-f.firstAbove) > 0
}

// codelDequeue is codel_dequeue on flow idx, with ECN never applicable.
func (m *linuxFQCoDel) codelDequeue(idx int, now uint32, dropped *[]mpkt) *mpkt {
	f := &m.flows[idx]
	p := m.flowDequeue(idx)
	if p == nil {
		f.dropping = false
		return nil
	}
	drop := m.shouldDrop(p, f, now)
	if f.dropping {
		if !drop {
			f.dropping = false
		} else if int32(now-f.dropNext) >= 0 {
			for f.dropping && int32(now-f.dropNext) >= 0 {
				f.count++
				m.newton(f)
				*dropped = append(*dropped, *p)
				m.codelDrops++
				p = m.flowDequeue(idx)
				if !m.shouldDrop(p, f, now) {
					f.dropping = false
				} else {
					f.dropNext = m.controlLaw(f.dropNext, f)
				}
			}
		}
	} else if drop {
		*dropped = append(*dropped, *p)
		m.codelDrops++
		p = m.flowDequeue(idx)
		m.shouldDrop(p, f, now)
		f.dropping = true
		delta := f.count - f.lastcount
		if delta > 1 && int32(now-f.dropNext-16*m.interval) < 0 {
			f.count = delta
			m.newton(f)
		} else {
			f.count = 1
			f.recInvSqrt = 0xffff
		}
		f.lastcount = f.count
		f.dropNext = m.controlLaw(now, f)
	}
	return p
}

// dequeue is fq_codel_dequeue at now; it returns the packet (nil when
// empty) and the packets CoDel dropped on the way.
func (m *linuxFQCoDel) dequeue(now int64) (*mpkt, []mpkt) {
	if m.peeked != nil {
		p := m.peeked
		m.peeked = nil
		m.qlen--
		m.backlog -= p.size
		return p, nil
	}
	var dropped []mpkt
	for {
		onNew := len(m.newFlows) > 0
		var idx int
		switch {
		case onNew:
			idx = m.newFlows[0]
		case len(m.oldFlows) > 0:
			idx = m.oldFlows[0]
		default:
			return nil, dropped
		}
		f := &m.flows[idx]
		if f.deficit <= 0 {
			f.deficit += int32(m.quantum)
			if onNew {
				m.newFlows = removeIdx(m.newFlows, idx)
			} else {
				m.oldFlows = removeIdx(m.oldFlows, idx)
			}
			m.oldFlows = append(m.oldFlows, idx)
			continue
		}
		p := m.codelDequeue(idx, ctime(now), &dropped)
		if p == nil {
			if onNew {
				m.newFlows = removeIdx(m.newFlows, idx)
				if len(m.oldFlows) > 0 {
					m.oldFlows = append(m.oldFlows, idx)
					continue
				}
			} else {
				m.oldFlows = removeIdx(m.oldFlows, idx)
			}
			f.inList = false
			continue
		}
		f.deficit -= int32(p.size)
		return p, dropped
	}
}

// peek is qdisc_peek_dequeued: the head, dequeued at now and kept
// counted in qlen and backlog.
func (m *linuxFQCoDel) peek(now int64) (*mpkt, []mpkt) {
	if m.peeked != nil {
		return m.peeked, nil
	}
	p, dropped := m.dequeue(now)
	if p != nil {
		m.peeked = p
		m.qlen++
		m.backlog += p.size
	}
	return p, dropped
}
