// Package fq is Linux's fq (sch_fq.c) as a qdisc.Queue, without its
// pacing: packets are queued per flow, and flows are served by deficit
// round robin, flows that come back from idle (new) before the others
// (old), with no AQM drop. Two departures from Linux: a flow that
// emptied within its credit is new again when its next packet comes
// before its turn on the old list (Linux makes it wait a round, which
// with 64 bulk flows at 10 Mbit/s is 150 ms); and past the queue's limit
// the longest flow loses its oldest packets, as in fq_codel, where Linux's
// fq refuses the arriving one (dropLongest). Under a tbf
// (tbf.GSOSplitter), a host-GSO packet is cut to about a millisecond of
// the rate as it reaches its flow's head, so that a sparse flow's packet
// does not wait behind 64 KiB; it counts as one packet against the limits
// until then. It is the child that keeps a sparse flow's packets from waiting behind bulk flows under a parent that shapes
// (tbf), once the bulk flows' own backlog is bounded by TCP small queues
// (docs/backpressure.md): each bulk flow then keeps a couple of packets
// queued, a drop would only cost them a retransmission, and CoDel's
// target is shorter than their turn among many flows at a low rate.
//
// Flows are told apart by the packet's flow hash, exactly (a map of 32-bit
// hashes, not a table of buckets as fq_codel's), as Linux's fq tells
// sockets apart: a sparse flow never shares a queue with a bulk one but
// by a 32-bit collision. A flow that empties is kept, detached, with its
// credit, and forgotten when it has been idle 3 s or more detached flows
// are kept than Limit (Linux's fq_gc), so memory is bounded by Limit.
package fq

import (
	"fmt"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// gcAge is how long a detached flow is kept (Linux's FQ_GC_AGE, 3 s).
const gcAge = int64(3 * time.Second)

// Classifier returns the flow hash of a packet.
type Classifier func(pkt *stack.PacketBuffer) uint32

// Queue is fq as a qdisc.Queue, for a dispatch lane or a tbf's child. It
// is not safe for concurrent use: its lane calls it under its own lock.
// It holds one reference to each packet it queues, released when the
// packet is dequeued by the caller's taking it, dropped or purged.
type Queue struct {
	cfg      Config
	mtu      uint32
	classify Classifier

	byHash map[uint32]int32
	flows  []flow
	free   []int32

	newFlows, oldFlows flowList
	// detached are the flows in no list, oldest detached first.
	detached flowList
	// longest orders the flows holding packets by their bytes.
	longest longest

	qlen    int
	backlog uint64

	// piece, if not 0, is the most wire bytes a host-GSO packet may take
	// when it leaves: a larger one is cut as it reaches its flow's head
	// (SplitGSOAt).
	piece uint64
	// splits counts the host-GSO packets cut.
	splits uint64
	// served counts the bytes dequeued, from every flow: the clock by
	// which a sparse flow earns its quantum.
	served uint64
	// byteLimit bounds the bytes queued (SetByteLimit; DefaultByteLimit
	// until set).
	byteLimit uint64

	peeked    entry
	hasPeeked bool

	// The counters tc -s shows.
	drops, flowsPlimit, gcFlows uint64
	inactive                    int
}

// entry is a queued packet.
type entry struct {
	pkt  *stack.PacketBuffer
	size uint32
	at   int64
}

// flow is one flow's queue and its place in a list.
type flow struct {
	hash    uint32
	packets []entry
	head    int
	// bytes is the size of the packets the flow holds.
	bytes uint64
	// heapPos is the flow's place in the queue's longest heap, from 1
	// (0: not in it, holding no packets).
	heapPos int32
	credit  int64
	// age is when the flow was detached (or created).
	age int64
	// earned is the queue's served when the flow last had a quantum added
	// to its credit (made, refilled or rotated): see Enqueue's sparse
	// case.
	earned     uint64
	list       *flowList
	prev, next int32
}

var _ qdisc.Queue = (*Queue)(nil)

// NewQueue returns an empty fq configured as cfg, on a link whose MTU
// plus header is mtu, that classifies packets with classify (nil:
// pkt.Hash if set, else a seeded hash of their headers).
func NewQueue(cfg Config, mtu uint32, classify Classifier) (*Queue, error) {
	cfg, err := cfg.withDefaults(mtu)
	if err != nil {
		return nil, err
	}
	if classify == nil {
		classify = flowhash.New().ByPacket()
	}
	q := &Queue{cfg: cfg, mtu: mtu, classify: classify, byHash: make(map[uint32]int32), byteLimit: DefaultByteLimit}
	q.newFlows.init()
	q.oldFlows.init()
	q.detached.init()
	return q, nil
}

// Config returns the configuration in force, defaults filled in.
func (q *Queue) Config() Config { return q.cfg }

// String describes the configuration as `tc qdisc show` does.
func (q *Queue) String() string { return q.cfg.show() }

// Change puts cfg (Linux's defaults for what it leaves unset) in force,
// as fq_change does; the packets queued stay.
func (q *Queue) Change(cfg Config) error {
	c, err := cfg.withDefaults(q.mtu)
	if err != nil {
		return err
	}
	q.cfg = c
	return nil
}

// Enqueue implements qdisc.Queue.Enqueue (fq_enqueue): past FlowLimit
// on the packet's flow the packet is refused and counted (flows_plimit).
// A flow coming back from idle joins the new flows, its credit refilled
// to a quantum if it was idle longer than RefillDelay. Past Limit packets
// (or the byte limit a parent set) room is made from the head of the
// longest flow (dropLongest), so every packet within its flow's limit is
// taken.
func (q *Queue) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	idx := q.lookup(q.classify(pkt), now)
	f := &q.flows[idx]
	if f.len() >= int(q.cfg.FlowLimit) {
		q.flowsPlimit++
		q.drops++
		return false
	}
	switch {
	case f.list == &q.detached:
		q.detached.remove(q.flows, idx)
		q.inactive--
		q.newFlows.pushBack(q.flows, idx)
		if now == qdisc.Unstamped || now-f.age > int64(q.cfg.RefillDelay) {
			f.credit = max(f.credit, int64(q.cfg.Quantum))
			f.earned = q.served
		}
	case f.list == &q.oldFlows && f.len() == 0 && f.credit > 0:
		// Sparse: the flow sent what it had within its credit and is
		// waiting, empty, for its turn on the old list to be detached.
		// Linux's fq leaves it there, so that with many bulk flows a
		// sparse flow's next packet waits a whole round; here it is new
		// again. It earns a quantum for each round's worth of bytes the
		// queue has served since it last had one (a quantum for each
		// active flow), as it would have on the old list: so it sends no
		// more than a quantum a round ahead of the others, and a flow
		// below its share (a request/response) never runs out.
		if q.served-f.earned >= uint64(q.cfg.Quantum)*uint64(q.newFlows.n+q.oldFlows.n) {
			f.credit = max(f.credit, int64(q.cfg.Quantum))
			f.earned = q.served
		}
		q.oldFlows.remove(q.flows, idx)
		q.newFlows.pushBack(q.flows, idx)
	}
	f.push(entry{pkt: pkt, size: size, at: now})
	q.longest.fix(q.flows, idx)
	q.qlen++
	q.backlog += uint64(size)
	for q.qlen > int(q.cfg.Limit) || q.backlog > q.byteLimit {
		if !q.dropLongest() {
			break
		}
	}
	return true
}

// dropLongest drops from the head of the flow holding the most bytes
// until the queue is back within its limits, or dropBatch packets are
// gone; it reports false if no flow holds a packet (only the peeked one is
// queued). Linux's fq refuses the arriving packet instead: a sender
// without small queues then loses the tail of every flow's window at
// once, learns it only when the queue in front has drained (1.2 s at 10
// Mbit/s with a tbf's default limit), and stalls every flow on its
// retransmission timer. A drop at the head is seen as soon as the flow's
// next packet arrives, and the flow that made the queue pays for it.
// fq_codel drops half the flow's bytes at once; dropping only what makes
// room kept gVisor's TCP (no small queues) at 2 drops in 10 s at 100
// Mbit/s where half the flow dropped 192.
func (q *Queue) dropLongest() bool {
	idx := q.longest.top()
	if idx == none {
		return false
	}
	f := &q.flows[idx]
	for n := 0; f.len() > 0 && n < dropBatch && (n == 0 || q.qlen > int(q.cfg.Limit) || q.backlog > q.byteLimit); n++ {
		e := f.pop()
		q.qlen--
		q.backlog -= uint64(e.size)
		q.drops++
		e.pkt.DecRef()
	}
	q.longest.fix(q.flows, idx)
	return true
}

// dropBatch is the most packets dropLongest drops from a flow at once
// (fq_codel's drop_batch_size).
const dropBatch = 64

// lookup returns the flow of hash, made (detached, with an initial
// quantum of credit) if there is none; it first forgets the detached
// flows idle past gcAge, and the oldest detached one if more than Limit
// are kept.
func (q *Queue) lookup(hash uint32, now int64) int32 {
	if idx, ok := q.byHash[hash]; ok {
		return idx
	}
	for d := q.detached.head; d != none; d = q.detached.head {
		f := &q.flows[d]
		if q.inactive <= int(q.cfg.Limit) && (now == qdisc.Unstamped || now-f.age < gcAge) {
			break
		}
		q.forget(d)
	}
	var idx int32
	if n := len(q.free); n > 0 {
		idx, q.free = q.free[n-1], q.free[:n-1]
	} else {
		q.flows = append(q.flows, flow{})
		idx = int32(len(q.flows) - 1)
	}
	q.flows[idx] = flow{hash: hash, credit: int64(q.cfg.InitialQuantum), age: now, earned: q.served, packets: q.flows[idx].packets[:0]}
	q.byHash[hash] = idx
	q.detached.pushBack(q.flows, idx)
	q.inactive++
	return idx
}

// forget drops a detached flow from the table (fq_gc).
func (q *Queue) forget(idx int32) {
	q.detached.remove(q.flows, idx)
	q.inactive--
	delete(q.byHash, q.flows[idx].hash)
	q.free = append(q.free, idx)
	q.gcFlows++
}

// Dequeue implements qdisc.Queue.Dequeue (fq_dequeue without pacing).
func (q *Queue) Dequeue(now int64) (*stack.PacketBuffer, uint32, bool) {
	e, ok := q.take(now)
	if ok {
		q.qlen--
		q.backlog -= uint64(e.size)
	}
	return e.pkt, e.size, ok
}

// take returns the next packet off its flow, leaving qlen and backlog to
// the caller.
func (q *Queue) take(now int64) (entry, bool) {
	if q.hasPeeked {
		q.hasPeeked = false
		return q.peeked, true
	}
	for {
		list := &q.newFlows
		if list.empty() {
			list = &q.oldFlows
			if list.empty() {
				return entry{}, false
			}
		}
		idx := list.head
		f := &q.flows[idx]
		if f.credit <= 0 {
			f.credit += int64(q.cfg.Quantum)
			f.earned = q.served
			list.remove(q.flows, idx)
			q.oldFlows.pushBack(q.flows, idx)
			continue
		}
		if f.len() == 0 {
			// A new flow goes through the old list once, so that flows
			// that come and go do not starve the old ones; an old one
			// is detached.
			list.remove(q.flows, idx)
			if list == &q.newFlows && !q.oldFlows.empty() {
				q.oldFlows.pushBack(q.flows, idx)
			} else {
				f.age = now
				q.detached.pushBack(q.flows, idx)
				q.inactive++
			}
			continue
		}
		e := f.pop()
		if q.piece != 0 && e.size > uint32(min(q.piece, 1<<32-1)) {
			e = q.cut(f, e)
		}
		q.longest.fix(q.flows, idx)
		f.credit -= int64(e.size)
		q.served += uint64(e.size)
		return e, true
	}
}

// DefaultByteLimit bounds the bytes fq queues where no parent sets a
// limit (fq as a kind of its own, a tbf with no ceiling), as fq_codel's
// memory_limit does by default: its packet limits alone would let 10000
// host-GSO packets of 64 KiB, 640 MiB, wait.
const DefaultByteLimit = 32 << 20

// MaxSlack implements tbf.SlackBounder: a tbf's timer may wake at most a
// millisecond late over fq, which is what a sparse flow's packet, next
// to leave, would otherwise wait (the default Slack is 8 ms).
func (q *Queue) MaxSlack() time.Duration { return time.Millisecond }

// SetByteLimit implements tbf.ByteLimiter: past bytes queued (0:
// DefaultByteLimit), room is made from the longest flow, as past Limit.
func (q *Queue) SetByteLimit(bytes uint64) {
	if bytes == 0 {
		bytes = DefaultByteLimit
	}
	q.byteLimit = bytes
}

// SplitGSOAt implements tbf.GSOSplitter: host-GSO packets of more than
// maxWire bytes on the wire are cut to fit as they leave (0: never).
func (q *Queue) SplitGSOAt(maxWire uint64) { q.piece = maxWire }

// cut cuts e, just taken off f's head, into pieces of at most q.piece
// wire bytes (gso.Split), puts all but the first back at f's head and
// returns the first. Each piece holds e's packet until released, so that
// its sender sees it leave with the last piece. A packet Split cannot
// cut (not host GSO, or malformed) leaves whole.
func (q *Queue) cut(f *flow, e entry) entry {
	if gso.Segments(e.pkt) <= 1 {
		return e
	}
	pieces, err := gso.Split(e.pkt, q.piece)
	if err != nil || len(pieces) < 2 {
		for _, p := range pieces {
			p.DecRef()
		}
		return e
	}
	e.pkt.DecRef() // the pieces hold it now
	q.splits++
	rest := make([]entry, 0, len(pieces)-1)
	var total uint64
	for i, p := range pieces {
		size := uint32(min(gso.WireSize(p), 1<<32-1))
		total += uint64(size)
		if i > 0 {
			rest = append(rest, entry{pkt: p, size: size, at: e.at})
		}
	}
	first := entry{pkt: pieces[0], size: uint32(min(gso.WireSize(pieces[0]), 1<<32-1)), at: e.at}
	f.pushFront(rest)
	// The pieces are queued, and counted, in e's place; the caller
	// takes the first off the counts.
	q.qlen += len(rest)
	q.backlog = q.backlog - uint64(e.size) + total
	return first
}

// Peek implements qdisc.Queue.Peek: fq decides at dequeue time which flow
// sends, so it takes the next packet off its flow and keeps it, counted,
// for the next Dequeue (Linux's qdisc_peek_dequeued).
func (q *Queue) Peek(now int64, sizes []uint32, arrived []int64) int {
	if len(sizes) == 0 {
		return 0
	}
	if !q.hasPeeked {
		e, ok := q.take(now)
		if !ok {
			return 0
		}
		q.peeked, q.hasPeeked = e, true
	}
	sizes[0], arrived[0] = q.peeked.size, q.peeked.at
	return 1
}

// Purge implements qdisc.Queue.Purge.
func (q *Queue) Purge() (int, uint64) {
	packets, bytes := q.qlen, q.backlog
	if q.hasPeeked {
		q.peeked.pkt.DecRef()
		q.hasPeeked = false
	}
	q.longest.reset(q.flows)
	for i := range q.flows {
		f := &q.flows[i]
		for f.len() > 0 {
			f.pop().pkt.DecRef()
		}
	}
	q.qlen, q.backlog = 0, 0
	return packets, bytes
}

// Len implements qdisc.Queue.Len.
func (q *Queue) Len() (int, uint64) { return q.qlen, q.backlog }

// Drops implements qdisc.Queue.Drops: the packets refused at their
// flow's FlowLimit and those dropped from the longest flow past Limit or
// the byte limit.
func (q *Queue) Drops() uint64 { return q.drops }

// TCXStats implements qdisc.XStatser, as `tc -s qdisc show` prints fq's
// counters (fq_print_xstats's first lines).
func (q *Queue) TCXStats() string {
	x := fmt.Sprintf("  flows %d (inactive %d throttled 0)\n  gc %d highprio 0 throttled 0 flows_plimit %d",
		len(q.byHash), q.inactive, q.gcFlows, q.flowsPlimit)
	if q.splits != 0 {
		x += fmt.Sprintf(" gso_split %d", q.splits)
	}
	return x
}

// len returns the packets the flow holds.
func (f *flow) len() int { return len(f.packets) - f.head }

// push appends e, first moving the packets down over those popped once
// they are half of the slice, so that a flow that never empties does not
// grow it.
func (f *flow) push(e entry) {
	if f.head > 0 && f.head >= len(f.packets)/2 {
		n := copy(f.packets, f.packets[f.head:])
		clear(f.packets[n:])
		f.packets, f.head = f.packets[:n], 0
	}
	f.packets = append(f.packets, e)
	f.bytes += uint64(e.size)
}

// pushFront puts es ahead of the flow's packets, in order.
func (f *flow) pushFront(es []entry) {
	for _, e := range es {
		f.bytes += uint64(e.size)
	}
	if f.head >= len(es) {
		f.head -= len(es)
		copy(f.packets[f.head:], es)
		return
	}
	f.packets = append(append(make([]entry, 0, len(es)+f.len()+4), es...), f.packets[f.head:]...)
	f.head = 0
}

// pop removes the flow's first packet; the slice is reused once empty.
func (f *flow) pop() entry {
	e := f.packets[f.head]
	f.packets[f.head] = entry{}
	f.head++
	f.bytes -= uint64(e.size)
	if f.head == len(f.packets) {
		f.packets, f.head = f.packets[:0], 0
	}
	return e
}
