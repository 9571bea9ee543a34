package mmlink

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/hrtimer"
)

// Discipline is an mmlink as a NIC's qdisc (`--qdisc=mmlink`), or on the
// receive path (`--qdisc-ingress=mmlink`, mm-link's downlink): one lane
// over a Queue, which tells the lane when its next packet leaves.
type Discipline struct {
	dispatch.OneLane
	q *Queue
	// frame is the largest packet the lane takes whole, the rest cut
	// into segments (0: any): the link's frame on the send path.
	frame uint32
}

var _ qdisc.Discipline = (*Discipline)(nil)

// New returns an mmlink on lower, timed by clock, its trace starting now,
// and starts its dispatcher. A host-GSO packet is cut into its segments
// (gso.Split, as tbf cuts one larger than its bucket), so that each
// segment leaves at its own opportunity, as the separate packets it is
// on the wire do through mahimahi.
func New(lower stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if lower == nil || clock == nil {
		return nil, fmt.Errorf("mmlink: no lower link endpoint or clock")
	}
	var frame uint32 // the largest packet the lane takes whole; 0: any
	if mtu := lower.MTU(); mtu != 0 {
		frame = mtu + uint32(lower.MaxHeaderLength())
	}
	d, err := start(dispatch.Config{Lower: lower, MaxPacketBytes: frame}, lower.MTU(), clock, cfg)
	if err != nil {
		return nil, err
	}
	d.frame = frame
	return d, nil
}

// NewTo is New on the receive path (package ingress): what leaves goes to
// out, a link's delivering goroutine only queues, and a packet GRO merged
// is charged as the segments it was on the link (it leaves, whole, at the
// opportunity that carries its last segment's last byte).
func NewTo(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if out == nil || link == nil || clock == nil {
		return nil, fmt.Errorf("mmlink: no link endpoint or clock")
	}
	return start(dispatch.Received(out, link), link.MTU(), clock, cfg)
}

// start builds the mmlink with lane's lower link and starts its
// dispatcher.
func start(lane dispatch.Config, mtu uint32, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	now := int64(clock.NowMonotonic().Sub(tcpip.MonotonicTime{}))
	q, err := NewQueue(cfg, mtu, now)
	if err != nil {
		return nil, err
	}
	d := &Discipline{q: q}
	// A trace's opportunities are a ms or less apart: its lane wakes for
	// them to the tens of microseconds, where the runtime's timers are a
	// millisecond coarse (hrtimer), as netem's does.
	lane.MaxPackets, lane.Queue, lane.Clock = 1, q, hrtimer.New(clock)
	dispatch.StartOne(&d.OneLane, lane)
	return d, nil
}

// Change puts cfg in force on the running link (Queue.Change): a new
// trace starts now; the packets held stay.
func (d *Discipline) Change(cfg Config) error {
	l := d.Lane()
	var err error
	l.Locked(func() { err = d.q.Change(cfg, l.Now()) })
	l.Wake()
	return err
}

// Config returns the configuration in force.
func (d *Discipline) Config() Config {
	return dispatch.Read(&d.OneLane, func() Config { return d.q.Config() })
}

// String describes the qdisc as `tc qdisc show` does.
func (d *Discipline) String() string {
	return dispatch.Read(&d.OneLane, func() string { return d.q.String() })
}

// Show implements qdisc.Shower: the link's line, its counters and its
// opportunities; under a ceiling, the ceiling's tbf over it.
func (d *Discipline) Show() qdisc.Showing {
	s := qdisc.Showing{Stats: d.Stats()}
	d.Lane().Locked(func() {
		s.Kind, s.Options = qdisc.SplitKind(d.q.String())
		s.XStats = d.q.TCXStats()
	})
	return qdisc.Gated(d.Gate(), s)
}
