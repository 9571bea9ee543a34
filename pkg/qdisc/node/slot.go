package node

import (
	"fmt"
	"sync/atomic"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// A slot is one sandbox's class on a board, 16 words. The runtime writes
// its class (Join) before the sandbox starts; the sandbox writes the rest
// (Publish).
const slotWords = 16

// slot word indexes.
const (
	sOwner    = iota // the joiner's token; 0: free
	sClass           // classid<<32 | parent's classid
	sRate            // bytes a second guaranteed
	sCeil            // bytes a second at most
	sPrio            // prio<<32 | quantum
	sBeat            // when the sandbox last published, ns (CLOCK_MONOTONIC)
	sDemand          // bytes a second it wants (its ceil when backlogged)
	sShare           // bytes a second it holds itself to (its last Allocate)
	sBytes           // bytes sent
	sPackets         // packets sent
	sLended          // packets sent within its rate (tc's lended)
	sBorrowed        // packets sent past its rate (tc's borrowed)
	sTokens          // its rate bucket's tokens, bytes
	sPid             // the sandbox's process on the host (processID); 0: none given
)

// Leaf is a sandbox's class as a board holds it, with what it published.
type Leaf struct {
	Slot  int
	Class htb.ClassConfig
	// Beat is when it last published (ns); Demand, Share in bytes a
	// second; the counters as tc -s class show prints a leaf's.
	Beat                                     int64
	Demand, Share                            uint64
	Bytes, Packets, Lended, Borrowed, Tokens uint64
}

// slot returns slot i's words.
func (b *Board) slot(i int) []uint64 {
	off := headerWords + treeWords + i*slotWords
	return b.words[off : off+slotWords]
}

// Join claims a slot for a sandbox whose class is c (ID, Parent, Rate,
// Ceil, Prio, Quantum: a leaf under a class of the board's tree), owned
// by owner (a token not 0 that Publish and Leave must give), as of now:
// a free slot, or one whose sandbox has not published for stale ns (it
// died without leaving). It refuses a classid another live sandbox
// holds, a parent the tree lacks, and a guarantee that does not fit
// under the parent's rate with its other children's. A class whose
// minor is 0 gets AutoMinor plus its slot's index. The runtime calls it
// holding the board file's lock, so that two joins do not both fit.
func (b *Board) Join(c htb.ClassConfig, owner uint64, now, stale int64) (int, error) {
	return b.JoinProcess(c, owner, 0, now, stale)
}

// JoinProcess is Join for a sandbox whose process on the host is pid: a
// slot silent for stale ns is reclaimed only once that process is gone
// (exited, a zombie, or its pid since another process's: processAlive),
// so a sandbox idle long enough to stop publishing (Runner parks) keeps
// its slot and its guarantee: a join must fit beside it. It counts for
// no share meanwhile: to the others' sharing, an idle sandbox and a dead
// one are alike.
func (b *Board) JoinProcess(c htb.ClassConfig, owner uint64, pid int, now, stale int64) (int, error) {
	if owner == 0 {
		return 0, fmt.Errorf("node: a slot's owner token must not be 0")
	}
	tree, _, err := b.Tree()
	if err != nil {
		return 0, err
	}
	for i := range b.slots {
		w := b.slot(i)
		old := atomic.LoadUint64(&w[sOwner])
		if old != 0 && (atomic.LoadUint64(&w[sBeat])+uint64(stale) >= uint64(now) || processAlive(atomic.LoadUint64(&w[sPid]))) {
			continue
		}
		if c.ID&0xffff == 0 {
			c.ID |= AutoMinor + uint32(i)
		}
		if err := fits(tree, b.held(now, stale), c); err != nil {
			return 0, err
		}
		if !atomic.CompareAndSwapUint64(&w[sOwner], old, owner) {
			return 0, fmt.Errorf("node: slot %d was taken as it was joined: join holding the board file's lock", i)
		}
		for j := sClass; j < slotWords; j++ {
			atomic.StoreUint64(&w[j], 0)
		}
		atomic.StoreUint64(&w[sClass], uint64(c.ID)<<32|uint64(c.Parent))
		atomic.StoreUint64(&w[sRate], c.Rate)
		atomic.StoreUint64(&w[sCeil], c.Ceil)
		atomic.StoreUint64(&w[sPrio], uint64(c.Prio)<<32|uint64(c.Quantum))
		atomic.StoreUint64(&w[sShare], c.Rate)
		atomic.StoreUint64(&w[sPid], processID(pid))
		atomic.StoreUint64(&w[sBeat], uint64(now))
		return i, nil
	}
	if err := fits(tree, b.held(now, stale), c); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("node: every one of the board's %d slots holds a sandbox; format a larger board", b.slots)
}

// AutoMinor is the first minor of the classids a board gives: a class
// joined with minor 0 gets AutoMinor plus its slot.
const AutoMinor = 0x8000

// fits refuses c, a sandbox's class joining under tree beside the live
// leaves, where its classid is taken, its parent missing, or its rate
// does not fit in the parent's with the parent's other children's.
func fits(tree htb.Script, live []Leaf, c htb.ClassConfig) error {
	id, pid := classify.ClassID(c.ID), classify.ClassID(c.Parent)
	switch {
	case c.Rate == 0:
		return fmt.Errorf("node: class %s: give a rate (the bandwidth it is guaranteed)", id)
	case c.Ceil != 0 && c.Ceil < c.Rate:
		return fmt.Errorf("node: class %s: ceil %d bytes/s is below its rate %d", id, c.Ceil, c.Rate)
	}
	var parent *htb.ClassConfig
	var sum uint64
	for i, k := range tree.Classes {
		if k.ID == c.ID {
			return fmt.Errorf("node: class %s is the operator's; give the sandbox another classid", id)
		}
		if k.ID == c.Parent {
			parent = &tree.Classes[i]
		}
		if k.Parent == c.Parent {
			sum += k.Rate
		}
	}
	if parent == nil {
		return fmt.Errorf("node: the node's tree has no class %s to hang the sandbox's class from", pid)
	}
	for _, l := range live {
		if l.Class.ID == c.ID {
			return fmt.Errorf("node: class %s is taken by a running sandbox (slot %d)", id, l.Slot)
		}
		if l.Class.Parent == c.Parent {
			sum += l.Class.Rate
		}
	}
	if sum+c.Rate > parent.Rate {
		return fmt.Errorf("node: class %s guarantees %s of its rate %s to its children; a guarantee of %s does not fit (%s left)", pid, rate.FormatRate(sum), rate.FormatRate(parent.Rate), rate.FormatRate(c.Rate), rate.FormatRate(parent.Rate-min(sum, parent.Rate)))
	}
	return nil
}

// Overcommitted says, for each class of the tree whose children are
// guaranteed more than its rate (the operator lowered it under running
// sandboxes, or gave the tree such classes), by how much, in tc's words.
// Each child still gets its rate, as in Linux's htb, where a class with
// tokens of its own sends without asking its parent: the class then
// sends past its rate until sandboxes leave.
func (b *Board) Overcommitted(now, stale int64) ([]string, error) {
	tree, _, err := b.Tree()
	if err != nil {
		return nil, err
	}
	sums := map[uint32]uint64{}
	for _, k := range tree.Classes {
		sums[k.Parent] += k.Rate
	}
	for _, l := range b.held(now, stale) {
		sums[l.Class.Parent] += l.Class.Rate
	}
	var out []string
	for _, k := range tree.Classes {
		if sum := sums[k.ID]; sum > k.Rate {
			out = append(out, fmt.Sprintf("class %s guarantees %s to its children, past its rate %s: each still gets its rate, so it may send %s until sandboxes leave", classify.ClassID(k.ID), rate.FormatRate(sum), rate.FormatRate(k.Rate), rate.FormatRate(sum)))
		}
	}
	return out, nil
}

// Leave frees slot i, if owner still holds it.
func (b *Board) Leave(i int, owner uint64) bool {
	if i < 0 || i >= b.slots {
		return false
	}
	return atomic.CompareAndSwapUint64(&b.slot(i)[sOwner], owner, 0)
}

// Published is what a sandbox writes of its class each time it computes
// its share.
type Published struct {
	Demand, Share                            uint64
	Bytes, Packets, Lended, Borrowed, Tokens uint64
}

// Publish writes p to slot i as of now, if owner still holds it (a
// sandbox whose slot was reclaimed after it stalled past stale learns it
// here: false).
func (b *Board) Publish(i int, owner uint64, now int64, p Published) bool {
	if i < 0 || i >= b.slots {
		return false
	}
	w := b.slot(i)
	if atomic.LoadUint64(&w[sOwner]) != owner {
		return false
	}
	atomic.StoreUint64(&w[sDemand], p.Demand)
	atomic.StoreUint64(&w[sShare], p.Share)
	atomic.StoreUint64(&w[sBytes], p.Bytes)
	atomic.StoreUint64(&w[sPackets], p.Packets)
	atomic.StoreUint64(&w[sLended], p.Lended)
	atomic.StoreUint64(&w[sBorrowed], p.Borrowed)
	atomic.StoreUint64(&w[sTokens], p.Tokens)
	atomic.StoreUint64(&w[sBeat], uint64(now))
	return atomic.LoadUint64(&w[sOwner]) == owner
}

// Snapshot returns the live leaves: slots held by a sandbox that
// published within stale ns of now.
func (b *Board) Snapshot(now, stale int64) []Leaf { return b.SnapshotInto(nil, now, stale) }

// SnapshotInto is Snapshot appending to out[:0] (a Member reuses it each
// Period).
func (b *Board) SnapshotInto(out []Leaf, now, stale int64) []Leaf {
	return b.collect(out[:0], func(w []uint64) bool {
		return atomic.LoadUint64(&w[sBeat])+uint64(stale) >= uint64(now)
	})
}

// held returns the leaves a join must leave room for: the live ones and
// the silent ones whose process is alive (parked sandboxes, which take
// their guarantee back with their next packet). Sharing counts only the
// live (Snapshot); admission counts these, so that a sandbox parked
// while another joins still gets its rate once it wakes.
func (b *Board) held(now, stale int64) []Leaf {
	return b.collect(nil, func(w []uint64) bool {
		return atomic.LoadUint64(&w[sBeat])+uint64(stale) >= uint64(now) || processAlive(atomic.LoadUint64(&w[sPid]))
	})
}

// collect appends to out the leaves of the held slots for which keep is
// true.
func (b *Board) collect(out []Leaf, keep func(w []uint64) bool) []Leaf {
	for i := range b.slots {
		w := b.slot(i)
		owner := atomic.LoadUint64(&w[sOwner])
		if owner == 0 || !keep(w) {
			continue
		}
		cls, prio := atomic.LoadUint64(&w[sClass]), atomic.LoadUint64(&w[sPrio])
		l := Leaf{
			Slot: i,
			Class: htb.ClassConfig{
				ID: uint32(cls >> 32), Parent: uint32(cls),
				Rate: atomic.LoadUint64(&w[sRate]), Ceil: atomic.LoadUint64(&w[sCeil]),
				Prio: uint8(min(prio>>32, htb.NumPrio-1)), Quantum: uint32(prio),
			},
			Beat:     int64(atomic.LoadUint64(&w[sBeat])),
			Demand:   atomic.LoadUint64(&w[sDemand]),
			Share:    atomic.LoadUint64(&w[sShare]),
			Bytes:    atomic.LoadUint64(&w[sBytes]),
			Packets:  atomic.LoadUint64(&w[sPackets]),
			Lended:   atomic.LoadUint64(&w[sLended]),
			Borrowed: atomic.LoadUint64(&w[sBorrowed]),
			Tokens:   atomic.LoadUint64(&w[sTokens]),
		}
		if atomic.LoadUint64(&w[sOwner]) != owner || l.Class.ID == 0 {
			continue // left or being joined meanwhile
		}
		out = append(out, l)
	}
	return out
}
