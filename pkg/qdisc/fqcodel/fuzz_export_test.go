package fqcodel

import "gvisor.dev/gvisor/pkg/tcpip/stack"

// Peeked returns the packet Peek holds for the next Dequeue, nil if none:
// FuzzFQCoDel accounts its memory apart (a peeked packet counts in Len,
// not in XStats.MemoryUsage).
func (q *Scheduler) Peeked() *stack.PacketBuffer {
	if !q.hasPeeked {
		return nil
	}
	return q.peeked.pkt
}
