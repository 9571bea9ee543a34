package tbf

import "github.com/netqdisc/netqdisc/pkg/qdisc"

// GSOSplitter is a child queue whose point, a sparse flow's turn ahead of
// the bulk flows (fq), a host-GSO packet would defeat: a packet that
// arrives while one waits at the head waits for all of it (64 KiB is 52
// ms at 10 Mbit/s). The tbf tells such a child, on the send path, the
// most a packet should take at its rate, about a millisecond (one MTU at
// least), and the child cuts larger host-GSO packets to that as they
// reach the head of their flow, as cake's split-gso does below 1 Gbit/s
// (the host then gets more, smaller packets, costing CPU where the rate
// is low enough to afford it). SplitGSOAt is called under the lock that
// guards the child.
type GSOSplitter interface {
	qdisc.Queue
	SplitGSOAt(maxWire uint64)
}

// ByteLimiter is a child queue that takes the tbf's limit (or latency, as
// a limit at the rate) as a bound on its bytes queued, beside its own
// limits: fq, the default child under a runtime's ceiling, so that a
// limit or latency an operator or a Kubernetes bandwidth sets holds as it
// does over the byte FIFO. Unset, the limit is DefaultLimitPackets of
// the largest packets a sender hands down (host-GSO ones where the link
// takes them): a sender without small queues would otherwise fill 1000
// packets a flow, a deep queue whose tail drops stall its TCP.
// SetByteLimit (0: the child's own default) is called under the lock
// that guards the child.
type ByteLimiter interface {
	qdisc.Queue
	SetByteLimit(bytes uint64)
}

// isByteLimiter says whether child takes the tbf's limit.
func isByteLimiter(child qdisc.Queue) bool {
	_, ok := child.(ByteLimiter)
	return ok
}

// setChild tells a child what it takes of cfg: the size to cut host-GSO
// packets to (GSOSplitter) and the byte limit (ByteLimiter). The caller
// holds the lock that guards the child, or it is not running yet.
func (d *Discipline) setChild(child qdisc.Queue, cfg Config) {
	d.splitGSOAt(child, cfg)
	if b, ok := child.(ByteLimiter); ok {
		b.SetByteLimit(uint64(cfg.Limit))
	}
}

// splitGSORate is how many pieces a second a cut host-GSO packet's take
// at the rate: each takes a millisecond at most.
const splitGSORate = 1000

// splitGSOAt tells a GSOSplitter child the size to cut host-GSO packets
// to under cfg, on the send path.
func (d *Discipline) splitGSOAt(child qdisc.Queue, cfg Config) {
	s, ok := child.(GSOSplitter)
	if !ok || !d.splitsGSO {
		return
	}
	var piece uint64 // no rate: none
	if cfg.Rate != 0 {
		piece = max(boundsOf(d.link, true).mtu, cfg.Rate/splitGSORate)
	}
	s.SplitGSOAt(piece)
}
