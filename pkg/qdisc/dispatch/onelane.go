package dispatch

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// OneLane is the one lane of a qdisc whose queue orders its packets
// itself (fq, fq_codel, cake, netem, mmlink): the methods of a
// qdisc.Discipline that only hand a packet to the lane or read it, for
// the kind's Discipline to embed, so that each kind writes only what is
// its own. StartOne starts it; a method of the kind's reaches its queue
// under the lane's lock (Locked).
type OneLane struct {
	group Group
}

// StartOne builds o's lane with cfg and starts its dispatcher: once, in
// the kind's constructor. (A function, so that no Start is promoted to
// the kind's Discipline.)
func StartOne(o *OneLane, cfg Config) {
	o.group.Init(1, cfg)
	o.group.Start()
}

// Lane returns the lane.
func (o *OneLane) Lane() *Lane { return &o.group.Lanes[0] }

// Locked runs f with the lane's lock held: a kind's read or change of its
// queue.
func (o *OneLane) Locked(f func()) { o.Lane().Locked(f) }

// WritePacket implements stack.QueueingDiscipline.WritePacket.
func (o *OneLane) WritePacket(pkt *stack.PacketBuffer) tcpip.Error {
	return o.Lane().Enqueue(pkt)
}

// Enqueue queues pkt: the receive path's WritePacket (one lane, whatever
// the hash).
func (o *OneLane) Enqueue(pkt *stack.PacketBuffer, _ uint32) tcpip.Error {
	return o.Lane().Enqueue(pkt)
}

// Lanes returns 1: the queue spreads or orders packets itself.
func (o *OneLane) Lanes() int { return 1 }

// Close implements stack.QueueingDiscipline.Close: what is queued is
// dropped and counted, and the dispatcher has exited when it returns.
func (o *OneLane) Close() { o.group.Close() }

// Stats returns the tc -s counters.
func (o *OneLane) Stats() qdisc.Stats { return o.group.Stats() }

// Quiescent reports whether the dispatcher is idle or waiting on its
// timer. Tests use it.
func (o *OneLane) Quiescent() bool { return o.group.Quiescent() }

// SetCeiling puts gate, a ceiling's buckets (tbf.NewGate), over the lane,
// or lifts it with nil: a packet leaves when the queue lets it go and the
// gate books it. maxPacketBytes is the largest packet the gate passes.
func (o *OneLane) SetCeiling(gate Gate, maxPacketBytes uint32) {
	o.group.SetGate(gate, maxPacketBytes)
}

// Gate returns the ceiling's gate set over the lane, nil for none.
func (o *OneLane) Gate() Gate { return o.group.Gate() }

// Read returns what f reads of a kind's queue, under o's lane's lock
// (Locked): its String, its configuration, its counters.
func Read[T any](o *OneLane, f func() T) T {
	var v T
	o.Locked(func() { v = f() })
	return v
}
