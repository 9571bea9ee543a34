package netem

import "gvisor.dev/gvisor/pkg/tcpip/stack"

// DequeueBatch implements qdisc.BatchDequeuer: the packets that as many
// Dequeues at now would hand over, up to len(sizes), appended to pkts
// with their sizes, in one call (a lane without a gate takes its batches
// so).
func (q *Queue) DequeueBatch(now int64, pkts *stack.PacketBufferList, sizes []uint32) int {
	n := 0
	for n < len(sizes) {
		pkt, size, ok := q.Dequeue(now)
		if !ok {
			break
		}
		pkts.PushBack(pkt)
		sizes[n] = size
		n++
	}
	return n
}
