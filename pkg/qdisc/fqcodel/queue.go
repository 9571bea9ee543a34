package fqcodel

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
)

// Classifier returns the flow hash of a packet (reduced to the flow count
// by fq_codel).
type Classifier func(pkt *stack.PacketBuffer) uint32

// Queue is fq_codel as a qdisc.Queue: a Scheduler that classifies the
// packets it is given, for a dispatch lane (fq_codel alone, New) or as a
// tbf's child (tbf.Config.Child).
type Queue struct {
	*Scheduler
	classify Classifier
}

var _ qdisc.Queue = (*Queue)(nil)

// NewQueue returns an fq_codel queue configured as cfg, on a link whose
// MTU plus header is mtu, that classifies packets with classify (nil:
// pkt.Hash if set, else a seeded hash of their headers).
func NewQueue(cfg Config, mtu uint32, classify Classifier) (*Queue, error) {
	q, err := NewScheduler(cfg, mtu)
	if err != nil {
		return nil, err
	}
	if classify == nil {
		classify = flowhash.New().ByPacket()
	}
	return &Queue{Scheduler: q, classify: classify}, nil
}

// Enqueue implements qdisc.Queue.Enqueue: fq_codel makes room by
// dropping from the fattest flow, so it takes every packet.
func (q *Queue) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	q.Scheduler.Enqueue(pkt, size, q.classify(pkt), now)
	return true
}

// Peek implements qdisc.Queue.Peek: fq_codel decides at now which packet
// leaves next (CoDel may drop others on the way) and keeps it.
func (q *Queue) Peek(now int64, sizes []uint32, arrived []int64) int {
	if len(sizes) == 0 {
		return 0
	}
	size, at, ok := q.Scheduler.Peek(now)
	if !ok {
		return 0
	}
	sizes[0], arrived[0] = size, at
	return 1
}

// Len implements qdisc.Queue.Len.
func (q *Queue) Len() (int, uint64) {
	n, b := q.Scheduler.Len()
	return int(n), b
}

// Drops implements qdisc.Queue.Drops.
func (q *Queue) Drops() uint64 { return q.dropOverlimit + q.stats.Drops }

// MaxSlack is the most a tbf's timer may be late for this child (see
// tbf.SlackBounder): half its CoDel target, since a sparse flow's packet
// held a Slack longer would be over target, and CoDel would drop it.
func (q *Queue) MaxSlack() time.Duration { return q.cfg.Target / 2 }

// TCXStats implements qdisc.XStatser: fq_codel's own counters, as `tc -s
// qdisc show` prints them. The caller holds the lane's lock.
func (q *Queue) TCXStats() string { return q.XStats().String() }

// String describes the configuration as `tc qdisc show` does.
func (q *Queue) String() string { return q.cfg.String() }

// Parent is a qdisc with a child queue (a tbf): Child calls f with the
// child under the lock that guards it.
type Parent interface {
	Child(f func(child qdisc.Queue))
}

// ChildXStats returns the counters of p's child if it is fq_codel; ok is
// false otherwise.
func ChildXStats(p Parent) (x XStats, ok bool) {
	p.Child(func(c qdisc.Queue) {
		if q, is := c.(*Queue); is {
			x, ok = q.XStats(), true
		}
	})
	return x, ok
}
