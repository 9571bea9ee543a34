package netem

import (
	"fmt"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/hrtimer"
)

// Discipline is netem as a NIC's qdisc (`--qdisc=netem`), or on the
// receive path (`--qdisc-ingress=netem`, Linux's ifb + netem): one lane
// over a Queue, which tells the lane when its next packet is due.
type Discipline struct {
	dispatch.OneLane
	q *Queue
	// orphan is q.orphans(), kept for the packet path (orphan.go).
	orphan atomic.Bool
}

var _ qdisc.Discipline = (*Discipline)(nil)

// New returns netem on lower, timed by clock, and starts its dispatcher.
func New(lower stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if lower == nil || clock == nil {
		return nil, fmt.Errorf("netem: no lower link endpoint or clock")
	}
	return start(dispatch.Config{Lower: lower}, clock, cfg,
		path{txOffload: lower.Capabilities()&stack.CapabilityTXChecksumOffload != 0})
}

// NewTo is New on the receive path (package ingress): what leaves goes to
// out, a link's delivering goroutine only queues, and a packet GRO merged
// is charged as the segments it was on the link.
func NewTo(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if out == nil || link == nil || clock == nil {
		return nil, fmt.Errorf("netem: no link endpoint or clock")
	}
	return start(dispatch.Received(out, link), clock, cfg, path{rx: true, mtu: link.MTU()})
}

// start builds netem on path with lane's lower link and starts its
// dispatcher.
func start(lane dispatch.Config, clock tcpip.Clock, cfg Config, p path) (*Discipline, error) {
	q, err := NewQueue(cfg)
	if err != nil {
		return nil, err
	}
	q.path = p
	d := &Discipline{q: q}
	d.orphan.Store(q.orphans())
	// netem's delays wake its lane to the tens of microseconds, where
	// the runtime's timers are a millisecond coarse (hrtimer).
	lane.MaxPackets, lane.Queue, lane.Clock = 1, q, hrtimer.New(clock)
	// The clock is set before the lane reads ArrivalBlind (Init), which
	// reports true only for a Queue that has one.
	q.clock = func() int64 { return d.Lane().Now() }
	dispatch.StartOne(&d.OneLane, lane)
	return d, nil
}

// WritePacket implements stack.QueueingDiscipline.WritePacket.
func (d *Discipline) WritePacket(pkt *stack.PacketBuffer) tcpip.Error {
	return d.enqueue(pkt)
}

// Stats returns the tc -s counters.
func (d *Discipline) Stats() qdisc.Stats {
	s := d.OneLane.Stats()
	d.Lane().Locked(func() { s.Requeues += d.q.Requeues() })
	return s
}

// Change puts cfg in force on the running qdisc, as netem_change does
// (Queue.Change): the packets held keep their times to send.
func (d *Discipline) Change(cfg Config) error {
	l := d.Lane()
	var err error
	l.Locked(func() {
		err = d.q.Change(cfg, l.Now())
		d.orphan.Store(d.q.orphans())
	})
	l.Wake()
	return err
}

// String describes the qdisc as `tc qdisc show` does.
func (d *Discipline) String() string {
	return dispatch.Read(&d.OneLane, func() string { return d.q.String() })
}

// Show implements qdisc.Shower: netem's line and its counters; under a
// ceiling, the ceiling's tbf over it.
func (d *Discipline) Show() qdisc.Showing {
	s := qdisc.Showing{Stats: d.Stats()}
	s.Kind, s.Options = qdisc.SplitKind(d.String())
	return qdisc.Gated(d.Gate(), s)
}
