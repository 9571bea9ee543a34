// Package htbtest holds an htb tree to Linux's: a model of sch_htb written
// from net/sched/sch_htb.c (Linux 6.12) apart from package htb's code, the
// arrival patterns, and a lockstep harness that runs an htb.Tree and the
// model on the same arrivals, changes and times and compares every
// departure to the nanosecond, every refusal, and at the end every class's
// counters and tokens. The harness can also poll the tree more often than
// Linux dequeues (Poll), peek before every dequeue (PeekFirst), and enqueue
// the packets of one instant together (Batch): none of these may change a
// departure.
//
// The model keeps Linux's decisions with simpler structures: sorted slices
// for the id-ordered rows and feeds (with their round-robin pointers,
// last_ptr_id recovery and rewinding), and a sorted slice per level for
// the wait queue (equal keys in arrival order, as the rb-tree keeps them).
// It leaves out two things that do not change departures: htb_do_events'
// 2-jiffy bound (it processes every due event at once, as Linux does when
// not overloaded) and near_ev_cache (the cache is never later than a
// level's first pending event, so it only skips htb_do_events calls that
// would find nothing due; its staleness can make Linux's watchdog fire
// early, for a dequeue that sends nothing). htb_hysteresis is 0, as by
// default: modes change at exactly 0 tokens. Leaves are pfifos, or bfifos
// where the tree's leaf is a ByteFIFO. Where netqdisc's conventions differ
// from Linux's (times in ns from package rate, a prio above 7 refused), the
// model takes netqdisc's; see NewModel.
//
// The model's modes, constants and defaults are Linux's and tc's, defined
// here (linux.go: Mode, TC_HTB_MAXDEPTH, mbuffer, r2q, the quantum's
// clamps, tc's 1600-byte MTU, tx_queue_len), not package htb's: it takes
// htb.Config and htb.ClassConfig as its input, the vocabulary both share,
// and reports its own ClassStats; the harness maps the tree's statistics
// and modes to the model's, name by name, where it compares them
// (DiffClasses).
package htbtest

import (
	"fmt"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Departure is a packet of the model's: its sequence number, the class it
// was queued in (the qdisc's handle for the direct queue), its size and,
// once sent, when.
type Departure struct {
	Seq   uint64
	Class uint32
	Size  uint32
	At    int64
}

// Model is Linux's sch_htb for one configuration: classes with pfifo (or
// bfifo) leaves and the direct queue, drained by htb_dequeue, which the kernel
// calls after every enqueue and whenever the watchdog (an ideal hrtimer)
// fires.
type Model struct {
	handle, defcls        uint32
	r2q                   uint64
	directQLen, leafLimit int

	// classes are in the configuration's order; byID finds them.
	classes []*class
	byID    map[uint32]*class

	direct []Departure
	// qlen counts every packet queued, the direct queue's included
	// (sch->q.qlen).
	qlen int

	rows [maxDepth][numPrio]idList
	wait [maxDepth][]*class
	// pqSeq orders equal keys in the wait queues.
	pqSeq uint64

	overlimits, drops, directPkts uint64
	// purged counts the packets Purge dropped.
	purged uint64

	// Watchdog is when the watchdog fires next, -1 when it is not armed.
	Watchdog int64
	// Sent are the packets dequeued, in order.
	Sent []Departure
}

// NewModel returns the model of an htb configured as cfg, its buckets full
// at start (ns). It refuses what htb_change_class refuses (no rate, a
// classid not of the qdisc or taken, a missing parent, a tree too deep), a
// prio above 7 (which Linux takes as 7), and leaves other than the default
// pfifo and ByteFIFO.
func NewModel(cfg htb.Config, start int64) (*Model, error) {
	m := &Model{
		handle:     cfg.Handle,
		r2q:        uint64(cfg.R2Q),
		directQLen: int(cfg.DirectQLen),
		leafLimit:  int(cfg.LeafLimit),
		byID:       make(map[uint32]*class),
		Watchdog:   -1,
	}
	if m.handle == 0 {
		m.handle = 1 << 16
	}
	if m.handle&0xffff != 0 {
		return nil, fmt.Errorf("handle %#x is not major:0", m.handle)
	}
	if m.r2q == 0 {
		m.r2q = defaultR2Q
	}
	if m.directQLen == 0 {
		m.directQLen = txQueueLen
	}
	if m.leafLimit == 0 {
		m.leafLimit = txQueueLen
	}
	m.defcls = cfg.Default
	for _, cc := range cfg.Classes {
		if err := m.addClass(cc, start); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// addClass is htb_change_class for a new class: it starts as a CanSend
// leaf with full buckets, and its parent, if a leaf, becomes inner one
// level below its own parent (MaxDepth-1 at the top).
func (m *Model) addClass(cc htb.ClassConfig, now int64) error {
	if cc.ID&0xffff == 0 || cc.ID&0xffff0000 != m.handle {
		return fmt.Errorf("class %#x: not a class of qdisc %#x", cc.ID, m.handle)
	}
	if m.byID[cc.ID] != nil {
		return fmt.Errorf("class %#x: defined twice", cc.ID)
	}
	var bfifo bool
	var byteLimit uint64
	if cc.Leaf != nil {
		b, ok := cc.Leaf.(*ByteFIFO)
		if !ok {
			return fmt.Errorf("class %#x: the model has pfifo and ByteFIFO leaves only", cc.ID)
		}
		bfifo, byteLimit = true, b.Limit
	}
	var parent *class
	if cc.Parent != 0 && cc.Parent != m.handle {
		if parent = m.byID[cc.Parent]; parent == nil {
			return fmt.Errorf("class %#x: no parent %#x", cc.ID, cc.Parent)
		}
		if parent.parent != nil && parent.parent.level < 2 {
			return fmt.Errorf("class %#x: tree is too deep", cc.ID)
		}
	}
	cl := &class{id: cc.ID, parent: parent, mode: CanSend, bfifo: bfifo, byteLimit: byteLimit}
	if err := m.setParams(cl, cc); err != nil {
		return err
	}
	if parent != nil {
		if parent.isLeaf() {
			// No packet is queued while the tree is built: Linux's purge
			// and deactivation have nothing to do.
			parent.level = maxDepth - 1
			if parent.parent != nil {
				parent.level = parent.parent.level - 1
			}
		}
		parent.children++
	}
	cl.tokens, cl.ctokens, cl.tc = cl.buffer, cl.cbuffer, now
	m.classes = append(m.classes, cl)
	m.byID[cl.id] = cl
	return nil
}

// setParams is the part of htb_change_class that a new class and a change
// share: rates, buckets and, for a leaf, quantum and prio; tokens and mode
// stay.
func (m *Model) setParams(cl *class, cc htb.ClassConfig) error {
	if cc.Rate == 0 {
		return fmt.Errorf("class %#x: no rate", cc.ID)
	}
	// Linux takes a prio above the last as the last; netqdisc refuses it
	// (issue 28: every bound Linux has is refused with a clear error).
	if cc.Prio >= numPrio {
		return fmt.Errorf("class %#x: prio %d is above %d", cc.ID, cc.Prio, numPrio-1)
	}
	ceil := cc.Ceil
	if ceil == 0 {
		ceil = cc.Rate
	}
	burst, cburst := cc.Burst, cc.CBurst
	if burst == 0 {
		burst = uint32(cc.Rate/1e9) + tcMTU
	}
	if cburst == 0 {
		cburst = uint32(ceil/1e9) + tcMTU
	}
	cl.rateBPS, cl.ceilBPS, cl.burst, cl.cburst = cc.Rate, ceil, burst, cburst
	cl.rate = rate.New(cc.Rate).WithOverhead(cc.Overhead).WithMPU(cc.MPU)
	cl.ceil = rate.New(ceil).WithOverhead(cc.Overhead).WithMPU(cc.MPU)
	cl.buffer = int64(cl.rate.TimeNS(burst))
	cl.cbuffer = int64(cl.ceil.TimeNS(cburst))
	if cl.isLeaf() {
		q := cc.Rate / m.r2q
		if cc.Quantum != 0 {
			q = uint64(cc.Quantum)
		} else {
			q = max(minQuantum, min(q, maxQuantum))
		}
		cl.quantum = int64(q)
		cl.prio = cc.Prio
	}
	return nil
}

// Change is htb_change_class for an existing class at now: its rates,
// buckets and (a leaf's) quantum and prio become cc's; its tokens, tc,
// mode, queue and place in the tree stay. Linux dequeues nothing for it.
func (m *Model) Change(cc htb.ClassConfig, now int64) error {
	cl := m.byID[cc.ID]
	if cl == nil {
		return fmt.Errorf("class %#x: no such class", cc.ID)
	}
	if cc.Leaf != nil {
		return fmt.Errorf("class %#x: the model changes no leaf qdisc", cc.ID)
	}
	return m.setParams(cl, cc)
}

// classify is htb_classify's end for a packet that names class id: the
// direct queue (nil) for the qdisc's handle; the class if it is a leaf;
// else the default class if it is a leaf; else the direct queue.
func (m *Model) classify(id uint32) *class {
	if id == m.handle {
		return nil
	}
	if cl := m.byID[id]; cl != nil && cl.isLeaf() {
		return cl
	}
	if cl := m.byID[m.defcls]; cl != nil && cl.isLeaf() {
		return cl
	}
	return nil
}

// Enqueue is htb_enqueue at now of packet seq, of size bytes, that names
// class id; it reports whether the packet was queued. The caller then
// calls Dequeue, as the kernel does.
func (m *Model) Enqueue(now int64, seq uint64, id uint32, size uint32) bool {
	cl := m.classify(id)
	if cl == nil {
		if len(m.direct) >= m.directQLen {
			m.drops++
			return false
		}
		m.direct = append(m.direct, Departure{Seq: seq, Class: m.handle, Size: size})
		m.directPkts++
		m.qlen++
		return true
	}
	full := len(cl.queue) >= m.leafLimit
	if cl.bfifo {
		full = cl.backlog+uint64(size) > cl.byteLimit
	}
	if full {
		cl.drops++
		m.drops++
		return false
	}
	cl.queue = append(cl.queue, Departure{Seq: seq, Class: cl.id, Size: size})
	cl.backlog += uint64(size)
	m.activate(cl)
	m.qlen++
	return true
}

// ClassOf returns the class a packet that names id is queued in: a leaf,
// or the qdisc's handle for the direct queue.
func (m *Model) ClassOf(id uint32) uint32 {
	if cl := m.classify(id); cl != nil {
		return cl.id
	}
	return m.handle
}

// Len returns the packets and bytes queued.
func (m *Model) Len() (int, uint64) {
	var bytes uint64
	for _, d := range m.direct {
		bytes += uint64(d.Size)
	}
	for _, cl := range m.classes {
		bytes += cl.backlog
	}
	return m.qlen, bytes
}

// Drops returns the packets refused: by a full leaf or the full direct
// queue.
func (m *Model) Drops() uint64 { return m.drops }

// DirectPackets returns the packets queued in the direct queue
// (direct_packets_stat).
func (m *Model) DirectPackets() uint64 { return m.directPkts }

// Overlimits returns the times a class became CantSend (the qdisc's
// overlimits).
func (m *Model) Overlimits() uint64 { return m.overlimits }

// Classes returns every class as `tc -s class show` would, in the
// configuration's order. Giants and Requeues are 0, as in Linux.
func (m *Model) Classes() []ClassStats {
	out := make([]ClassStats, 0, len(m.classes))
	for _, cl := range m.classes {
		st := ClassStats{
			ID: cl.id, Parent: m.handle, Level: cl.level, Prio: cl.prio,
			Rate: cl.rateBPS, Ceil: cl.ceilBPS, Burst: cl.burst, CBurst: cl.cburst,
			Quantum: uint32(cl.quantum), Mode: cl.mode,
			Bytes: cl.bytes, Packets: cl.packets,
			Drops: cl.drops, Overlimits: cl.overlimits,
			BacklogBytes: cl.backlog, BacklogPackets: uint64(len(cl.queue)),
			Lends: cl.lends, Borrows: cl.borrows,
			Tokens: cl.tokens, CTokens: cl.ctokens,
		}
		if cl.parent != nil {
			st.Parent = cl.parent.id
		}
		out = append(out, st)
	}
	return out
}

// Handle returns the qdisc's handle (major:0).
func (m *Model) Handle() uint32 { return m.handle }

// Purge is htb_reset: every queued packet is dropped (not counted as a
// drop); every class leaves the feeds, rows and wait queues and is
// CanSend again, its tokens, tc and deficits kept; the round-robin
// pointers start over. It returns the packets and bytes dropped.
func (m *Model) Purge() (int, uint64) {
	n, bytes := m.Len()
	m.purged += uint64(n)
	m.direct = nil
	m.qlen = 0
	for _, cl := range m.classes {
		cl.queue, cl.backlog = nil, 0
		cl.feed = [numPrio]idList{}
		cl.prioActivity = 0
		cl.mode = CanSend
		cl.inPQ = false
	}
	m.rows = [maxDepth][numPrio]idList{}
	m.wait = [maxDepth][]*class{}
	m.Watchdog = -1
	return n, bytes
}

// Purged returns the packets Purge dropped.
func (m *Model) Purged() uint64 { return m.purged }
