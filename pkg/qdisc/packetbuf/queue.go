package packetbuf

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Queue is a Ring as a qdisc.Queue: Linux's pfifo, bounded in packets, or
// bfifo, bounded in bytes too. It is the queue of fifo's lanes and of a
// tbf without a child. The zero Queue holds nothing; call Init first.
type Queue struct {
	ring  Ring
	drops uint64
}

var _ qdisc.Queue = (*Queue)(nil)

// Init empties the queue and bounds it: at most packets packets (at least
// 1) and, if maxBytes is not 0, at most maxBytes bytes. It must not be
// called while packets are queued.
func (f *Queue) Init(packets int, maxBytes uint64) {
	f.ring.Init(packets)
	f.ring.SetMaxBytes(maxBytes)
}

// Enqueue implements qdisc.Queue.Enqueue: a packet that would pass either
// bound is refused, as bfifo refuses it.
func (f *Queue) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	if !f.ring.PushBackAt(pkt, uint64(size), now) {
		f.drops++
		return false
	}
	return true
}

// Peek implements qdisc.Queue.Peek.
func (f *Queue) Peek(_ int64, sizes []uint32, arrived []int64) int {
	return f.ring.Front(sizes, arrived)
}

// Dequeue implements qdisc.Queue.Dequeue.
func (f *Queue) Dequeue(int64) (*stack.PacketBuffer, uint32, bool) {
	pkt, size := f.ring.RemoveFront()
	return pkt, size, pkt != nil
}

// FrontSize returns the size of the packet Dequeue would return next; ok
// is false when the queue is empty.
func (f *Queue) FrontSize() (size uint32, ok bool) { return f.ring.FrontSize() }

// FrontSizes writes the sizes of the packets Dequeue would return next,
// in order, up to len(sizes), and returns how many it wrote.
func (f *Queue) FrontSizes(sizes []uint32) int { return f.ring.FrontSizes(sizes) }

// DequeueTo is n Dequeue calls, fewer when fewer packets are queued, that
// append their packets to pkts: it returns how many it dequeued and
// their bytes.
func (f *Queue) DequeueTo(pkts *stack.PacketBufferList, n int) (int, uint64) {
	return f.ring.RemoveFrontTo(pkts, n)
}

// Seen records that every packet queued without an arrival time had
// arrived by now: a gate then books none of them as seen later, however
// late the pass that books it runs.
func (f *Queue) Seen(now int64) { f.ring.StampUnstamped(now) }

// Purge implements qdisc.Queue.Purge.
func (f *Queue) Purge() (int, uint64) { return f.ring.Purge() }

// Len implements qdisc.Queue.Len.
func (f *Queue) Len() (int, uint64) { return f.ring.Len(), f.ring.Bytes() }

// Drops implements qdisc.Queue.Drops.
func (f *Queue) Drops() uint64 { return f.drops }

// SetLimits changes the Queue's bounds on a running qdisc, as Linux's
// fifo_set_limit does: what is queued past lower bounds stays queued, and
// new packets are refused until the backlog is under them.
func (f *Queue) SetLimits(packets int, maxBytes uint64) {
	f.ring.SetCap(packets)
	f.ring.SetMaxBytes(maxBytes)
}
