package htb

import (
	"fmt"
	"strings"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/hrtimer"
)

// Discipline is an htb qdisc on a NIC: its Tree, drained by one dispatch
// lane, as Linux's htb runs under its root qdisc's one lock.
type Discipline struct {
	tree  *Tree
	lanes dispatch.Group
	// grafts are the words of the leaves' qdiscs its script grafted with
	// their words (Script.graftWords), which a change keeps: set by the
	// Kind as it builds d, never changed.
	grafts string
}

var _ stack.QueueingDiscipline = (*Discipline)(nil)

// New returns htb on lower, timed by clock, with the classes and filters
// cfg gives, and starts its dispatcher. Every invalid cfg is an error.
func New(lower stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if lower == nil || clock == nil {
		return nil, fmt.Errorf("htb: no lower link endpoint or clock")
	}
	return newDiscipline(lower, clock, cfg, nil)
}

// newDiscipline is New with the classifier c (nil: cfg.Rules').
func newDiscipline(lower stack.LinkEndpoint, clock tcpip.Clock, cfg Config, c Classifier) (*Discipline, error) {
	return start(dispatch.Config{Lower: lower}, clock, cfg, c)
}

// NewTo returns htb on the receive path (package ingress): packets that
// link delivers are queued in their classes, matched by their source
// (cfg.Direction must be classify.Ingress), and written to out at their
// departures, from the qdisc's own goroutine or timer only (a link's
// delivering goroutine only queues: see dispatch.Config.QueueOnly). A
// packet that GRO merged is charged as the segments it was on the wire,
// as on an ifb device.
func NewTo(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if out == nil || link == nil || clock == nil {
		return nil, fmt.Errorf("htb: no link endpoint or clock")
	}
	if cfg.Direction != classify.Ingress {
		return nil, fmt.Errorf("htb: the receive path's classes match packets by their source: Direction must be ingress")
	}
	return start(dispatch.Received(out, link), clock, cfg, nil)
}

// start builds the tree and its lane as lane says, and starts it.
func start(lane dispatch.Config, clock tcpip.Clock, cfg Config, c Classifier) (*Discipline, error) {
	t, err := NewTree(cfg, c, nowNS(clock))
	if err != nil {
		return nil, err
	}
	d := &Discipline{tree: t}
	if t.shaperLeaves() {
		clock = hrtimer.New(clock)
	}
	lane.MaxPackets, lane.Queue, lane.Clock = 1, t, clock
	d.lanes.Init(1, lane)
	d.lanes.Start()
	return d, nil
}

// Enqueue queues pkt, as WritePacket; hash is ignored (one lane). The
// receive path (package ingress) calls it.
func (d *Discipline) Enqueue(pkt *stack.PacketBuffer, _ uint32) tcpip.Error {
	return d.lanes.Lanes[0].Enqueue(pkt)
}

// Lanes returns 1: a tree is drained by one lane, as Linux's htb runs
// under one lock.
func (d *Discipline) Lanes() int { return 1 }

// MaxPacketBytes returns 0: htb passes a packet of any size, charging it
// whole (a packet longer than a class's burst overdraws its bucket).
func (d *Discipline) MaxPacketBytes() uint32 { return 0 }

// String describes the qdisc as `tc qdisc show` does, with the packets
// the direct queue has sent: "htb 1: r2q 10 default 0x20
// direct_packets_stat 0 direct_qlen 1000".
func (d *Discipline) String() string {
	var s string
	d.lanes.Lanes[0].Locked(func() { s = d.tree.cfg.show(d.tree.DirectPackets(), false) })
	return s
}

// nowNS reads clock in ns, on the lanes' scale.
func nowNS(c tcpip.Clock) int64 { return int64(c.NowMonotonic().Sub(tcpip.MonotonicTime{})) }

// WritePacket implements stack.QueueingDiscipline.WritePacket: it queues
// pkt in its class, taking a reference of its own.
func (d *Discipline) WritePacket(pkt *stack.PacketBuffer) tcpip.Error {
	return d.lanes.Lanes[0].Enqueue(pkt)
}

// Close implements stack.QueueingDiscipline.Close: what is queued is
// dropped and counted, and the dispatcher has exited when it returns.
func (d *Discipline) Close() { d.lanes.Close() }

// Stats returns the qdisc's tc -s counters (overlimits: the times a class
// went over its ceil, as Linux's htb counts them).
func (d *Discipline) Stats() qdisc.Stats {
	s := d.lanes.Stats()
	d.lanes.Lanes[0].Locked(func() { s.Overlimits = d.tree.Overlimits() })
	return s
}

// Classes returns every class's tc -s counters.
func (d *Discipline) Classes() []ClassStats {
	var c []ClassStats
	d.lanes.Lanes[0].Locked(func() { c = d.tree.Classes() })
	return c
}

// ChangeClass changes a class in place (see Tree.ChangeClass).
func (d *Discipline) ChangeClass(cls ClassConfig) error {
	l := &d.lanes.Lanes[0]
	var err error
	l.Locked(func() { err = d.tree.ChangeClass(cls, l.Now()) })
	l.Wake() // a class may send sooner than the lane waits for
	return err
}

// ResetQuota renews class id's quota now (Tree.ResetQuota).
func (d *Discipline) ResetQuota(id uint32) error {
	l := &d.lanes.Lanes[0]
	var err error
	l.Locked(func() { err = d.tree.ResetQuota(id, l.Now()) })
	l.Wake() // its classes may send now
	return err
}

// Quotas returns the quotas' counters, for a checkpoint (Tree.Quotas).
func (d *Discipline) Quotas() []QuotaState {
	var q []QuotaState
	d.lanes.Lanes[0].Locked(func() { q = d.tree.Quotas() })
	return q
}

// RestoreQuotas sets the quotas' counters from a checkpoint's
// (Tree.RestoreQuotas).
func (d *Discipline) RestoreQuotas(states []QuotaState) error {
	l := &d.lanes.Lanes[0]
	var err error
	l.Locked(func() { err = d.tree.RestoreQuotas(states, l.Now()) })
	l.Wake()
	return err
}

// Warnings returns what Linux would have warned about the configuration.
func (d *Discipline) Warnings() []string { return d.tree.Warnings() }

// Quiescent reports whether the dispatcher is idle or waiting. Tests use
// it.
func (d *Discipline) Quiescent() bool { return d.lanes.Quiescent() }

// TCStats is what `tc -s qdisc show` prints after the qdisc's line (its
// counters), then each leaf's grafted qdisc as `tc qdisc show` lists it
// ("qdisc fq_codel parent 1:10 limit 10240p ...", with no handle: a leaf
// here has none), then what `tc -s class show` prints, a blank line
// between classes.
func (d *Discipline) TCStats() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v\n", d.Stats())
	classes := d.Classes()
	for _, c := range classes {
		if kind, opts, _ := strings.Cut(c.Leaf, " "); kind != "" && kind != "pfifo" {
			fmt.Fprintf(&b, "qdisc %s parent %s %s\n", kind, classify.ClassID(c.ID), opts)
		}
	}
	for i, c := range classes {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(c.String())
	}
	return b.String()
}
