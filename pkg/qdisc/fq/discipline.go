package fq

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
)

// Discipline is fq as a NIC's qdisc (`--qdisc=fq`): one lane over a
// Queue. Under a ceiling of its lower link's (a node's class), its flows
// share what the ceiling lets through as under a tbf.
type Discipline struct {
	dispatch.OneLane
	q *Queue
}

var _ qdisc.Discipline = (*Discipline)(nil)

// New returns fq on lower, timed by clock, and starts its dispatcher.
func New(lower stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if lower == nil || clock == nil {
		return nil, fmt.Errorf("fq: no lower link endpoint or clock")
	}
	return start(dispatch.Config{Lower: lower}, lower, clock, cfg)
}

// NewTo is New on the receive path (package ingress): what leaves goes to
// out, a link's delivering goroutine only queues, and a packet GRO merged
// is charged as the segments it was on the link.
func NewTo(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if out == nil || link == nil || clock == nil {
		return nil, fmt.Errorf("fq: no link endpoint or clock")
	}
	return start(dispatch.Received(out, link), link, clock, cfg)
}

// start builds fq for link's packets with lane's lower link and starts
// its dispatcher.
func start(lane dispatch.Config, link stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	q, err := NewQueue(cfg, link.MTU()+uint32(link.MaxHeaderLength()), nil)
	if err != nil {
		return nil, err
	}
	d := &Discipline{q: q}
	lane.MaxPackets, lane.Queue, lane.Clock = 1, q, clock
	dispatch.StartOne(&d.OneLane, lane)
	return d, nil
}

// Config returns the configuration in force.
func (d *Discipline) Config() Config {
	return dispatch.Read(&d.OneLane, func() Config { return d.q.Config() })
}

// Change puts cfg in force on the running qdisc, as fq_change does: the
// packets queued stay (past a lower limit, the next packet to arrive
// makes room from the longest flows).
func (d *Discipline) Change(cfg Config) error {
	var err error
	d.Lane().Locked(func() { err = d.q.Change(cfg) })
	return err
}

// SplitGSOAt cuts host-GSO packets of more than maxWire bytes on the wire
// as they leave (0: never): for a ceiling below the qdisc (a node's
// class), about a millisecond of its rate.
func (d *Discipline) SplitGSOAt(maxWire uint64) {
	d.Lane().Locked(func() { d.q.SplitGSOAt(maxWire) })
}

// String describes the qdisc as `tc qdisc show` does.
func (d *Discipline) String() string { return d.Config().show() }

// Show implements qdisc.Shower: fq's line, its counters and its own.
func (d *Discipline) Show() qdisc.Showing {
	s := qdisc.Showing{Stats: d.Stats()}
	d.Lane().Locked(func() { s.XStats = d.q.TCXStats() })
	s.Kind, s.Options = qdisc.SplitKind(d.String())
	return qdisc.Gated(d.Gate(), s)
}
