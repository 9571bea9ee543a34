// Package fqcodel is FQ-CoDel (RFC 8290) as Linux's sch_fq_codel.c has it:
// packets hashed to flow queues by their own headers, new flows served
// before old ones by deficit round robin with a byte quantum, CoDel (RFC
// 8289, package codel) on each flow, drops from the fattest flow in
// batches when the packet or memory limit is passed, and ECN-capable
// packets marked CE instead of dropped. Linux's defaults, and every knob
// as a Config field with tc's name.
//
// It is the cure for the queue a shaper builds: alone (New) where the
// link itself is the bottleneck, or as a tbf's child (tbf.Config.Child, a
// Queue),
// where sparse flows (a ping, a request) no longer wait behind the bulk
// ones, and CoDel keeps each bulk flow's standing queue near Target.
//
// Where it differs from Linux:
//   - a packet's flow is pkt.Hash when the stack set one (gVisor's TCP
//     does, per connection, as Linux's TCP sets skb->hash from the
//     socket), and otherwise a hash of its addresses, protocol and ports
//     (package flowhash, seeded per qdisc), as Linux's flow dissector
//     computes for the rest (UDP, ICMP, ARP carry pkt.Hash 0);
//   - a packet's memory is its PacketBuffer's (MemSize), not an skb's
//     truesize;
//   - no external classifier.
//
// A running fq_codel changes in place as fq_codel_change changes it
// (Change): everything but its flows.
package fqcodel

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
)

// Discipline is fq_codel as a NIC's qdisc.
type Discipline struct {
	dispatch.OneLane
	child *Queue
}

var _ stack.QueueingDiscipline = (*Discipline)(nil)

// New returns fq_codel on lower, timed by clock, and starts its
// dispatcher. It returns a *ConfigError for an invalid cfg.
func New(lower stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if lower == nil || clock == nil {
		return nil, fmt.Errorf("fq_codel: no lower link endpoint or clock")
	}
	return start(dispatch.Config{Lower: lower}, lower, clock, cfg)
}

// NewTo is New on the receive path (package ingress): what leaves goes to
// out, a link's delivering goroutine only queues
// (dispatch.Config.QueueOnly), and a packet GRO merged is charged as the
// segments it was on link, as on an ifb device.
func NewTo(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if out == nil || link == nil || clock == nil {
		return nil, fmt.Errorf("fq_codel: no link endpoint or clock")
	}
	return start(dispatch.Received(out, link), link, clock, cfg)
}

// start builds fq_codel for link's packets with lane's lower link, and
// starts its dispatcher.
func start(lane dispatch.Config, link stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	c, err := NewQueue(cfg, link.MTU()+uint32(link.MaxHeaderLength()), nil)
	if err != nil {
		return nil, err
	}
	d := &Discipline{child: c}
	lane.MaxPackets, lane.Queue, lane.Clock = 1, c, clock
	dispatch.StartOne(&d.OneLane, lane)
	return d, nil
}

// XStats returns fq_codel's own counters.
func (d *Discipline) XStats() XStats {
	return dispatch.Read(&d.OneLane, func() XStats { return d.child.XStats() })
}

// TCStats is what `tc -s qdisc show` prints for the qdisc: its counters,
// then fq_codel's own.
func (d *Discipline) TCStats() string { return d.Stats().String() + "\n" + d.XStats().String() }

// Config returns the configuration in force, defaults filled in.
func (d *Discipline) Config() Config { return d.child.Config() }

// String describes the qdisc as `tc qdisc show` does.
func (d *Discipline) String() string {
	s := d.child.Config().String()
	if g := d.Gate(); g != nil {
		return fmt.Sprintf("%v; child %s", g, s)
	}
	return s
}

// Show implements qdisc.Shower: fq_codel's line and its counters, its
// own after them; with a ceiling set (SetCeiling), the ceiling's tbf at
// the root, fq_codel grafted under it (qdisc.Gated).
func (d *Discipline) Show() qdisc.Showing {
	s := qdisc.Showing{Stats: d.Stats(), XStats: d.XStats().String()}
	s.Kind, s.Options = qdisc.SplitKind(d.child.Config().String())
	return qdisc.Gated(d.Gate(), s)
}
