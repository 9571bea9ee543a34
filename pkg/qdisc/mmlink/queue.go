package mmlink

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Queue is mahimahi's LinkQueue as a qdisc.Queue and qdisc.Shaper: a
// drop-tail queue in front of a link whose delivery opportunities are
// a trace's, repeating. Each opportunity carries OpportunityBytes of the
// packets queued before it, in order, a packet's bytes across as many
// opportunities as it needs (mahimahi's packet in transit); a packet
// leaves at the opportunity that carries its last byte, and an
// opportunity's bytes that no queued packet takes are lost. So a
// 1500-byte IP packet takes one opportunity, two of 748 bytes share
// one, and none leaves before its opportunity or after it: the lane is
// told when the next one is (NextEvent).
//
// It is not safe for concurrent use: its lane calls it under its lock.
// It holds one reference to each packet it queues.
type Queue struct {
	cur cursor
	// mtu is the link's MTU, for Charge.
	mtu          uint32
	limit, bytes uint32

	r ring
	// ready counts the packets at the front that have left (their last
	// byte was carried), for Dequeue to hand over.
	ready int
	// left is the bytes yet to carry of the packet in transit, the one
	// after the ready ones; 0: none is.
	left uint32
	// waiting and waitBytes are the packets behind (mahimahi's
	// packet_queue_), which the limits bound, and their charges.
	waiting   int
	waitBytes uint64
	// backlog is the bytes held, as the lane charged them.
	backlog uint64

	// last is the latest time the queue was given: time never goes back.
	last int64
	// next is NextEvent's answer, activated Activated's.
	next      int64
	activated bool

	drops uint64
	// The opportunities passed, those that carried nothing, and the
	// bytes they could have carried that they did not.
	opportunities, idle, unused uint64
}

var (
	_ qdisc.Queue    = (*Queue)(nil)
	_ qdisc.Shaper   = (*Queue)(nil)
	_ qdisc.XStatser = (*Queue)(nil)
)

// NewQueue returns an mmlink configured as cfg, on a link of mtu (for
// Charge; 0: unknown) whose trace starts at now.
func NewQueue(cfg Config, mtu uint32, now int64) (*Queue, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	q := &Queue{mtu: mtu, limit: cfg.Limit, bytes: cfg.Bytes, last: now}
	q.cur.start(cfg.Trace, now)
	return q, nil
}

// Change puts cfg in force at now: the opportunities until now are the
// old trace's; a different trace then starts from its beginning at now,
// as a new mm-link would, and the same trace goes on where it is. The
// packets held stay (one in transit keeps what was carried of it); the
// limits bound those that come after.
func (q *Queue) Change(cfg Config, now int64) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	now = q.clock(now)
	q.rationalize(now)
	if !cfg.Trace.Equal(q.cur.tr) {
		q.cur.start(cfg.Trace, now)
	}
	q.limit, q.bytes = cfg.Limit, cfg.Bytes
	return nil
}

// Config returns the configuration in force.
func (q *Queue) Config() Config { return Config{Trace: q.cur.tr, Limit: q.limit, Bytes: q.bytes} }

// clock returns now, or the latest time given if now is before it (or
// Unstamped): the queue's time never goes back.
func (q *Queue) clock(now int64) int64 {
	if now == qdisc.Unstamped || now < q.last {
		return q.last
	}
	q.last = now
	return now
}

// rationalize runs the link up to now (mahimahi's rationalize): every
// opportunity at or before now carries what was queued before it.
// Opportunities that find nothing to carry are passed at once.
func (q *Queue) rationalize(now int64) {
	for q.cur.at <= now {
		if q.r.n == q.ready { // nothing waits or is in transit
			n := q.cur.skipPast(now)
			q.opportunities += n
			q.idle += n
			q.unused += n * OpportunityBytes
			return
		}
		q.opportunity()
	}
}

// opportunity uses the next opportunity: its bytes carry the packet in
// transit, then the ones behind it, until they run out.
func (q *Queue) opportunity() {
	budget := uint32(OpportunityBytes)
	at := q.cur.at
	q.cur.advance()
	q.opportunities++
	for budget > 0 {
		if q.left == 0 {
			if q.ready == q.r.n {
				break
			}
			h := q.r.at(q.ready)
			q.left = h.charge
			q.waiting--
			q.waitBytes -= uint64(h.charge)
		}
		n := min(budget, q.left)
		q.left -= n
		budget -= n
		if q.left == 0 { // its last byte is carried: it leaves
			q.r.at(q.ready).left = at
			q.ready++
		}
	}
	if budget == OpportunityBytes {
		q.idle++
	}
	q.unused += uint64(budget)
}

// Enqueue implements qdisc.Queue.Enqueue (mahimahi's read_packet): the
// link runs up to now, then pkt joins the queue unless the limits are
// met (then it is refused, the caller keeping it, and counted).
func (q *Queue) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	now = q.clock(now)
	q.rationalize(now)
	q.activated = q.ready > 0
	c := Charge(pkt, size, q.mtu)
	if q.waiting >= int(q.limit) || (q.bytes != 0 && q.waitBytes+uint64(c) > uint64(q.bytes)) {
		q.drops++
		return false
	}
	q.r.push(held{pkt: pkt, size: size, charge: c, arrived: now})
	q.waiting++
	q.waitBytes += uint64(c)
	q.backlog += uint64(size)
	return true
}

// Dequeue implements qdisc.Queue.Dequeue: the link runs up to now, and
// the first packet that has left is handed over. With none, NextEvent
// says when the next leaves.
func (q *Queue) Dequeue(now int64) (*stack.PacketBuffer, uint32, bool) {
	q.runTo(now)
	if q.ready == 0 {
		return nil, 0, false
	}
	h := q.r.pop()
	q.ready--
	q.backlog -= uint64(h.size)
	return h.pkt, h.size, true
}

// runTo runs the link up to now (rationalize) and, if nothing held has
// left, sets next to when the first will: Dequeue's and Peek's answer
// when they hand over nothing (a lane with a ceiling Peeks, and waits
// for NextEvent, without a Dequeue).
func (q *Queue) runTo(now int64) {
	q.rationalize(q.clock(now))
	if q.ready == 0 && q.r.n > 0 {
		q.next = q.departure()
	}
}

// departure returns when the first packet held leaves, if nothing more
// is carried before it: at the opportunity that carries its last byte.
// The next opportunity is after the time the link ran to, so it is
// whole.
func (q *Queue) departure() int64 {
	need := uint64(q.left)
	if need == 0 {
		need = uint64(q.r.at(q.ready).charge)
	}
	return q.cur.ahead(int64((need+OpportunityBytes-1)/OpportunityBytes - 1))
}

// NextEvent implements qdisc.Shaper.NextEvent: when the first packet
// held leaves, after a Dequeue or Peek that found none had.
func (q *Queue) NextEvent() int64 { return q.next }

// Activated implements qdisc.Shaper.Activated: the last Enqueue found
// packets that have left (the link ran past a departure the lane has not
// yet come for).
func (q *Queue) Activated() bool { return q.activated }

// Peek implements qdisc.Queue.Peek: the packets that have left, which
// the next Dequeues hand over, each "arrived" when it left the trace's
// link: a ceiling over the link (SetCeiling) books it from then, as a
// tbf grafted under mahimahi's link would see it.
func (q *Queue) Peek(now int64, sizes []uint32, arrived []int64) int {
	q.runTo(now)
	n := min(q.ready, len(sizes), len(arrived))
	for i := range n {
		h := q.r.at(i)
		sizes[i], arrived[i] = h.size, h.left
	}
	return n
}

// Purge implements qdisc.Queue.Purge: every packet held is released.
func (q *Queue) Purge() (int, uint64) {
	n, b := q.r.n, q.backlog
	for q.r.n > 0 {
		q.r.pop().pkt.DecRef()
	}
	q.ready, q.left, q.waiting, q.waitBytes, q.backlog = 0, 0, 0, 0, 0
	return n, b
}

// Len implements qdisc.Queue.Len: the packets held (left and not yet
// handed over, in transit, waiting) and their bytes as the lane charged
// them.
func (q *Queue) Len() (int, uint64) { return q.r.n, q.backlog }

// Drops implements qdisc.Queue.Drops: the packets refused at the limits.
func (q *Queue) Drops() uint64 { return q.drops }

// TCXStats implements qdisc.XStatser: the opportunities passed, those
// that carried nothing, and the bytes left unused of them.
func (q *Queue) TCXStats() string {
	return fmt.Sprintf("  opportunities %d idle %d unused %db", q.opportunities, q.idle, q.unused)
}

// String describes the link as `tc qdisc show` does.
func (q *Queue) String() string { return "mmlink " + q.Config().Words() }
