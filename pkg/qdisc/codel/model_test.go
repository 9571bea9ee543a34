package codel_test

import (
	"fmt"
	"math"
)

// refCoDel is a reference model of one queue under Linux's CoDel, written
// from include/net/codel.h and include/net/codel_impl.h (codel_should_drop,
// codel_dequeue, codel_control_law), not from codel.go. Times are
// codel_time_t: nanoseconds >> 10 in a uint32, compared by their signed
// 32-bit difference (codel_time_before/after).
//
// The control law is t + interval/sqrt(count). Linux does not take the
// square root: it keeps rec_inv_sqrt, 1/sqrt(count) in 16 bits (Q0.16),
// and moves it one Newton step, x' = x/2 * (3 - count*x^2), at every
// count change, starting from ~0 >> 16 (1 - 2^-16) when count is reset to
// 1. That approximation is Linux's behaviour, not noise: from count 1 to 2
// one step gives x = 1/2, not 1/sqrt(2), so the third drop of every
// dropping state comes 0.5 interval after the second, 29% sooner than the
// exact law says. A model with the exact law would disagree with Linux on
// that drop, so this one takes the Newton step too, but in float64 real
// arithmetic, and stores its result in 16 bits by truncation, as Linux's
// u16 does. In real arithmetic the step is exact in float64 (x has 16
// significant bits, count*x^2 32, their products fit 53). Linux's fixed
// point differs from it in one place: it truncates (3 - count*x^2)*2^30
// to an integer before multiplying by x*2^32 and shifting by 31, which
// puts its Q0.32 result below the real N*2^32 by e < 1.5*x units of 2^-32
// (a truncated quarter, at most 3/4, times 2x); its final truncation to 16
// bits then differs from floor(N*2^16), by one, only where the fraction of
// N*2^16 is above 0 and below 1.5*x*2^-16. newton reports those cases
// (unsure), and the callers check that the seeded runs never meet one.
// law_test.go bounds the whole approximation against math.Sqrt.
type refCoDel struct {
	target, interval, mtu uint32
	ecn                   bool

	q       []*tpkt // the queue, head first
	backlog uint32

	count, lastcount     uint32
	dropping             bool
	x                    float64 // rec_inv_sqrt, a multiple of 2^-16
	firstAbove, dropNext uint32
	ldelay               uint32

	maxpacket, drops, dropBytes, marks uint64
	// unsure is set when a Newton step fell where the 16-bit result of
	// real arithmetic may be one more than Linux's fixed point.
	unsure string
}

func before(a, b uint32) bool  { return int32(a-b) < 0 }
func after(a, b uint32) bool   { return int32(a-b) > 0 }
func afterEq(a, b uint32) bool { return int32(a-b) >= 0 }

// newton is codel_Newton_step in real arithmetic, its result truncated to
// 16 bits.
func (m *refCoDel) newton() {
	c := float64(m.count)
	n := m.x * (3 - c*m.x*m.x) / 2
	if n < 0 || n >= 1 {
		panic(fmt.Sprintf("Newton step out of range: count %d, x %v", m.count, m.x))
	}
	scaled := n * 65536
	if f := scaled - math.Floor(scaled); f != 0 && f < 1.5*m.x/65536 && m.unsure == "" {
		m.unsure = fmt.Sprintf("count %d, x %v: N*65536 = %v is within Linux's truncation of an integer", m.count, m.x, scaled)
	}
	m.x = math.Floor(scaled) / 65536
}

// law is codel_control_law: t + interval * rec_inv_sqrt, truncated.
func (m *refCoDel) law(t uint32) uint32 {
	return t + uint32(math.Floor(float64(m.interval)*m.x))
}

// pop is the qdisc's dequeue_func: the head, and the backlog less it.
func (m *refCoDel) pop() *tpkt {
	if len(m.q) == 0 {
		return nil
	}
	p := m.q[0]
	m.q = m.q[1:]
	m.backlog -= p.size
	return p
}

// shouldDrop is codel_should_drop.
func (m *refCoDel) shouldDrop(p *tpkt, now uint32) bool {
	if p == nil {
		m.firstAbove = 0
		return false
	}
	m.ldelay = now - p.enq
	m.maxpacket = max(m.maxpacket, uint64(p.size))
	// Below target, or no more than a packet's worth queued: fine.
	if before(m.ldelay, m.target) || m.backlog <= m.mtu {
		m.firstAbove = 0
		return false
	}
	if m.firstAbove == 0 {
		m.firstAbove = now + m.interval
		return false
	}
	return after(now, m.firstAbove)
}

// mark is INET_ECN_set_ce under params->ecn: it marks an ECN-capable
// packet (ECT(0), ECT(1) or CE) and says whether it did.
func (m *refCoDel) mark(p *tpkt, ev *[]event) bool {
	if !m.ecn || !p.ect {
		return false
	}
	p.ce = true
	m.marks++
	*ev = append(*ev, event{mark, p.seq})
	return true
}

func (m *refCoDel) drop(p *tpkt, ev *[]event) {
	m.drops++
	m.dropBytes += uint64(p.size)
	*ev = append(*ev, event{drop, p.seq})
}

// dequeue is codel_dequeue at now: the packet handed over (nil: the queue
// ran empty) and what happened to the packets on the way, in order.
func (m *refCoDel) dequeue(now uint32) (*tpkt, []event) {
	var ev []event
	p := m.pop()
	if p == nil {
		m.dropping = false
		return nil, nil
	}
	drop := m.shouldDrop(p, now)
	switch {
	case m.dropping && !drop:
		m.dropping = false
	case m.dropping:
		for m.dropping && afterEq(now, m.dropNext) {
			m.count++
			m.newton()
			if m.mark(p, &ev) {
				m.dropNext = m.law(m.dropNext)
				return p, ev
			}
			m.drop(p, &ev)
			p = m.pop()
			if m.shouldDrop(p, now) {
				m.dropNext = m.law(m.dropNext)
			} else {
				m.dropping = false
			}
		}
	case drop:
		if !m.mark(p, &ev) {
			m.drop(p, &ev)
			p = m.pop()
			m.shouldDrop(p, now)
		}
		m.dropping = true
		// Went bad again soon (16 intervals) after the last dropping
		// state: start from the drop rate that controlled it then.
		if delta := m.count - m.lastcount; delta > 1 && before(now-m.dropNext, 16*m.interval) {
			m.count = delta
			m.newton()
		} else {
			m.count = 1
			m.x = 65535.0 / 65536
		}
		m.lastcount = m.count
		m.dropNext = m.law(now)
	}
	return p, ev
}
