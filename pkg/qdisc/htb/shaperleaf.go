package htb

import "github.com/netqdisc/netqdisc/pkg/qdisc"

// A leaf's qdisc may hold its packets back on its own, as netem holds a
// packet for its delay: it is a qdisc.Shaper, and its Dequeue hands over
// nothing while packets wait, until its NextEvent. Linux's htb treats
// such a leaf as not work-conserving (htb_dequeue_tree moves on to the
// next leaf) and leaves the waking to the leaf: netem's own watchdog
// reschedules the root qdisc when its packet is due. Here the tree is its
// lane's one Shaper, so it does the leaf's waking itself: its NextEvent
// is no later than that of a leaf that held its packets back in the
// dequeue that found nothing (leafHeld), and a packet that a leaf says
// may leave before the leaf's wait ends makes the tree Activated
// (leafActivated), as Linux runs the root qdisc after every enqueue.
// Without this a delayed packet would wait for htb's own next event, up
// to a second, past its time.

// leafHeld notes, in the dequeue under way, that leaf cl's qdisc handed
// over nothing while it held packets: if it shapes on its own, the tree
// looks again no later than the leaf's NextEvent.
func (t *Tree) leafHeld(cl *class) {
	sh, ok := cl.leaf.(qdisc.Shaper)
	if !ok {
		return
	}
	if e := sh.NextEvent(); e > t.now && (t.leafNext == 0 || e < t.leafNext) {
		t.leafNext = e
	}
}

// leafActivated reports whether the last Enqueue to leaf cl, a class
// already active, queued a packet that may leave before the tree's wait
// ends: the leaf is a qdisc.Shaper that says so (a packet netem holds for
// less than those before it), and the class can send at its own rate or
// borrow (one over its ceil waits for its own event, which NextEvent
// counts).
func (t *Tree) leafActivated(cl *class) bool {
	sh, ok := cl.leaf.(qdisc.Shaper)
	return ok && sh.Activated() && cl.mode != CantSend
}

// shaperLeaves reports whether a leaf's qdisc holds its packets back on
// its own (a qdisc.Shaper: netem's delay): its times are promises to the
// microsecond, which the tree's lane keeps with precise timers (package
// hrtimer), as Linux's netem's watchdog is an hrtimer; a tree of plain
// leaves keeps the runtime's timers, whose lateness htb catches up
// (dequeueCatchingUp).
func (t *Tree) shaperLeaves() bool {
	for _, cl := range t.classes {
		if _, ok := cl.leaf.(qdisc.Shaper); ok {
			return true
		}
	}
	return false
}
