package htbtest

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// ByteFIFO is a leaf qdisc for the tree under test: Linux's bfifo, a FIFO
// that refuses a packet that would take its backlog over Limit bytes. A
// class whose Leaf is one is modelled as a bfifo of that limit, so that the
// lockstep runs the tree's path for grafted leaves (tc qdisc add ...
// parent 1:10 bfifo limit N).
type ByteFIFO struct {
	// Limit is the most bytes it holds.
	Limit uint64

	pkts   []*stack.PacketBuffer
	sizes  []uint32
	stamps []int64
	bytes  uint64
	drops  uint64
}

var _ qdisc.Queue = (*ByteFIFO)(nil)

// NewByteFIFO returns an empty bfifo of limit bytes.
func NewByteFIFO(limit uint64) *ByteFIFO { return &ByteFIFO{Limit: limit} }

// Enqueue implements qdisc.Queue.Enqueue (bfifo_enqueue).
func (q *ByteFIFO) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	if q.bytes+uint64(size) > q.Limit {
		q.drops++
		return false
	}
	q.pkts = append(q.pkts, pkt)
	q.sizes = append(q.sizes, size)
	q.stamps = append(q.stamps, now)
	q.bytes += uint64(size)
	return true
}

// Peek implements qdisc.Queue.Peek.
func (q *ByteFIFO) Peek(_ int64, sizes []uint32, arrived []int64) int {
	n := copy(sizes, q.sizes)
	copy(arrived[:n], q.stamps)
	return n
}

// Dequeue implements qdisc.Queue.Dequeue.
func (q *ByteFIFO) Dequeue(int64) (*stack.PacketBuffer, uint32, bool) {
	if len(q.pkts) == 0 {
		return nil, 0, false
	}
	pkt, size := q.pkts[0], q.sizes[0]
	q.pkts[0] = nil
	q.pkts, q.sizes, q.stamps = q.pkts[1:], q.sizes[1:], q.stamps[1:]
	q.bytes -= uint64(size)
	return pkt, size, true
}

// Purge implements qdisc.Queue.Purge.
func (q *ByteFIFO) Purge() (int, uint64) {
	n, bytes := len(q.pkts), q.bytes
	for _, pkt := range q.pkts {
		pkt.DecRef()
	}
	q.pkts, q.sizes, q.stamps, q.bytes = nil, nil, nil, 0
	return n, bytes
}

// Len implements qdisc.Queue.Len.
func (q *ByteFIFO) Len() (int, uint64) { return len(q.pkts), q.bytes }

// Drops implements qdisc.Queue.Drops.
func (q *ByteFIFO) Drops() uint64 { return q.drops }
