package cake

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
)

// Discipline is cake on a NIC: its Sched, drained by one dispatch lane,
// as Linux's cake runs under its qdisc's one lock.
type Discipline struct {
	dispatch.OneLane
	sched *Sched
}

var _ stack.QueueingDiscipline = (*Discipline)(nil)

// New returns cake on lower, timed by clock, configured as cfg, and starts
// its dispatcher. An invalid cfg is a *ConfigError.
func New(lower stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if lower == nil || clock == nil {
		return nil, fmt.Errorf("cake: no lower link endpoint or clock")
	}
	return start(dispatch.Config{Lower: lower}, lower.MTU()+uint32(lower.MaxHeaderLength()), clock, cfg)
}

// NewTo returns cake on the receive path (package ingress): packets link
// delivers are queued and written to out at their departures, from the
// qdisc's own goroutine or timer only (dispatch.Config.QueueOnly). A
// packet GRO merged is charged as the segments it was on the wire. Set
// cfg.Ingress to count the packets cake drops as sent, as on a link's
// receiving end.
func NewTo(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if out == nil || link == nil || clock == nil {
		return nil, fmt.Errorf("cake: no link endpoint or clock")
	}
	return start(dispatch.Received(out, link), link.MTU()+uint32(link.MaxHeaderLength()), clock, cfg)
}

// start builds the queue and its lane as lane says, and starts it.
func start(lane dispatch.Config, mtu uint32, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	s, err := NewSched(cfg, mtu, nowNS(clock))
	if err != nil {
		return nil, err
	}
	d := &Discipline{sched: s}
	lane.MaxPackets, lane.Queue, lane.Clock = 1, s, clock
	dispatch.StartOne(&d.OneLane, lane)
	return d, nil
}

// nowNS reads clock in ns, on the lanes' scale.
func nowNS(c tcpip.Clock) int64 { return int64(c.NowMonotonic().Sub(tcpip.MonotonicTime{})) }

// MaxPacketBytes returns 0: cake passes a packet of any size.
func (d *Discipline) MaxPacketBytes() uint32 { return 0 }

// Change reconfigures the running cake in place (Sched.Change).
func (d *Discipline) Change(cfg Config) error {
	l := d.Lane()
	var err error
	l.Locked(func() { err = d.sched.Change(cfg) })
	l.Wake() // a faster rate may send sooner than the lane waits for
	return err
}

// Config returns the configuration in force.
func (d *Discipline) Config() Config {
	return dispatch.Read(&d.OneLane, func() Config { return d.sched.Config() })
}

// String describes the qdisc as `tc qdisc show` does.
func (d *Discipline) String() string { return "cake " + d.Config().TCLine() }

// XStats returns cake's own counters.
func (d *Discipline) XStats() XStats {
	return dispatch.Read(&d.OneLane, func() XStats { return d.sched.XStats() })
}

// TCStats is what `tc -s qdisc show` prints for cake: the qdisc's
// counters, then cake's own and each tin's.
func (d *Discipline) TCStats() string { return d.Stats().String() + "\n" + d.XStats().String() }

// Show implements qdisc.Shower: cake's line and its counters, then its
// tins' table, as `tc -s qdisc show` prints them.
func (d *Discipline) Show() qdisc.Showing {
	return qdisc.Showing{Kind: "cake", Options: d.Config().TCLine(), Stats: d.Stats(), XStats: d.XStats().String()}
}
