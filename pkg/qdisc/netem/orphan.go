package netem

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// A packet netem holds for a time (a delay, jitter or a rate) is orphaned
// as netem_enqueue orphans its skb (skb_orphan_partial): its sender stops
// counting it as below TCP when it enters the queue, not when it leaves.
// Orphaning usually happens at the link's transmit completion, before the
// wire's transit, which is what netem emulates: a TCP with small queues
// (runsc patch 0006 counts a packet until its release) would otherwise
// count 100 ms of emulated transit as its own queue, and send two packets
// per 100 ms. netem holds a clone, which shares the packet's bytes, and
// the sender's reference goes when WritePacket returns. netem's own
// Discipline clones before its lane (enqueue); a Queue grafted under
// another kind's shaper (an htb leaf, a tbf's child) is handed the
// sender's packet by that lane, and clones it itself (enqueueOrphan).

// orphans reports whether the queue holds its packets for a time,
// netem_enqueue's test: q->latency || q->jitter || q->rate.
func (q *Queue) orphans() bool {
	s := &q.st
	return s.latency != 0 || s.jitter != 0 || s.rate != 0
}

// enqueue queues pkt in the lane, a clone in its place while the queue
// orphans its packets.
func (d *Discipline) enqueue(pkt *stack.PacketBuffer) tcpip.Error {
	if !d.orphan.Load() {
		return d.Lane().Enqueue(pkt)
	}
	c := pkt.Clone()
	defer c.DecRef()
	return d.Lane().Enqueue(c)
}

// enqueueOrphan is Enqueue with a clone of pkt queued in its place
// (orphanOnEnqueue): pkt's reference, taken over as Enqueue takes it, is
// released once the clone is held or lost; a refused packet's clone is
// released, and pkt stays the caller's.
func (q *Queue) enqueueOrphan(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	c := pkt.Clone()
	if q.enqueue(c, size, now, false) == refused {
		c.DecRef()
		return false
	}
	pkt.DecRef()
	return true
}
