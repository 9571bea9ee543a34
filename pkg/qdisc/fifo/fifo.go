// Package fifo is a first-in, first-out queueing discipline for gVisor's
// netstack: runsc's default qdisc.
//
// Packets are spread over a number of lanes by pkt.Hash (runsc uses one
// lane per CPU, as a NIC has a transmit queue per CPU under Linux's mq),
// so that one flow's packets stay in order on one lane while different
// flows are dispatched in parallel. Each lane is a queue with its own
// dispatcher goroutine (package dispatch), which hands the lower link
// batches of up to qdisc.BatchSize (47) packets. A full lane answers
// ErrNoBufferSpace and counts a drop, as pfifo does when its limit is
// reached.
//
// Where this differs from gVisor's upstream fifo (pkg/tcpip/link/qdisc/fifo):
// it keeps `tc -s`-style statistics (Stats), counts its backlog in bytes as
// well as packets, wakes a dispatcher only when it is asleep rather than on
// every packet, refuses packets after Close without a window in which a
// packet could be queued and never released, and returns its concrete type
// so callers can read Stats.
package fifo

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// BatchSize is the most packets handed to the lower link at once.
const BatchSize = qdisc.BatchSize

// Discipline is a FIFO qdisc with one or more hashed queues.
type Discipline struct {
	lanes    dispatch.Group
	queueLen int
}

var _ stack.QueueingDiscipline = (*Discipline)(nil)

// New returns a FIFO qdisc that writes to lower through lanes lanes (at
// least 1) of at most queueLen packets each (at least 1), and starts
// their dispatchers.
func New(lower stack.LinkWriter, lanes, queueLen int) *Discipline {
	return NewWithClock(lower, nil, lanes, queueLen)
}

// NewWithClock is New with the clock that times a full link's retries and
// a ceiling set in place (SetCeiling); nil is the system's. A fifo reads
// it only then.
func NewWithClock(lower stack.LinkWriter, clock tcpip.Clock, lanes, queueLen int) *Discipline {
	d := &Discipline{queueLen: max(queueLen, 1)}
	d.lanes.Init(lanes, dispatch.Config{Lower: lower, MaxPackets: d.queueLen, Clock: clock})
	d.lanes.Start()
	return d
}

// WritePacket implements stack.QueueingDiscipline.WritePacket: it queues
// pkt on the queue its hash selects, taking a reference of its own.
func (d *Discipline) WritePacket(pkt *stack.PacketBuffer) tcpip.Error {
	return d.lanes.Lane(pkt.Hash).Enqueue(pkt)
}

// Close implements stack.QueueingDiscipline.Close. Packets still queued are
// released and counted as drops; every dispatcher has exited when Close
// returns. Close is idempotent and safe against concurrent WritePacket.
func (d *Discipline) Close() { d.lanes.Close() }

// Stats returns the qdisc's counters, summed over its queues.
func (d *Discipline) Stats() qdisc.Stats { return d.lanes.Stats() }

// Quiescent reports whether every lane is idle or waiting for its
// ceiling's departures. Tests use it to step a clock.
func (d *Discipline) Quiescent() bool { return d.lanes.Quiescent() }

// Lanes returns the number of lanes.
func (d *Discipline) Lanes() int { return len(d.lanes.Lanes) }

// String describes the qdisc as `tc qdisc show` does a pfifo, with its
// lane count as the queues Linux's mq would show: "fifo queues 2 limit
// 1000p" (the limit is per lane). With
// a ceiling set, the ceiling comes first, as a tbf whose child the fifo
// is: "tbf rate 10Mbit burst 12500b; child fifo queues 2 limit 1000p".
func (d *Discipline) String() string {
	s := fmt.Sprintf("fifo queues %d limit %dp", d.Lanes(), d.queueLen)
	if g := d.lanes.Gate(); g != nil {
		return fmt.Sprintf("%v; child %s", g, s)
	}
	return s
}

// Show implements qdisc.Shower: the fifo's line and its counters; with a
// ceiling set (SetCeiling), the ceiling's tbf at the root, the fifo
// grafted under it (qdisc.Gated).
func (d *Discipline) Show() qdisc.Showing {
	s := qdisc.Showing{Stats: d.Stats()}
	s.Kind, s.Options = qdisc.SplitKind(fmt.Sprintf("fifo queues %d limit %dp", d.Lanes(), d.queueLen))
	return qdisc.Gated(d.lanes.Gate(), s)
}

// SetCeiling sets a ceiling on the running fifo in place, as `tc qdisc
// replace ... root tbf` puts a tbf over a queue: gate (tbf.NewGate builds
// one; nil removes the ceiling) books every queue's departures, all
// drawing on it, and maxPacketBytes is the largest packet it passes
// (larger host-GSO packets are cut to fit). What is queued stays, in
// order, and leaves under the new ceiling.
func (d *Discipline) SetCeiling(gate dispatch.Gate, maxPacketBytes uint32) {
	d.lanes.SetGate(gate, maxPacketBytes)
}

// NewTo is NewWithClock on the receive path (package ingress): what
// leaves goes to out, and a link's delivering goroutine that calls Enqueue
// only queues (dispatch.Config.QueueOnly). A GRO aggregate is counted as
// the segments it was on link's wire (gso.ReceivedWireSize), as Linux
// counts it on an ifb device, and so charged under a node's class.
func NewTo(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, lanes, queueLen int) *Discipline {
	d := &Discipline{queueLen: max(queueLen, 1)}
	mtu := link.MTU()
	d.lanes.Init(lanes, dispatch.Config{
		Lower: out, MaxPackets: d.queueLen, Clock: clock, QueueOnly: true,
		Size: func(pkt *stack.PacketBuffer) uint64 { return gso.ReceivedWireSize(pkt, mtu) },
	})
	d.lanes.Start()
	return d
}

// Enqueue queues pkt on the lane hash selects: the receive path's
// WritePacket.
func (d *Discipline) Enqueue(pkt *stack.PacketBuffer, hash uint32) tcpip.Error {
	return d.lanes.Lane(hash).Enqueue(pkt)
}
