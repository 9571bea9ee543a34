package htb

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Classifier picks a packet's class: *classify.Classifier is one.
type Classifier interface {
	Classify(protocol tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) uint32
}

// Tree is an htb qdisc's classes and its direct queue: a qdisc.Shaper, not
// safe for concurrent use (its lane's lock guards it).
type Tree struct{}

var _ qdisc.Shaper = (*Tree)(nil)

// NewTree returns the tree cfg describes, its buckets full at now (ns), that
// classifies packets with c (nil: a classify.Classifier of cfg.Rules).
func NewTree(cfg Config, c Classifier, now int64) (*Tree, error) { panic("htb: WIP") }

// Warnings returns what Linux would warn about the configuration: a
// quantum computed from the rate that was clamped.
func (t *Tree) Warnings() []string { panic("htb: WIP") }

// Enqueue implements qdisc.Queue.Enqueue (htb_enqueue).
func (t *Tree) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool { panic("htb: WIP") }

// Peek implements qdisc.Queue.Peek: it dequeues (charging the classes) and
// keeps the packet for the next Dequeue, as qdisc_peek_dequeued does.
func (t *Tree) Peek(now int64, sizes []uint32, arrived []int64) int { panic("htb: WIP") }

// Dequeue implements qdisc.Queue.Dequeue (htb_dequeue).
func (t *Tree) Dequeue(now int64) (*stack.PacketBuffer, uint32, bool) { panic("htb: WIP") }

// NextEvent implements qdisc.Shaper.NextEvent.
func (t *Tree) NextEvent() int64 { panic("htb: WIP") }

// Purge implements qdisc.Queue.Purge.
func (t *Tree) Purge() (int, uint64) { panic("htb: WIP") }

// Len implements qdisc.Queue.Len.
func (t *Tree) Len() (int, uint64) { panic("htb: WIP") }

// Drops implements qdisc.Queue.Drops.
func (t *Tree) Drops() uint64 { panic("htb: WIP") }

// ChangeClass changes the class cls.ID in place at now, as
// htb_change_class does for an existing class: rate, ceil, burst, cburst,
// prio, quantum, overhead and mpu take effect; its tokens, its queue and
// its place in the tree stay.
func (t *Tree) ChangeClass(cls ClassConfig, now int64) error { panic("htb: WIP") }

// Classes returns every class's statistics, in the order of cfg.Classes.
func (t *Tree) Classes() []ClassStats { panic("htb: WIP") }

// DirectPackets returns how many packets went through the direct queue
// (tc's direct_packets_stat).
func (t *Tree) DirectPackets() uint64 { panic("htb: WIP") }
