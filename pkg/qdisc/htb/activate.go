package htb

import "math/bits"

// activate makes a leaf that got packets active at its prio
// (htb_activate).
func (t *Tree) activate(cl *class) {
	if cl.prioActivity == 0 {
		cl.prioActivity = 1 << cl.prio
		t.activatePrios(cl)
	}
}

// deactivate makes a leaf that has no packets inactive (htb_deactivate).
func (t *Tree) deactivate(cl *class) {
	if cl.prioActivity == 0 {
		return
	}
	t.deactivatePrios(cl)
	cl.prioActivity = 0
}

// activatePrios links an active class into its parent's feeds while it
// borrows, and so on up, and into its level's row where it can send
// (htb_activate_prios). cl.mode is its new mode.
func (t *Tree) activatePrios(cl *class) {
	p := cl.parent
	mask := cl.prioActivity
	for cl.mode == MayBorrow && p != nil && mask != 0 {
		for m := mask; m != 0; m &= m - 1 {
			prio := bits.TrailingZeros8(m)
			if !p.inner[prio].empty() {
				// The parent is already active at this prio.
				mask &^= 1 << prio
			}
			p.inner[prio].add(cl)
		}
		p.prioActivity |= mask
		cl, p = p, p.parent
	}
	if cl.mode == CanSend && mask != 0 {
		t.addToRow(cl, mask)
	}
}

// deactivatePrios unlinks a class from its parent's feeds and, where the
// parent has no other borrower, the parent from its own, and so on up, or
// from its level's row (htb_deactivate_prios). cl.mode is its old mode.
func (t *Tree) deactivatePrios(cl *class) {
	p := cl.parent
	mask := cl.prioActivity
	for cl.mode == MayBorrow && p != nil && mask != 0 {
		m := mask
		mask = 0
		for ; m != 0; m &= m - 1 {
			prio := bits.TrailingZeros8(m)
			f := &p.inner[prio]
			if f.ptr == cl {
				// The parent's turn pointed at cl: forget it, keep its id.
				f.lastID = cl.id
				f.ptr = nil
			}
			f.remove(cl)
			if f.empty() {
				mask |= 1 << prio
			}
		}
		p.prioActivity &^= mask
		cl, p = p, p.parent
	}
	if cl.mode == CanSend && mask != 0 {
		t.removeFromRow(cl, mask)
	}
}

// addToRow puts cl in its level's rows at the prios in mask
// (htb_add_class_to_row).
func (t *Tree) addToRow(cl *class, mask uint8) {
	t.rowMask[cl.level] |= mask
	for ; mask != 0; mask &= mask - 1 {
		t.rows[cl.level][bits.TrailingZeros8(mask)].add(cl)
	}
}

// removeFromRow takes cl out of its level's rows at the prios in mask
// (htb_remove_class_from_row).
func (t *Tree) removeFromRow(cl *class, mask uint8) {
	var emptied uint8
	for ; mask != 0; mask &= mask - 1 {
		prio := bits.TrailingZeros8(mask)
		f := &t.rows[cl.level][prio]
		if f.ptr == cl {
			f.advance()
		}
		f.remove(cl)
		if f.empty() {
			emptied |= 1 << prio
		}
	}
	t.rowMask[cl.level] &^= emptied
}

// changeMode moves cl to the mode its buckets give diff ns after its last
// charge (htb_change_class_mode), relinking it; diff becomes how long
// until its mode changes again.
func (t *Tree) changeMode(cl *class, diff *int64) {
	var m Mode
	if cl.blockedUntil > t.now { // a spent quota with no rate
		m, *diff = CantSend, cl.blockedUntil-t.now
	} else {
		m = cl.modeAfter(diff)
	}
	if m == cl.mode {
		return
	}
	if m == CantSend {
		cl.overlimits++
		t.overlimits++
	}
	if cl.prioActivity != 0 {
		if cl.mode != CantSend {
			t.deactivatePrios(cl)
		}
		cl.mode = m
		if m != CantSend {
			t.activatePrios(cl)
		}
	} else {
		cl.mode = m
	}
}
