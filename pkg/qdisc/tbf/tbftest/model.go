// Package tbftest holds a token bucket filter to Linux's: a model of
// sch_tbf, the arrival patterns, and a lockstep harness that runs a shaper
// and the model on the same arrivals and clock. tbf's conformance tests and
// the receive-path shaper's (package ingress) run the same cases with it.
package tbftest

import (
	"math"

	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// Model is Linux's sch_tbf, written from tbf_enqueue and tbf_dequeue: a
// bfifo bounded at limit bytes, drained by tbf_dequeue, which is called
// after every enqueue and whenever the watchdog (an ideal hrtimer) fires.
// With a packet rate it has a third bucket, which sch_tbf lacks, kept as
// act_police (tc police pkt_rate) keeps it.
type Model struct {
	rate, peak  rate.Rate
	hasPeak     bool
	buffer, mtu int64
	maxSize     uint32
	limit       uint64

	// The packet bucket (tc police's pkt_rate), when configured: its
	// cost per packet and depth in ns, as act_police keeps them.
	hasPkt             bool
	pktCost, pktBuffer int64

	tc, tokens, ptokens, pktTokens int64
	queue                          []Departure
	backlog                        uint64
	// minPacket, if not 0, bounds the queue in packets too, at
	// limit/minPacket+1 (see WithRingBound): netqdisc's, not Linux's.
	minPacket uint64
	// child, if not nil, is the tbf's child qdisc in place of its bfifo.
	child ChildModel

	// Watchdog is when the watchdog fires next, -1 when it is not armed.
	Watchdog int64
	// Sent are the packets dequeued, in order; Drops counts those dropped.
	Sent  []Departure
	Drops int
}

// ChildModel is a model of a tbf's child qdisc (Linux's
// qdisc_peek_dequeued and qdisc_dequeue_peeked semantics).
type ChildModel interface {
	// Enqueue queues a packet at now and reports whether it was queued.
	Enqueue(now int64, seq uint64, size uint32) bool
	// Peek returns the packet that would leave next, decided at now, and
	// keeps it for Dequeue.
	Peek(now int64) (seq uint64, size uint32, ok bool)
	// Dequeue removes the peeked packet.
	Dequeue()
	// Drops returns the packets the child has dropped.
	Drops() int
}

// WithChild makes the model's tbf queue into child rather than its
// bfifo, as `tc qdisc add ... parent 1: fq_codel` does.
func (m *Model) WithChild(child ChildModel) { m.child = child }

// Departure is a packet of the model's: its sequence number, size and, once
// sent, when.
type Departure struct {
	Seq  uint64
	Size uint32
	At   int64
}

// NewModel returns the model of a tbf configured as cfg, with the limit in
// force, started at start (ns).
func NewModel(cfg tbf.Config, limit uint32, start int64) *Model {
	m := &Model{
		rate:     rate.New(cfg.Rate).WithOverhead(cfg.Overhead).WithMPU(cfg.MPU),
		maxSize:  cfg.Burst,
		limit:    uint64(limit),
		tc:       start,
		Watchdog: -1,
	}
	if cfg.Burst == 0 { // a packet-only ceiling, or none: the limit bounds packets
		m.maxSize = math.MaxUint32
	}
	m.buffer = int64(m.rate.TimeNS(cfg.Burst))
	m.tokens = m.buffer
	if cfg.PeakRate != 0 {
		m.hasPeak = true
		m.peak = rate.New(cfg.PeakRate).WithOverhead(cfg.Overhead).WithMPU(cfg.MPU)
		m.mtu = int64(m.peak.TimeNS(cfg.MTU))
		m.ptokens = m.mtu
		m.maxSize = min(cfg.Burst, cfg.MTU)
	}
	if cfg.PacketRate != 0 {
		m.hasPkt = true
		m.pktCost = int64(rate.New(cfg.PacketRate).TimeNS(1))
		m.pktBuffer = m.pktCost * int64(cfg.PacketBurst)
		m.pktTokens = m.pktBuffer
	}
	return m
}

// Change is tbf_change at now (`tc qdisc change`): the buckets become
// cfg's and the limit limit, and the queue stays. tbf_change sets tokens =
// buffer and ptokens = mtu and keeps t_c, so the next dequeue finds each
// bucket full; the packet bucket starts full too. Then the queue is
// dequeued at now, as the shaper books its queue anew at once. A cfg with
// neither a rate nor a packet rate has no ceiling: every packet is due.
func (m *Model) Change(cfg tbf.Config, limit uint32, now int64) {
	n := NewModel(cfg, limit, m.tc)
	n.queue, n.backlog, n.child, n.Sent, n.Drops = m.queue, m.backlog, m.child, m.Sent, m.Drops
	*m = *n
	m.Dequeue(now)
}

// Enqueue is tbf_enqueue (packets over max_size dropped, as tbf does for
// non-GSO packets) followed by the dequeue run the kernel does after it.
func (m *Model) Enqueue(now int64, seq uint64, size uint32) bool {
	if m.child != nil && size <= m.maxSize {
		ok := m.child.Enqueue(now, seq, size)
		m.Dequeue(now)
		return ok
	}
	if size > m.maxSize || m.backlog+uint64(size) > m.limit || (m.minPacket != 0 && uint64(len(m.queue)) >= m.limit/m.minPacket+1) {
		m.Drops++
		m.Dequeue(now)
		return false
	}
	m.queue = append(m.queue, Departure{Seq: seq, Size: size})
	m.backlog += uint64(size)
	m.Dequeue(now)
	return true
}

// Dequeue calls tbf_dequeue until it returns nothing.
func (m *Model) Dequeue(now int64) {
	m.Watchdog = -1
	for {
		p, ok := m.head(now)
		if !ok {
			return
		}
		toks := min(now-m.tc, m.buffer)
		var ptoks int64
		if m.hasPeak {
			ptoks = toks + m.ptokens
			if ptoks > m.mtu {
				ptoks = m.mtu
			}
			ptoks -= int64(m.peak.TimeNS(p.Size))
		}
		toks += m.tokens
		if toks > m.buffer {
			toks = m.buffer
		}
		toks -= int64(m.rate.TimeNS(p.Size))
		// act_police's packet bucket: ppstoks = min(min(now - t_c,
		// pkt_burst) + pkttoks, pkt_burst) - the cost of one packet.
		var pktToks int64
		if m.hasPkt {
			pktToks = min(min(now-m.tc, m.pktBuffer)+m.pktTokens, m.pktBuffer) - m.pktCost
		}
		if (toks | ptoks | pktToks) >= 0 {
			m.tc, m.tokens, m.ptokens, m.pktTokens = now, toks, ptoks, pktToks
			m.take()
			p.At = now
			m.Sent = append(m.Sent, p)
			continue
		}
		m.Watchdog = now + max(-toks, -ptoks, -pktToks)
		return
	}
}

// head is the packet tbf_dequeue looks at: the bfifo's head, or what the
// child hands over at now.
func (m *Model) head(now int64) (Departure, bool) {
	if m.child != nil {
		seq, size, ok := m.child.Peek(now)
		return Departure{Seq: seq, Size: size}, ok
	}
	if len(m.queue) == 0 {
		return Departure{}, false
	}
	return m.queue[0], true
}

// take removes the head head returned.
func (m *Model) take() {
	if m.child != nil {
		m.child.Dequeue()
		return
	}
	m.backlog -= uint64(m.queue[0].Size)
	m.queue = m.queue[1:]
}

// AllDrops returns the drops of the tbf and its child.
func (m *Model) AllDrops() int {
	if m.child != nil {
		return m.Drops + m.child.Drops()
	}
	return m.Drops
}
