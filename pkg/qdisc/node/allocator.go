package node

import (
	"fmt"
	"os"
	"slices"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/sync"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Allocator is a node's trusted side, what the host's kernel is to
// Linux's htb: it holds the operator's tree, admits each sandbox the
// runtime starts as a leaf class (Join), and every Period reads what
// each class wants from its seat and writes back its share (Step). It
// runs on the host, apart from every sandbox (runsc starts one per node:
// runscflags.ServeNode), so that nothing a sandbox writes can change
// another's class, its admission or its share beyond what htb gives:
//
//   - a class's rate, ceil, prio, parent and slot are the runtime's,
//     kept here and never read back from a seat;
//   - a class is live while its seat's sequence moves (no sandbox's
//     clock is read), and its slot is freed the moment its process is
//     gone (Process: a pidfd);
//   - a demand is clamped to the class's ceil, and a share to its rate
//     and ceil.
//
// It computes the node's shares once a Period for every sandbox, where
// each sandbox computing them from every other's, on a board all
// shared (before it), cost N² a Period; a sandbox's step reads its seat.
type Allocator struct {
	mu sync.Mutex
	// tree is the operator's tree, classes its classes with tc's
	// defaults, r2q its quantum divisor, gen moved on by SetTree.
	// +checklocks:mu
	tree htb.Script
	// +checklocks:mu
	classes []htb.ClassConfig
	// +checklocks:mu
	r2q uint64
	// seats are the sandboxes' classes by slot, nil where free.
	// +checklocks:mu
	seats []*seatState
	// idx is the tree and the seats' classes indexed (rebuilt when one
	// joins or leaves, or the tree changes: dirty); wants is the
	// demand by position in it.
	// +checklocks:mu
	idx *shares
	// +checklocks:mu
	wants []uint64
	// +checklocks:mu
	dirty bool
	// steps counts Step's runs, for show.
	// +checklocks:mu
	steps uint64
	// epfd watches the seated processes' pidfds: one epoll_wait a Step
	// finds the ones gone, where polling each would cost N calls.
	// +checklocks:mu
	epfd int
	// +checklocks:mu
	events []unix.EpollEvent
	// statePath is the state file (Persist), "" for none.
	// +checklocks:mu
	statePath string
	// requests counts the runtime's requests (Serve), for its idle exit.
	requests atomic.Uint64
}

// Requests returns how many requests Serve has answered.
func (a *Allocator) Requests() uint64 { return a.requests.Load() }

// seatState is a sandbox's class as the Allocator holds it.
type seatState struct {
	slot  int
	class htb.ClassConfig // the runtime's, with tc's defaults
	proc  Process
	words []uint64
	// pos is the class's position in the index; slack what it may want
	// past what it sends (a 256th of its root's rate).
	pos   int
	slack uint64

	joined, seenAt, parkedSince int64
	seq                         uint64
	live                        bool
	demand, share               uint64
	// start is the process's start time (the state file's); adopted
	// says the class was seated by an allocator before this one (Adopt):
	// its words are this process's own, no sandbox's.
	start   uint64
	adopted bool
}

// DefaultSlots is how many sandboxes an Allocator holds by default.
const DefaultSlots = 1024

// NewAllocator returns the Allocator of a node whose tree is tree, with
// room for slots sandboxes.
func NewAllocator(tree htb.Script, slots int) (*Allocator, error) {
	if slots < 1 || slots > 1<<16-AutoMinor {
		return nil, fmt.Errorf("node: an allocator of %d slots: give 1 to %d", slots, 1<<16-AutoMinor)
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("node: epoll_create1: %w", err)
	}
	a := &Allocator{seats: make([]*seatState, slots), epfd: epfd}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.setTreeLocked(tree); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	return a, nil
}

// SetTree puts the operator's tree in force: the classes' shares follow
// it at the next Step. A tree that drops a class a sandbox hangs from is
// refused, naming it. It returns a warning for each class whose children
// are guaranteed more than its rate (Overcommitted).
func (a *Allocator) SetTree(tree htb.Script) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.seats {
		if s != nil && !hasID(tree.Classes, s.class.Parent) {
			return nil, fmt.Errorf("node: the tree has no class %s, which the sandbox of class %s (slot %d) hangs from: stop it first", classify.ClassID(s.class.Parent), classify.ClassID(s.class.ID), s.slot)
		}
	}
	if err := a.setTreeLocked(tree); err != nil {
		return nil, err
	}
	return a.overcommittedLocked(), nil
}

// Tree returns the tree in force.
func (a *Allocator) Tree() htb.Script {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tree
}

// setTreeLocked puts tree in force.
// +checklocks:a.mu
func (a *Allocator) setTreeLocked(tree htb.Script) error {
	if len(tree.Classes) == 0 {
		return fmt.Errorf("node: the node's tree has no class: give at least its root, such as \"class root classid 1:1 rate 10gbit\"")
	}
	a.tree = tree
	a.r2q = uint64(tree.Qdisc.R2Q)
	if a.r2q == 0 {
		a.r2q = htb.DefaultR2Q
	}
	a.classes = a.classes[:0]
	for _, c := range tree.Classes {
		a.classes = append(a.classes, withQuantum(c, a.r2q))
	}
	a.dirty = true
	return nil
}

// Join admits a sandbox whose process is p as a leaf of class c (its
// Parent, Rate, Ceil, Prio; an ID whose minor is 0 gets AutoMinor plus
// its slot), as of now. It refuses a classid the tree or another
// sandbox holds, a missing parent, and a guarantee that does not fit in
// the parent's rate beside its other children's (every seated sandbox's,
// parked or not: a parked one takes its rate back with its next packet).
// It returns the slot, the class as admitted, and the seat's descriptor
// for the runtime to hand the sandbox (the caller closes its copy). Join
// owns p: it closes it on error, and when the slot is freed.
func (a *Allocator) Join(c htb.ClassConfig, p Process, now int64) (int, htb.ClassConfig, *os.File, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reapLocked()
	slot := slices.Index(a.seats, nil)
	if slot < 0 {
		p.Close()
		if err := fits(a.tree, a.heldLocked(), c); err != nil {
			return 0, c, nil, err
		}
		return 0, c, nil, fmt.Errorf("node: every one of the node's %d slots holds a sandbox", len(a.seats))
	}
	if c.ID&0xffff == 0 {
		c.ID |= AutoMinor + uint32(slot)
	}
	if err := fits(a.tree, a.heldLocked(), c); err != nil {
		p.Close()
		return 0, c, nil, err
	}
	f, err := newSeatFile(fmt.Sprintf("%s:slot%d", classify.ClassID(c.ID), slot))
	if err != nil {
		p.Close()
		return 0, c, nil, err
	}
	w, err := mapSeat(f)
	if err != nil {
		f.Close()
		p.Close()
		return 0, c, nil, err
	}
	if fp, ok := p.(interface{ FD() int }); ok {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(slot)}
		if err := unix.EpollCtl(a.epfd, unix.EPOLL_CTL_ADD, fp.FD(), &ev); err != nil {
			unmapSeat(w)
			f.Close()
			p.Close()
			return 0, c, nil, fmt.Errorf("node: watching the sandbox's process: %w", err)
		}
	}
	start, _ := startTime(p.PID())
	s := &seatState{slot: slot, class: withQuantum(c, a.r2q), proc: p, words: w, joined: now, seenAt: now, live: true, share: c.Rate, start: start}
	atomic.StoreUint64(&w[aShare], c.Rate)
	atomic.StoreUint64(&w[aBeat], uint64(now))
	a.seats[slot] = s
	a.dirty = true
	if err := a.saveLocked(); err != nil {
		a.freeLocked(s)
		f.Close()
		return 0, c, nil, err
	}
	return slot, c, f, nil
}

// AutoMinor is the first minor of the classids a node gives: a class
// joined with minor 0 gets AutoMinor plus its slot.
const AutoMinor = 0x8000

// heldLocked returns the seated classes, for admission.
// +checklocks:a.mu
func (a *Allocator) heldLocked() []htb.ClassConfig {
	var out []htb.ClassConfig
	for _, s := range a.seats {
		if s != nil {
			out = append(out, s.class)
		}
	}
	return out
}

// Evict frees the slot of class id, a parked sandbox's (one that has not
// published for Stale): its guarantee no longer counts for admission,
// and its sandbox, if it wakes, holds itself to its rate and reports
// that it was evicted. A live class is refused: stop its sandbox.
func (a *Allocator) Evict(id uint32, now int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.seats {
		if s == nil || s.class.ID != id {
			continue
		}
		if now-s.seenAt <= int64(Stale) {
			return fmt.Errorf("node: class %s (slot %d, pid %d) is live: it published %v ago; stop its sandbox instead", classify.ClassID(id), s.slot, s.proc.PID(), fmtAgo(now-s.seenAt))
		}
		atomic.StoreUint64(&s.words[aEvicted], 1)
		a.freeLocked(s)
		return nil
	}
	return fmt.Errorf("node: no sandbox holds class %s", classify.ClassID(id))
}

// reapLocked frees the slots whose process is gone (a pidfd epoll finds
// readable; a Process with no descriptor, asked) or whose sandbox gave
// its class back.
// +checklocks:a.mu
func (a *Allocator) reapLocked() {
	if a.events == nil {
		a.events = make([]unix.EpollEvent, 64)
	}
	for {
		n, err := unix.EpollWait(a.epfd, a.events, 0)
		if err == unix.EINTR {
			continue
		}
		for _, ev := range a.events[:max(n, 0)] {
			if i := int(ev.Fd); i >= 0 && i < len(a.seats) && a.seats[i] != nil {
				a.freeLocked(a.seats[i])
			}
		}
		if n < len(a.events) {
			break
		}
	}
	for _, s := range a.seats {
		if s == nil {
			continue
		}
		_, watched := s.proc.(interface{ FD() int })
		if atomic.LoadUint64(&s.words[wLeft]) != 0 || (!watched && !s.proc.Alive()) {
			a.freeLocked(s)
		}
	}
}

// freeLocked frees s's slot.
// +checklocks:a.mu
func (a *Allocator) freeLocked(s *seatState) {
	a.seats[s.slot] = nil
	if fp, ok := s.proc.(interface{ FD() int }); ok {
		unix.EpollCtl(a.epfd, unix.EPOLL_CTL_DEL, fp.FD(), nil)
	}
	if !s.adopted {
		unmapSeat(s.words)
	}
	s.words = nil
	s.proc.Close()
	a.dirty = true
	a.saveLocked() // a failure leaves the slot counted by a restart, not lost
}

// Held reports how many slots hold a sandbox.
func (a *Allocator) Held() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, s := range a.seats {
		if s != nil {
			n++
		}
	}
	return n
}

// Step frees the slots of sandboxes gone, reads what each live class
// wants (its demand, clamped to its ceil; a class whose seat did not
// move for Stale wants nothing: parked, or stalled), computes htb's
// shares over the tree (Allocate's), and writes each class its share,
// between its rate and its ceil (a class not live: its rate, which it
// may take back at any time), with now as the beat.
func (a *Allocator) Step(now int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.steps++
	a.reapLocked()
	if a.dirty || a.idx == nil {
		a.indexLocked()
	}
	clear(a.wants)
	for _, s := range a.seats {
		if s == nil {
			continue
		}
		if seq := atomic.LoadUint64(&s.words[wSeq]); seq != s.seq {
			s.seq, s.seenAt = seq, now
		}
		live := now-s.seenAt <= int64(Stale)
		if !live && s.live {
			s.parkedSince = now
		}
		s.live = live
		s.demand = 0
		if live {
			s.demand = min(atomic.LoadUint64(&s.words[wDemand]), s.class.Ceil)
		}
		a.wants[s.pos] = s.demand
	}
	a.idx.run(a.wants)
	for _, s := range a.seats {
		if s == nil {
			continue
		}
		s.share = s.class.Rate
		if s.live {
			s.share = min(max(a.idx.use[s.pos], s.class.Rate), s.class.Ceil)
		}
		atomic.StoreUint64(&s.words[aShare], s.share)
		atomic.StoreUint64(&s.words[aSlack], s.slack)
		atomic.StoreUint64(&s.words[aBeat], uint64(now))
	}
}

// indexLocked indexes the tree and the seated classes.
// +checklocks:a.mu
func (a *Allocator) indexLocked() {
	classes := slices.Clone(a.classes)
	for _, s := range a.seats {
		if s == nil {
			continue
		}
		s.pos = len(classes)
		classes = append(classes, s.class)
		s.slack = rootOf(a.classes, s.class.Parent).Rate / 256
	}
	a.idx = index(classes)
	a.wants = make([]uint64, len(classes))
	a.dirty = false
}

// rootOf returns the root of the tree classes above parent.
func rootOf(classes []htb.ClassConfig, parent uint32) htb.ClassConfig {
	var root htb.ClassConfig
	for d := 0; d <= len(classes); d++ {
		i := slices.IndexFunc(classes, func(c htb.ClassConfig) bool { return c.ID == parent })
		if i < 0 {
			break
		}
		root, parent = classes[i], classes[i].Parent
	}
	return root
}

// Overcommitted says, for each class of the tree whose children are
// guaranteed more than its rate (the operator lowered it under running
// sandboxes, or gave the tree such classes), by how much. Each child
// still gets its rate, as in Linux's htb, where a class with tokens of
// its own sends without asking its parent.
func (a *Allocator) Overcommitted() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.overcommittedLocked()
}

// +checklocks:a.mu
func (a *Allocator) overcommittedLocked() []string {
	sums := map[uint32]uint64{}
	for _, k := range a.tree.Classes {
		sums[k.Parent] = satAdd(sums[k.Parent], k.Rate)
	}
	for _, s := range a.seats {
		if s != nil {
			sums[s.class.Parent] = satAdd(sums[s.class.Parent], s.class.Rate)
		}
	}
	var out []string
	for _, k := range a.tree.Classes {
		if sum := sums[k.ID]; sum > k.Rate {
			out = append(out, fmt.Sprintf("class %s guarantees %s to its children, past its rate %s: each still gets its rate, so it may send %s until sandboxes leave", classify.ClassID(k.ID), rate.FormatRate(sum), rate.FormatRate(k.Rate), rate.FormatRate(sum)))
		}
	}
	return out
}

// Close frees every slot; the Allocator is not used after.
func (a *Allocator) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, s := range a.seats {
		if s != nil {
			a.freeLocked(s)
		}
	}
	if a.epfd >= 0 {
		unix.Close(a.epfd)
		a.epfd = -1
	}
}

// fits refuses c, a sandbox's class joining under tree beside the held
// classes, where its classid is taken, its parent missing, or its rate
// does not fit in the parent's with the parent's other children's. Sums
// saturate.
func fits(tree htb.Script, held []htb.ClassConfig, c htb.ClassConfig) error {
	id, pid := classify.ClassID(c.ID), classify.ClassID(c.Parent)
	switch {
	case c.Rate == 0:
		return fmt.Errorf("node: class %s: give a rate (the bandwidth it is guaranteed)", id)
	case c.Ceil != 0 && c.Ceil < c.Rate:
		return fmt.Errorf("node: class %s: ceil %s is below its rate %s", id, rate.FormatRate(c.Ceil), rate.FormatRate(c.Rate))
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
			sum = satAdd(sum, k.Rate)
		}
	}
	if parent == nil {
		return fmt.Errorf("node: the node's tree has no class %s to hang the sandbox's class from", pid)
	}
	for _, h := range held {
		if h.ID == c.ID {
			return fmt.Errorf("node: class %s is taken by a running sandbox", id)
		}
		if h.Parent == c.Parent {
			sum = satAdd(sum, h.Rate)
		}
	}
	if satAdd(sum, c.Rate) > parent.Rate {
		return fmt.Errorf("node: class %s guarantees %s of its rate %s to its children; a guarantee of %s does not fit (%s left)", pid, rate.FormatRate(sum), rate.FormatRate(parent.Rate), rate.FormatRate(c.Rate), rate.FormatRate(parent.Rate-min(sum, parent.Rate)))
	}
	return nil
}

// hasID says whether classes has a class id.
func hasID(classes []htb.ClassConfig, id uint32) bool {
	return slices.ContainsFunc(classes, func(c htb.ClassConfig) bool { return c.ID == id })
}

// satAdd is a+b, or the largest uint64 where that overflows.
func satAdd(a, b uint64) uint64 {
	if s := a + b; s >= a {
		return s
	}
	return ^uint64(0)
}
