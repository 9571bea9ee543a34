package htb

import (
	"math/bits"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// lookupLeaf returns the leaf whose turn it is at prio in row, walking
// down the feeds' round-robin pointers from it (htb_lookup_leaf): a
// pointer past its feed's end is rewound to the start and its parent's
// pointer moved on, and a pointer whose class left the feed resumes at
// the next id.
func (t *Tree) lookupLeaf(row *feed, prio int) *class {
	if row.empty() {
		return nil
	}
	if cl := row.ptr; cl != nil && cl.level == 0 {
		row.lastID = 0 // the walk's first step, when the row points at a leaf
		return cl
	}
	var stk [MaxDepth]*feed
	sp := 0
	stk[0] = row
	for range 65535 {
		f := stk[sp]
		if f.ptr == nil && f.lastID != 0 {
			f.ptr = f.upper(f.lastID)
		}
		f.lastID = 0
		if f.ptr == nil {
			// At the right end: rewind, and move the parent on.
			if f.empty() {
				return nil
			}
			f.ptr = f.first()
			if sp > 0 {
				sp--
				if stk[sp].ptr == nil {
					return nil
				}
				stk[sp].advance()
			}
			continue
		}
		cl := f.ptr
		if cl.level == 0 {
			return cl
		}
		if sp+1 >= len(stk) {
			return nil
		}
		sp++
		stk[sp] = &cl.inner[prio]
	}
	return nil
}

// turnFeed is the feed whose pointer moves when leaf cl's turn at level
// ends: its parent's (it borrows) or its level's row.
func (t *Tree) turnFeed(cl *class, level, prio int) *feed {
	if level != 0 {
		return &cl.parent.inner[prio]
	}
	return &t.rows[0][prio]
}

// dequeueTree dequeues a packet from the leaves active at prio and level
// in round-robin by quantum (htb_dequeue_tree), charging the tree.
func (t *Tree) dequeueTree(prio, level int) (*stack.PacketBuffer, uint32, bool) {
	row := &t.rows[level&(MaxDepth-1)][prio&(NumPrio-1)] // both in range: no bounds check
	var start *class
	if cl := row.ptr; cl != nil && cl.level == 0 && !row.empty() {
		row.lastID = 0 // lookupLeaf's first step, when the row points at a leaf
		start = cl
	} else {
		start = t.lookupLeaf(row, prio)
	}
	cl := start
	for {
		if cl == nil {
			return nil, 0, false
		}
		if cl.leafPackets == 0 {
			// Emptied by its own qdisc's drops, or regrafted.
			t.deactivate(cl)
			if t.rowMask[level]&(1<<prio) == 0 {
				return nil, 0, false
			}
			next := t.lookupLeaf(row, prio)
			if cl == start {
				start = next
			}
			cl = next
			continue
		}
		var pkt *stack.PacketBuffer
		var size uint32
		var ok bool
		if cl.fifo != nil { // the default pfifo, called directly
			pkt, size, ok = t.fifoDequeue(cl)
		} else {
			pkt, size, ok = t.leafDequeue(cl)
		}
		if ok {
			if t.sent(cl, level, prio, size) && level == 0 && cl.fifo != nil && !t.quotas &&
				bits.TrailingZeros8(t.rowMask[0]) == prio { // no lower prio held its packets back
				t.streak = cl
			}
			return pkt, size, true
		}
		// A leaf that is not work-conserving held its packets back.
		t.leafHeld(cl)
		t.turnFeed(cl, level, prio).advance()
		cl = t.lookupLeaf(row, prio)
		if cl == start {
			return nil, 0, false
		}
	}
}

// dequeue is htb_dequeue at now: the direct queue first, then level by
// level (a class that can send at its own rate before one that borrows,
// and among borrowers those that borrow from nearer ancestors first),
// prio by prio, the leaf whose turn it is. When nothing may leave though
// packets wait, it sets next to when to look again.
func (t *Tree) dequeue(now int64) (*stack.PacketBuffer, uint32, bool) {
	if n, _ := t.direct.Len(); n != 0 {
		if pkt, size, ok := t.direct.Dequeue(now); ok {
			t.packets--
			t.bytes -= uint64(size)
			return pkt, size, true
		}
	}
	t.armed = false
	t.streak = nil
	if t.packets == 0 {
		return nil, 0, false
	}
	t.now = now
	t.leafNext = 0
	next := now + int64(5*time.Second)
	if t.quotas {
		next = min(next, t.renewDue())
	}
	for _, level := range t.levels { // the other levels have no class
		var event int64
		if len(t.wait[level].classes) != 0 {
			event = t.doEvents(level)
		}
		if event == 0 {
			event = now + int64(time.Second)
		}
		next = min(next, event)
		for m := t.rowMask[level]; m != 0; m &= m - 1 {
			if pkt, size, ok := t.dequeueTree(bits.TrailingZeros8(m), level); ok {
				return pkt, size, true
			}
		}
	}
	if len(t.levels) < MaxDepth {
		// A level without classes has no event: Linux's htb_dequeue
		// takes now + 1 s for it, so its watchdog fires at least once a
		// second while packets wait.
		next = min(next, now+int64(time.Second))
	}
	if t.leafNext != 0 {
		next = min(next, t.leafNext)
	}
	t.next, t.armed = next, true
	return nil, 0, false
}

// leafDequeue dequeues from leaf cl's qdisc, one other than the default
// pfifo (dequeueTree takes from that itself), at t.now, and brings the
// tree's count of its packets up to date: the qdisc may drop as packets
// leave.
func (t *Tree) leafDequeue(cl *class) (*stack.PacketBuffer, uint32, bool) {
	pkt, size, ok := cl.leaf.Dequeue(t.now)
	t.recount(cl)
	return pkt, size, ok
}

// fifoDequeue dequeues from leaf cl's default pfifo, which dequeueTree
// calls directly, and counts the packet out of the class and the tree.
func (t *Tree) fifoDequeue(cl *class) (*stack.PacketBuffer, uint32, bool) {
	pkt, size, ok := cl.fifo.Dequeue(t.now)
	if ok {
		t.countOut(cl, size)
	}
	return pkt, size, ok
}

// countOut counts a packet of size bytes that left leaf cl's default
// pfifo out of the class and the tree.
func (t *Tree) countOut(cl *class, size uint32) {
	cl.leafPackets--
	t.packets--
	t.bytes -= uint64(size)
}

// sent books a packet of size bytes that leaf cl sent at level and prio
// (the rest of htb_dequeue_tree once its leaf gave a packet): the class's
// counters and deficit, its turn, its deactivation once empty, and the
// charge up the tree (chargeStreak's, for the streak's leaf: t.streak is
// nil when dequeue's walk calls it). It reports whether the leaf keeps its turn: it has
// packets, can still send at its own rate, and its deficit is not spent.
func (t *Tree) sent(cl *class, level, prio int, size uint32) bool {
	cl.bytes += uint64(size)
	cl.packets++
	if size > cl.cfg.Burst {
		cl.gi++
	}
	turn := true
	cl.deficit[level] -= int32(size)
	if cl.deficit[level] < 0 {
		cl.deficit[level] += cl.quantum
		t.turnFeed(cl, level, prio).advance()
		turn = false
	}
	if cl.leafPackets == 0 {
		t.deactivate(cl)
		turn = false
	}
	if t.streak == cl {
		t.chargeStreak(cl, size)
	} else {
		t.charge(cl, level, size)
	}
	return turn && cl.mode == CanSend
}
