package htb

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/packetbuf"
)

// Classifier picks a packet's class: *classify.Classifier is one.
type Classifier interface {
	Classify(protocol tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) uint32
}

// Tree is an htb qdisc's classes and its direct queue: a qdisc.Shaper, not
// safe for concurrent use (its lane's lock guards it).
type Tree struct {
	cfg      Config
	classes  []*class // in cfg.Classes' order
	byID     map[uint32]*class
	def      *class // the default leaf, nil: the direct queue
	warnings []string

	// Classification state (see chain.go). root is the root chain's
	// classifier, answering with indexes, unless custom, a Classifier
	// NewTree was given, answering with classids, replaces it; chains
	// are the inner classes' chains, by position in classes (nil: none);
	// settled is, for each answer of the root chain but directIndex,
	// where the packet goes when that needs no other chain (a leaf, or
	// the default for noClass), else 0: place's common case. pos is each
	// class's position + 1, defIndex the default leaf's (directIndex:
	// none), handle the qdisc's: all set by NewTree and never changed,
	// so that place may read them without the lock.
	root     *classify.Classifier
	custom   Classifier
	chains   []*classify.Classifier
	settled  []uint32
	pos      map[uint32]uint32
	defIndex uint32
	handle   uint32

	direct        packetbuf.Queue
	directPackets uint64

	// packets and bytes are queued in the direct queue and the leaves.
	packets int
	bytes   uint64
	// peeked is the packet a Peek dequeued, for the next Dequeue.
	peeked     *stack.PacketBuffer
	peekedSize uint32

	// streak, if not nil, is the leaf a dequeue at now takes from (see
	// dequeueStreak).
	streak *class

	// now is the time of the dequeue under way (sch_htb's q->now).
	now int64
	// next is when the last dequeue that found nothing due wants to be
	// called again.
	next int64
	// armed says the last dequeue found nothing due while packets waited:
	// an on-time watchdog would fire at next.
	armed bool
	// behind, if not 0, is the time of the last packet a late dequeue
	// sent, which the next one goes on from (see dequeueCatchingUp), and
	// slack how far back it goes at most (Config.Slack in ns, 0 for
	// NoSlack).
	behind     int64
	slack      int64
	overlimits uint64
	// blind is what ArrivalBlind reports.
	blind bool
	// levels are the levels that have classes, lowest first: dequeue
	// visits only these.
	levels []int
	// quotas says some class has (or had) a quota; quotaClasses are
	// those classes.
	quotas       bool
	quotaClasses []*class
	// activated is what Activated reports.
	activated bool
	// leafNext is the earliest NextEvent of the leaves that held their
	// packets back (qdisc.Shaper leaves: netem's delay) in the dequeue
	// under way, 0 for none (see shaperleaf.go).
	leafNext int64

	rowMask [MaxDepth]uint8
	rows    [MaxDepth][NumPrio]feed
	wait    [MaxDepth]waitQueue
}

var (
	_ qdisc.Shaper        = (*Tree)(nil)
	_ qdisc.Sorter        = (*Tree)(nil)
	_ qdisc.BatchDequeuer = (*Tree)(nil)
)

// NewTree returns the tree cfg describes, its buckets full at now (ns), that
// classifies packets with cfg.Rules and cfg.Chains, or, if c is not nil,
// with c in place of cfg.Rules (the root chain; cfg.Chains still apply).
func NewTree(cfg Config, c Classifier, now int64) (*Tree, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Tree{cfg: cfg, custom: c, byID: make(map[uint32]*class, len(cfg.Classes)), now: now, slack: int64(max(cfg.Slack, 0))}
	t.direct.Init(int(cfg.DirectQLen), 0)
	for _, cc := range cfg.Classes {
		cl := &class{id: cc.ID, tc: now, mode: CanSend, cfg: cc}
		if cc.Parent != 0 && cc.Parent != cfg.Handle {
			p, ok := t.byID[cc.Parent]
			if !ok {
				return nil, fmt.Errorf("htb: class %s: parent %s is not a class before it", classify.ClassID(cc.ID), classify.ClassID(cc.Parent))
			}
			cl.parent = p
			p.children++
		}
		t.byID[cc.ID] = cl
		t.classes = append(t.classes, cl)
	}
	// Levels, top down: a class with children is one below its parent (or
	// MaxDepth-1 at the top); a leaf is 0.
	for _, cl := range t.classes {
		if cl.children == 0 {
			continue
		}
		top := MaxDepth
		if cl.parent != nil {
			top = cl.parent.level
		}
		cl.level = top - 1
		if cl.level <= 0 {
			return nil, fmt.Errorf("htb: class %s: tree is too deep (at most %d levels)", classify.ClassID(cl.id), MaxDepth)
		}
	}
	for _, cl := range t.classes {
		if w := cl.setParams(cl.cfg, cfg.R2Q); w != "" {
			t.warnings = append(t.warnings, w)
		}
		cl.tokens, cl.ctokens = cl.buffer, cl.cbuffer
		if q := cl.cfg.Quota; q != nil {
			t.quotas = true
			t.quotaClasses = append(t.quotaClasses, cl)
			cl.quotaEnd = now + int64(q.Period)
		}
		if cl.level == 0 {
			cl.leaf = cl.cfg.Leaf
			if cl.leaf == nil {
				q := &packetbuf.Queue{}
				q.Init(int(cfg.LeafLimit), 0)
				cl.leaf, cl.fifo = q, q
			}
		} else if cl.cfg.Leaf != nil {
			return nil, fmt.Errorf("htb: class %s has children: only a leaf class takes a qdisc", classify.ClassID(cl.id))
		}
	}
	t.blind = true
	var used [MaxDepth]bool
	for _, cl := range t.classes {
		used[cl.level] = true
		if _, ok := cl.leaf.(*packetbuf.Queue); cl.level == 0 && !ok {
			t.blind = false
		}
	}
	for l, u := range used {
		if u {
			t.levels = append(t.levels, l)
		}
	}
	if d, ok := t.byID[cfg.Default]; ok && d.level == 0 {
		t.def = d
	}
	if err := t.buildChains(); err != nil {
		return nil, err
	}
	return t, nil
}

// Warnings returns what Linux would warn about the configuration: a
// quantum computed from the rate that was clamped.
func (t *Tree) Warnings() []string { return append([]string(nil), t.warnings...) }

// Enqueue implements qdisc.Queue.Enqueue (htb_enqueue): the packet goes to
// its class's leaf, to the default class when no filter gives a leaf, or
// to the direct queue, unshaped, when there is no default leaf or a filter
// says so.
func (t *Tree) Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	return t.EnqueueSorted(pkt, size, now, t.place(pkt))
}

// Sort implements qdisc.Sorter.Sort: where Enqueue would put pkt, found
// by the filters (htb_classify), which the tree's lane runs before it
// takes its lock.
func (t *Tree) Sort(pkt *stack.PacketBuffer) uint32 { return t.place(pkt) }

// EnqueueSorted implements qdisc.Sorter.EnqueueSorted: Enqueue of a packet
// Sort placed at key.
func (t *Tree) EnqueueSorted(pkt *stack.PacketBuffer, size uint32, now int64, key uint32) bool {
	t.activated = false
	cl := t.leafAt(key)
	if t.streak != nil && (cl == nil || cl.prioActivity == 0) {
		t.streak = nil // the walk may now pick the direct queue or this class
	}
	if cl == nil {
		if !t.direct.Enqueue(pkt, size, now) {
			return false
		}
		t.directPackets++
		t.packets++
		t.bytes += uint64(size)
		t.activated = true
		return true
	}
	var ok bool
	if cl.fifo != nil { // the default pfifo, called directly: it drops nothing it took
		if ok = cl.fifo.Enqueue(pkt, size, now); ok {
			cl.leafPackets++
			t.packets++
			t.bytes += uint64(size)
		}
	} else {
		ok = cl.leaf.Enqueue(pkt, size, now)
		t.recount(cl)
	}
	if ok && cl.prioActivity == 0 {
		t.activate(cl)
		t.activated = cl.mode != CantSend
	} else if ok && cl.fifo == nil {
		t.activated = t.leafActivated(cl)
	}
	return ok
}

// ArrivalBlind implements qdisc.ArrivalBlind: the tree reads no arrival
// time, and its leaves none when they are all the default pfifo.
func (t *Tree) ArrivalBlind() bool { return t.blind }

// Activated implements qdisc.Shaper.Activated: the last Enqueue went to
// the direct queue, or made a class active that is not over its ceil (a
// class over it waits for its own event, which NextEvent already
// counts), or gave an active class's leaf a packet that may leave before
// the leaf's wait ends (a qdisc.Shaper leaf, leafActivated).
func (t *Tree) Activated() bool { return t.activated }

// recount brings the tree's count of a leaf's packets up to date after
// its qdisc was called: a qdisc may drop packets as they come or go.
func (t *Tree) recount(cl *class) {
	n, b := cl.leaf.Len()
	t.packets += n - cl.leafPackets
	t.bytes += b - cl.leafBytes
	cl.leafPackets, cl.leafBytes = n, b
}

// Peek implements qdisc.Queue.Peek: it dequeues (charging the classes) and
// keeps the packet for the next Dequeue, as qdisc_peek_dequeued does.
func (t *Tree) Peek(now int64, sizes []uint32, arrived []int64) int {
	if len(sizes) == 0 {
		return 0
	}
	if t.peeked == nil {
		pkt, size, ok := t.dequeueCatchingUp(now)
		if !ok {
			return 0
		}
		t.peeked, t.peekedSize = pkt, size
	}
	sizes[0], arrived[0] = t.peekedSize, qdisc.Unstamped
	return 1
}

// Dequeue implements qdisc.Queue.Dequeue (htb_dequeue).
func (t *Tree) Dequeue(now int64) (*stack.PacketBuffer, uint32, bool) {
	if t.inStreak(now) {
		return t.dequeueStreak()
	}
	return t.dequeueAt(now)
}

// DequeueBatch implements qdisc.BatchDequeuer.DequeueBatch: Dequeue
// after Dequeue at now, into pkts and sizes, until one hands over nothing
// or sizes is full; a streak's packets that change no mode go in runs
// (streakRun), of whatever lengths. Sizes past the count it returns may
// be written.
func (t *Tree) DequeueBatch(now int64, pkts *stack.PacketBufferList, sizes []uint32) int {
	n := 0
	for n < len(sizes) {
		var pkt *stack.PacketBuffer
		var size uint32
		var ok bool
		if t.inStreak(now) { // Dequeue, inlined
			if m := t.streakRun(pkts, sizes[n:]); m != 0 {
				n += m
				continue
			}
			pkt, size, ok = t.dequeueStreak()
		} else {
			pkt, size, ok = t.dequeueAt(now)
		}
		if !ok {
			break
		}
		pkts.PushBack(pkt)
		sizes[n] = size
		n++
	}
	return n
}

// inStreak reports whether a dequeue at now takes from the streak's leaf
// (see dequeueStreak): there is one, and no peeked packet, no event
// waited for and no late dequeue to catch up on comes before it.
func (t *Tree) inStreak(now int64) bool {
	return t.streak != nil && t.peeked == nil && !t.armed && t.behind == 0 && now <= t.now
}

// NextEvent implements qdisc.Shaper.NextEvent: the earliest time a class
// changes mode, as htb_dequeue arms its watchdog.
func (t *Tree) NextEvent() int64 { return t.next }

// Purge implements qdisc.Queue.Purge (htb_reset): every queued packet is
// released and every class made inactive; the buckets keep their tokens.
func (t *Tree) Purge() (int, uint64) {
	n, b := t.direct.Purge()
	if t.peeked != nil {
		t.peeked.DecRef()
		t.peeked = nil
		n++
		b += uint64(t.peekedSize)
	}
	for _, cl := range t.classes {
		if cl.level == 0 {
			ln, lb := cl.leaf.Purge()
			n, b = n+ln, b+lb
			t.recount(cl)
		}
		cl.prioActivity = 0
		cl.inner = [NumPrio]feed{}
		if cl.waiting {
			t.wait[cl.level].remove(cl)
		}
		cl.mode = CanSend
	}
	t.rows = [MaxDepth][NumPrio]feed{}
	t.rowMask = [MaxDepth]uint8{}
	t.packets, t.bytes = 0, 0
	t.armed, t.behind, t.streak = false, 0, nil
	return n, b
}

// Len implements qdisc.Queue.Len.
func (t *Tree) Len() (int, uint64) {
	if t.peeked != nil {
		return t.packets + 1, t.bytes + uint64(t.peekedSize)
	}
	return t.packets, t.bytes
}

// Drops implements qdisc.Queue.Drops: the direct queue's and the leaves'.
func (t *Tree) Drops() uint64 {
	d := t.direct.Drops()
	for _, cl := range t.classes {
		if cl.level == 0 {
			d += cl.leaf.Drops()
		}
	}
	return d
}

// ChangeClass changes the class cls.ID in place at now, as
// htb_change_class does for an existing class: rate, ceil, burst, cburst,
// prio, quantum, overhead and mpu take effect; its tokens, its queue, its
// mode and its place in the tree stay until its next charge or event.
func (t *Tree) ChangeClass(cls ClassConfig, now int64) error {
	cl, ok := t.byID[cls.ID]
	if !ok {
		return fmt.Errorf("htb: no class %s to change", classify.ClassID(cls.ID))
	}
	t.streak = nil // its prio may change
	if cls.Parent != 0 && cls.Parent != t.cfg.Handle && (cl.parent == nil || cl.parent.id != cls.Parent) ||
		(cls.Parent == 0 || cls.Parent == t.cfg.Handle) && cl.parent != nil {
		return fmt.Errorf("htb: class %s: a change cannot move a class to another parent", classify.ClassID(cls.ID))
	}
	if cls.Leaf != nil && cls.Leaf != cl.leaf {
		return fmt.Errorf("htb: class %s: a change keeps the class's qdisc", classify.ClassID(cls.ID))
	}
	cls = cls.WithDefaults()
	cls.Leaf = cl.cfg.Leaf
	next := t.cfg
	next.Classes = append([]ClassConfig(nil), t.cfg.Classes...)
	for i := range next.Classes {
		if next.Classes[i].ID == cls.ID {
			next.Classes[i] = cls
		}
	}
	if err := next.Validate(); err != nil {
		return err
	}
	t.cfg = next
	old := cl.cfg.Quota
	if w := cl.setParams(cls, t.cfg.R2Q); w != "" {
		t.warnings = append(t.warnings, w)
	}
	if cl.bound != unbounded {
		cl.applyBound() // a spent quota still bounds it
	}
	if cls.Quota != nil || old != nil {
		t.changeQuota(cl, old, now)
	} else if t.quotas {
		t.applyQuotas() // its rate may change how its siblings are fitted
	}
	return nil
}
