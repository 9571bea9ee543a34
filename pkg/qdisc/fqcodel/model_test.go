package fqcodel_test

import (
	"fmt"
	"math"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// linuxFQCoDel is a model of Linux's fq_codel, written in the test from
// sch_fq_codel.c (fq_codel_enqueue, fq_codel_drop, fq_codel_dequeue) and
// include/net/codel_impl.h (codel_should_drop, codel_dequeue, the Newton
// step and the control law), with codel_time_t's 1024-ns units and wrap.
// Packets are (seq, size, flow index, ECN-capable or not); with ecn, an
// ECN-capable packet CoDel would drop is marked CE and sent instead
// (INET_ECN_set_ce).
//
// Its CoDel takes Linux's Newton step in float64 real arithmetic, not in
// the package's fixed point: see newton, and package codel's
// model_test.go and law_test.go for why that is Linux's value and how far
// it is from interval/sqrt(count).
type linuxFQCoDel struct {
	limit, quantum, dropBatch, memLimit uint32
	target, interval, mtu               uint32
	ecn                                 bool

	flows    []mflow
	newFlows []int
	oldFlows []int
	backlogs []uint32

	qlen, backlog, memory uint32
	peeked                *mpkt

	maxpacket, dropOverlimit, newFlowCount, codelDrops, ecnMarks uint32
	// unsure says where a Newton step fell within Linux's fixed-point
	// truncation of a 16-bit boundary, so that the model's rec_inv_sqrt
	// may be one more than Linux's (see newton).
	unsure string
}

type mpkt struct {
	seq        uint64
	size, mem  uint32
	enqueuedAt uint32
	// ect: ECT(0), ECT(1) or CE; ce: marked CE by CoDel.
	ect, ce bool
}

type mflow struct {
	q                            []mpkt
	deficit                      int32
	inList                       bool
	count, lastcount             uint32
	dropping                     bool
	x                            float64 // rec_inv_sqrt: a multiple of 2^-16 below 1
	firstAbove, dropNext, ldelay uint32
}

// newLinuxFQCoDel returns the model configured as tc would configure
// Linux with cfg (0 fields: not given) on a device whose psched_mtu is
// mtu, with the kernel's defaults and clamps (linuxConfig), not the
// package's.
func newLinuxFQCoDel(cfg fqcodel.Config, mtu uint32) *linuxFQCoDel {
	c := linuxConfig(cfg, mtu)
	return &linuxFQCoDel{
		limit: c.Limit, quantum: c.Quantum, dropBatch: c.DropBatch, memLimit: c.MemoryLimit,
		target: uint32(c.Target >> 10), interval: uint32(c.Interval >> 10), mtu: mtu, ecn: !c.NoECN,
		flows: make([]mflow, c.Flows), backlogs: make([]uint32, c.Flows),
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

// newton is codel_Newton_step, x' = x/2 * (3 - count*x^2), in float64
// (exact: x has 16 significant bits) and truncated to 16 bits as Linux's
// u16 rec_inv_sqrt. Linux's fixed point truncates (3 - count*x^2)*2^30
// before multiplying by x, which makes its result one less only where the
// fraction of x'*2^16 is above 0 and below 1.5*x*2^-16; such a step is
// recorded in unsure.
//
// One case is no Newton step: fq_codel_drop adds the packets it dropped to
// a flow's count, so count*x^2 may pass 3, and Linux's u64 3<<32 -
// count*x^2 wraps. Its result is then what C's unsigned arithmetic makes
// of the kernel's expression, and the model computes that with the
// kernel's types (in this case only).
func (m *linuxFQCoDel) newton(f *mflow) {
	c := float64(f.count)
	if c*f.x*f.x >= 3 {
		rec := uint64(f.x * 65536)
		inv := rec << 16
		val := (uint64(3) << 32) - uint64(f.count)*(inv*inv>>32) // wraps
		f.x = float64(uint16((val>>2)*inv>>31>>16)) / 65536
		return
	}
	scaled := f.x * (3 - c*f.x*f.x) / 2 * 65536
	if fr := scaled - math.Floor(scaled); fr != 0 && fr < 1.5*f.x/65536 && m.unsure == "" {
		m.unsure = fmt.Sprintf("count %d, x %v: x'*65536 = %v", f.count, f.x, scaled)
	}
	f.x = math.Floor(scaled) / 65536
}

// controlLaw is codel_control_law: t + interval*rec_inv_sqrt, truncated.
func (m *linuxFQCoDel) controlLaw(t uint32, f *mflow) uint32 {
	return t + uint32(math.Floor(float64(m.interval)*f.x))
}

// markCE is INET_ECN_set_ce under cparams.ecn.
func (m *linuxFQCoDel) markCE(p *mpkt) bool {
	if !m.ecn || !p.ect {
		return false
	}
	p.ce = true
	m.ecnMarks++
	return true
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

// codelDequeue is codel_dequeue on flow idx.
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
				if m.markCE(p) {
					f.dropNext = m.controlLaw(f.dropNext, f)
					return p
				}
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
		if !m.markCE(p) {
			*dropped = append(*dropped, *p)
			m.codelDrops++
			p = m.flowDequeue(idx)
			m.shouldDrop(p, f, now)
		}
		f.dropping = true
		delta := f.count - f.lastcount
		if delta > 1 && int32(now-f.dropNext-16*m.interval) < 0 {
			f.count = delta
			m.newton(f)
		} else {
			f.count = 1
			f.x = 65535.0 / 65536 // ~0U >> REC_INV_SQRT_SHIFT
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
