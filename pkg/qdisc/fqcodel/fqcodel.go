// Package fqcodel is FQ-CoDel (RFC 8290) as Linux's sch_fq_codel.c has it:
// packets hashed to flow queues by their own headers, new flows served
// before old ones by deficit round robin with a byte quantum, CoDel (RFC
// 8289, package codel) on each flow, drops from the fattest flow in
// batches when the packet or memory limit is passed, and ECN-capable
// packets marked CE instead of dropped. Linux's defaults, and every knob
// as a Config field with tc's name.
//
// It is the cure for the queue a shaper builds: alone (New) where the
// link itself is the bottleneck, or as a tbf's child (tbf.Config.FQCoDel),
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
//   - no external classifier and no ce_threshold.
package fqcodel

import (
	"fmt"
	"strings"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Classifier returns the flow hash of a packet (reduced to the flow count
// by fq_codel).
type Classifier func(pkt *stack.PacketBuffer) uint32

// Child is a Queue as a dispatch lane's queue (qdisc.Queue): fq_codel
// alone, or a tbf's child.
type Child struct {
	*Queue
	classify Classifier
}

var _ qdisc.Queue = (*Child)(nil)

// NewChild returns an fq_codel queue configured as cfg, on a link whose
// MTU plus header is mtu, that classifies packets with classify (nil:
// pkt.Hash if set, else a seeded hash of their headers).
func NewChild(cfg Config, mtu uint32, classify Classifier) (*Child, error) {
	q, err := NewQueue(cfg, mtu)
	if err != nil {
		return nil, err
	}
	if classify == nil {
		h := flowhash.New()
		classify = func(pkt *stack.PacketBuffer) uint32 {
			if pkt.Hash != 0 {
				return pkt.Hash
			}
			return h.Packet(pkt.NetworkProtocolNumber, pkt)
		}
	}
	return &Child{Queue: q, classify: classify}, nil
}

// Enqueue implements qdisc.Queue.Enqueue: fq_codel makes room by
// dropping from the fattest flow, so it takes every packet.
func (c *Child) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	c.Queue.Enqueue(pkt, size, c.classify(pkt), now)
	return true
}

// Peek implements qdisc.Queue.Peek: fq_codel decides at now which packet
// leaves next (CoDel may drop others on the way) and keeps it.
func (c *Child) Peek(now int64, sizes []uint32, arrived []int64) int {
	if len(sizes) == 0 {
		return 0
	}
	size, at, ok := c.Queue.Peek(now)
	if !ok {
		return 0
	}
	sizes[0], arrived[0] = size, at
	return 1
}

// Len implements qdisc.Queue.Len.
func (c *Child) Len() (int, uint64) {
	n, b := c.Queue.Len()
	return int(n), b
}

// Drops implements qdisc.Queue.Drops.
func (c *Child) Drops() uint64 { return c.dropOverlimit + c.stats.Drops }

// String describes the configuration as `tc qdisc show` does.
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fq_codel limit %dp flows %d quantum %d target %v interval %v memory_limit %s", c.Limit, c.Flows, c.Quantum, c.Target, c.Interval, rate.FormatSize(uint64(c.MemoryLimit)))
	if !c.NoECN {
		b.WriteString(" ecn")
	}
	fmt.Fprintf(&b, " drop_batch %d", c.DropBatch)
	return b.String()
}

// Discipline is fq_codel as a NIC's qdisc.
type Discipline struct {
	child *Child
	lanes dispatch.Group
}

var _ stack.QueueingDiscipline = (*Discipline)(nil)

// New returns fq_codel on lower, timed by clock, and starts its
// dispatcher. It returns a *ConfigError for an invalid cfg.
func New(lower stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if lower == nil || clock == nil {
		return nil, fmt.Errorf("fq_codel: no lower link endpoint or clock")
	}
	c, err := NewChild(cfg, lower.MTU()+uint32(lower.MaxHeaderLength()), nil)
	if err != nil {
		return nil, err
	}
	d := &Discipline{child: c}
	d.lanes.Init(1, dispatch.Config{Lower: lower, MaxPackets: 1, Queue: c, Clock: clock})
	d.lanes.Start()
	return d, nil
}

// WritePacket implements stack.QueueingDiscipline.WritePacket: it queues
// pkt, taking a reference of its own (fq_codel makes room by dropping
// from the fattest flow, so it refuses nothing but after Close).
func (d *Discipline) WritePacket(pkt *stack.PacketBuffer) tcpip.Error {
	return d.lanes.Lanes[0].Enqueue(pkt)
}

// Close implements stack.QueueingDiscipline.Close: what is queued is
// dropped and counted, and the dispatcher has exited when it returns.
func (d *Discipline) Close() { d.lanes.Close() }

// Stats returns the tc -s counters.
func (d *Discipline) Stats() qdisc.Stats { return d.lanes.Stats() }

// XStats returns fq_codel's own counters.
func (d *Discipline) XStats() XStats {
	var x XStats
	d.lanes.Lanes[0].Locked(func() { x = d.child.XStats() })
	return x
}

// TCStats is what `tc -s qdisc show` prints for the qdisc: its counters,
// then fq_codel's own.
func (d *Discipline) TCStats() string { return d.Stats().String() + "\n" + d.XStats().String() }

// Config returns the configuration in force, defaults filled in.
func (d *Discipline) Config() Config { return d.child.Config() }

// Quiescent reports whether the dispatcher is idle. Tests use it.
func (d *Discipline) Quiescent() bool { return d.lanes.Quiescent() }

// String describes the qdisc as `tc qdisc show` does.
func (d *Discipline) String() string {
	s := d.child.Config().String()
	if g := d.lanes.Gate(); g != nil {
		return fmt.Sprintf("%v; child %s", g, s)
	}
	return s
}

// SetCeiling sets a ceiling on the running fq_codel in place, as `tc
// qdisc replace ... root tbf` puts a tbf over it (see fifo's SetCeiling):
// gate (tbf.NewGate builds one; nil removes it) books the departures of
// what fq_codel hands over, and maxPacketBytes is the largest packet it
// passes.
func (d *Discipline) SetCeiling(gate dispatch.Gate, maxPacketBytes uint32) {
	d.lanes.SetGate(gate, maxPacketBytes)
}
