package dispatch

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// batch is packets taken for one WritePackets call.
type batch struct {
	pkts  stack.PacketBufferList
	sizes [qdisc.BatchSize]uint32
	n     int
}

// add appends pkt, of size bytes, and reports whether the batch is full.
func (b *batch) add(pkt *stack.PacketBuffer, size uint32) bool {
	b.pkts.PushBack(pkt)
	b.sizes[b.n] = size
	b.n++
	return b.n == qdisc.BatchSize
}

// writeTaken writes the batches a pass took, each to the lower link in
// one call, and releases their references. What the link refuses for want
// of room (ErrWouldBlock, ErrNoBufferSpace: a full socket buffer, Linux's
// NETDEV_TX_BUSY) is requeued, with every later batch, to leave first at
// the next pass, as Linux's dev_requeue_skb does; what it refuses for any
// other reason is dropped. It returns the bytes that left the lane (sent
// or dropped), which the pass refunds to the budget, and whether the link
// took nothing at all (the pass then waits RequeueDelay to offer it again).
func (l *Lane) writeTaken() (left uint64, stalled bool) {
	for i := range l.taken {
		b := &l.taken[i]
		if b.n == 0 {
			break
		}
		n, err := l.lower.WritePackets(b.pkts)
		n = max(0, min(n, b.n))
		bytes := sum(b.sizes[:n])
		l.sentPackets.Add(uint64(n))
		l.sentBytes.Add(bytes)
		left += bytes
		if n < b.n {
			if !noRoom(err) {
				l.drops.Add(uint64(b.n - n))
				left += sum(b.sizes[n:b.n])
				b.release()
				continue
			}
			l.requeue(i, n)
			return left, n == 0 && i == 0
		}
		b.release()
	}
	return left, false
}

// requeue puts back at the lane's head the packets of batch i from its
// n-th on and every batch after it, in order, and releases the batches.
func (l *Lane) requeue(i, n int) {
	l.mu.Lock()
	var count uint64
	for ; i < len(l.taken); i++ {
		b := &l.taken[i]
		if b.n == 0 {
			break
		}
		for j, pkt := range b.pkts.AsSlice()[n:] {
			l.requeued.PushBack(pkt.IncRef(), uint64(b.sizes[n+j]))
			count++
		}
		b.release()
		n = 0
	}
	l.mu.Unlock()
	l.requeues.Add(count)
}

// release drops the batch's references (the link has borrowed them) and
// empties it.
func (b *batch) release() {
	b.pkts.Reset()
	b.n = 0
}

// noRoom says whether err is a link's refusal for want of room, after
// which the packets may be offered again.
func noRoom(err tcpip.Error) bool {
	switch err.(type) {
	case *tcpip.ErrWouldBlock, *tcpip.ErrNoBufferSpace:
		return true
	}
	return false
}

// sum adds sizes up.
func sum(sizes []uint32) (total uint64) {
	for _, s := range sizes {
		total += uint64(s)
	}
	return total
}
