package fqcodel

import (
	"fmt"
	"strings"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/codel"
)

// Scheduler is FQ-CoDel's queue, as sch_fq_codel.c keeps it: packets hashed to
// flows, each flow a FIFO with its own CoDel state, flows served by
// deficit round robin from a list of new flows (served first) and one of
// old flows. It is not safe for concurrent use: the qdisc holding it locks.
// It holds one reference to each packet it queues and releases it when it
// drops the packet.
type Scheduler struct {
	cfg    Config
	params codel.Params
	stats  codel.Stats

	flows    []flow
	newFlows flowList
	oldFlows flowList

	// qlen, backlog and memory are the packets, bytes and packet memory
	// queued (the peeked packet counts in qlen and backlog, as in Linux).
	qlen    uint32
	backlog uint64
	memory  uint64

	// peeked is a packet taken off its flow by Peek and not yet by Pop.
	peeked    entry
	hasPeeked bool

	// The counters tc -s shows (drop_overlimit counts the drops at
	// enqueue, of which drop_overmemory over the memory limit).
	dropOverlimit  uint64
	dropOvermemory uint64
	newFlowCount   uint64
}

// entry is a queued packet and what fq_codel keeps of it.
type entry struct {
	pkt      *stack.PacketBuffer
	len      uint32
	mem      uint32
	enqueued codel.Time
	// at is the arrival in nanoseconds, for a parent's accounting.
	at int64
}

// codel.Packet, for CoDel's decisions on a flow's head.
func (e entry) Len() uint32          { return e.len }
func (e entry) Enqueued() codel.Time { return e.enqueued }
func (e entry) MarkCE() bool         { return markCE(e.pkt) }

// DSField implements codel.DSFielder, for the CE threshold's selector.
func (e entry) DSField() (uint8, bool) { return dsField(e.pkt) }

var _ codel.Packet = entry{}

// flow is one flow queue.
type flow struct {
	// owner is the Scheduler the flow is in (CoDel dequeues through the flow).
	owner   *Scheduler
	packets packets
	backlog uint32
	deficit int32
	vars    codel.Vars
	// The flow's place in the new or old list.
	list       *flowList
	prev, next int32
}

// NewScheduler returns an empty Scheduler configured as cfg on a link whose MTU
// plus header is mtu. It returns a *ConfigError for an invalid cfg.
func NewScheduler(cfg Config, mtu uint32) (*Scheduler, error) {
	cfg, err := cfg.withDefaults(mtu)
	if err != nil {
		return nil, err
	}
	q := &Scheduler{
		cfg:    cfg,
		params: paramsOf(cfg, mtu),
	}
	q.newFlows.init()
	q.oldFlows.init()
	return q, nil
}

// allocFlows makes the flow table, at the first packet: an idle
// fq_codel (a sandbox's NIC that never sends, a leaf never used) holds no
// flows, where Linux's fq_codel_init allocates them all.
func (q *Scheduler) allocFlows() {
	q.flows = make([]flow, q.cfg.Flows)
	for i := range q.flows {
		q.flows[i].owner = q
	}
}

// Config returns the configuration in force, defaults filled in.
func (q *Scheduler) Config() Config { return q.cfg }

// Enqueue queues pkt, of size bytes, arrived at now, on the flow for hash
// (reduced to the flow count as Linux's reciprocal_scale does), taking
// over the caller's reference. Past the packet or memory limit it drops
// from the head of the fattest flow, up to half its backlog and DropBatch
// packets; it reports how many packets that dropped.
func (q *Scheduler) Enqueue(pkt *stack.PacketBuffer, size uint32, hash uint32, now int64) (dropped int) {
	if q.flows == nil {
		q.allocFlows()
	}
	idx := int32((uint64(hash) * uint64(q.cfg.Flows)) >> 32)
	f := &q.flows[idx]
	e := entry{pkt: pkt, len: size, mem: uint32(pkt.MemSize()), enqueued: codel.TimeOf(now), at: now}
	f.packets.push(e)
	f.backlog += size
	q.backlog += uint64(size)
	if f.list == nil {
		q.newFlows.pushBack(q.flows, idx)
		q.newFlowCount++
		f.deficit = int32(q.cfg.Quantum)
	}
	q.memory += uint64(e.mem)
	q.qlen++
	overMemory := q.memory > uint64(q.cfg.MemoryLimit)
	if q.qlen <= q.cfg.Limit && !overMemory {
		return 0
	}
	dropped = q.dropFattest()
	q.dropOverlimit += uint64(dropped)
	if overMemory {
		q.dropOvermemory += uint64(dropped)
	}
	return dropped
}

// dropFattest is fq_codel_drop: it drops from the head of the flow with
// the largest backlog until half that backlog or DropBatch packets are
// gone, and tells the flow's CoDel to drop harder. Only flows that hold
// packets are candidates: with packets of 0 bytes every backlog may be 0
// (Linux's skbs are never empty, so it takes flow 0 unchecked). The caller
// has just queued a packet on a flow, so one holds packets.
func (q *Scheduler) dropFattest() int {
	idx := int32(none)
	var most uint32
	for i := range q.flows {
		if f := &q.flows[i]; f.packets.n > 0 && (idx == none || f.backlog > most) {
			most, idx = f.backlog, int32(i)
		}
	}
	if idx == none {
		return 0
	}
	f := &q.flows[idx]
	threshold := most >> 1
	var n, bytes uint32
	for f.packets.n > 0 {
		e := f.packets.pop()
		bytes += e.len
		q.memory -= uint64(e.mem)
		e.pkt.DecRef()
		n++
		if n >= q.cfg.DropBatch || bytes >= threshold {
			break
		}
	}
	f.vars.Count += n
	f.backlog -= bytes
	q.backlog -= uint64(bytes)
	q.qlen -= n
	return int(n)
}

// Dequeue is fq_codel_dequeue at now: the next packet to send, by deficit
// round robin over the new flows, then the old, each flow's head passed
// through CoDel (which may drop packets first). ok is false when nothing
// is queued. The caller gets the queue's reference.
func (q *Scheduler) Dequeue(now int64) (pkt *stack.PacketBuffer, size uint32, ok bool) {
	e, ok := q.dequeue(codel.TimeOf(now))
	return e.pkt, e.len, ok
}

// dequeue is Dequeue, returning the whole entry.
func (q *Scheduler) dequeue(now codel.Time) (entry, bool) {
	if q.hasPeeked {
		e := q.peeked
		q.hasPeeked = false
		q.qlen--
		q.backlog -= uint64(e.len)
		return e, true
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
		if f.deficit <= 0 {
			f.deficit += int32(q.cfg.Quantum)
			list.remove(q.flows, idx)
			q.oldFlows.pushBack(q.flows, idx)
			continue
		}
		e, ok := codel.Dequeue[entry](f, &f.vars, &q.params, &q.stats, now)
		if !ok {
			// Empty: a new flow goes to the old list once (so that old
			// flows are not starved by flows that come and go), an old one
			// leaves the lists.
			list.remove(q.flows, idx)
			if list == &q.newFlows && !q.oldFlows.empty() {
				q.oldFlows.pushBack(q.flows, idx)
			}
			continue
		}
		f.deficit -= int32(e.len)
		return e, true
	}
}

// Peek is Dequeue for a parent that may not send the packet yet (Linux's
// qdisc_peek_dequeued, as tbf uses it): the packet is taken off its flow,
// through CoDel, at now, but stays counted in the queue, and the next
// Dequeue returns it. arrived is when it was enqueued.
func (q *Scheduler) Peek(now int64) (size uint32, arrived int64, ok bool) {
	if !q.hasPeeked {
		e, ok := q.dequeue(codel.TimeOf(now))
		if !ok {
			return 0, 0, false
		}
		// Counted in the packets and bytes queued again, not in the
		// memory (Linux's qdisc_peek_dequeued).
		q.peeked = e
		q.hasPeeked = true
		q.qlen++
		q.backlog += uint64(e.len)
	}
	return q.peeked.len, q.peeked.at, true
}

// Dequeue, Drop and Backlog make a flow CoDel's queue: dequeuing from it
// updates the qdisc's counts too.
func (f *flow) Dequeue() (entry, bool) {
	if f.packets.n == 0 {
		return entry{}, false
	}
	e := f.packets.pop()
	f.backlog -= e.len
	f.owner.backlog -= uint64(e.len)
	f.owner.memory -= uint64(e.mem)
	f.owner.qlen--
	return e, true
}

func (f *flow) Drop(e entry) { e.pkt.DecRef() }

// Backlog is the qdisc's backlog, as Linux's codel_dequeue is given
// (sch->qstats.backlog), not the flow's.
func (f *flow) Backlog() uint32 { return uint32(min(f.owner.backlog, 1<<32-1)) }

// Len returns the packets and bytes queued.
func (q *Scheduler) Len() (packets uint32, bytes uint64) { return q.qlen, q.backlog }

// Purge drops everything queued and returns how many packets and bytes.
func (q *Scheduler) Purge() (packets int, bytes uint64) {
	packets, bytes = int(q.qlen), q.backlog
	if q.hasPeeked {
		q.peeked.pkt.DecRef()
		q.hasPeeked = false
	}
	for i := range q.flows {
		f := &q.flows[i]
		for f.packets.n > 0 {
			f.packets.pop().pkt.DecRef()
		}
		f.backlog = 0
	}
	q.qlen, q.backlog, q.memory = 0, 0, 0
	return packets, bytes
}

// XStats are fq_codel's own counters, as `tc -s qdisc` shows them.
type XStats struct {
	MaxPacket      uint32
	DropOverlimit  uint64
	DropOvermemory uint64
	NewFlowCount   uint64
	ECNMark        uint64
	// CEMark counts packets marked for waiting past Config.CEThreshold.
	CEMark uint64
	// CoDelDrops counts the packets CoDel dropped at dequeue (the rest of
	// tc's "dropped").
	CoDelDrops  uint64
	NewFlowsLen int
	OldFlowsLen int
	MemoryUsage uint64
}

// XStats returns the queue's counters.
func (q *Scheduler) XStats() XStats {
	return XStats{
		MaxPacket:      q.stats.MaxPacket,
		DropOverlimit:  q.dropOverlimit,
		DropOvermemory: q.dropOvermemory,
		NewFlowCount:   q.newFlowCount,
		ECNMark:        q.stats.ECNMarks,
		CEMark:         q.stats.CEMarks,
		CoDelDrops:     q.stats.Drops,
		NewFlowsLen:    q.newFlows.count(q.flows),
		OldFlowsLen:    q.oldFlows.count(q.flows),
		MemoryUsage:    q.memory,
	}
}

// Drops returns every packet the queue has dropped: at enqueue and by
// CoDel.
func (x XStats) Drops() uint64 { return x.DropOverlimit + x.CoDelDrops }

// String formats the counters as `tc -s qdisc` prints fq_codel's
// (fq_codel_print_xstats): ce_mark, memory_used and drop_overmemory only
// when not 0.
func (x XStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  maxpacket %d drop_overlimit %d new_flow_count %d ecn_mark %d", x.MaxPacket, x.DropOverlimit, x.NewFlowCount, x.ECNMark)
	if x.CEMark != 0 {
		fmt.Fprintf(&b, " ce_mark %d", x.CEMark)
	}
	if x.MemoryUsage != 0 {
		fmt.Fprintf(&b, " memory_used %d", x.MemoryUsage)
	}
	if x.DropOvermemory != 0 {
		fmt.Fprintf(&b, " drop_overmemory %d", x.DropOvermemory)
	}
	fmt.Fprintf(&b, "\n  new_flows_len %d old_flows_len %d", x.NewFlowsLen, x.OldFlowsLen)
	return b.String()
}
