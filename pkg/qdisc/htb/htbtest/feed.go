package htbtest

// idList is one of sch_htb's id-ordered rb-trees with its round-robin
// pointer (struct htb_prio): a row (the classes of one level that may send
// at one prio) or an inner class's feed (its children that may borrow from
// it at one prio). A sorted slice stands for the tree: its in-order walk is
// all the scheduler reads.
type idList struct {
	members []*class
	// ptr is the member the round robin is at, nil at the right end or
	// when lost.
	ptr *class
	// lastPtrID is the classid ptr was at when its class left the feed
	// (0: none): the next lookup resumes at the first member at or after
	// it.
	lastPtrID uint32
}

func (l *idList) empty() bool { return len(l.members) == 0 }

// index returns the position of the first member whose id is >= id.
func (l *idList) index(id uint32) int {
	lo, hi := 0, len(l.members)
	for lo < hi {
		mid := (lo + hi) / 2
		if l.members[mid].id < id {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// add is htb_add_to_id_tree.
func (l *idList) add(cl *class) {
	i := l.index(cl.id)
	l.members = append(l.members, nil)
	copy(l.members[i+1:], l.members[i:])
	l.members[i] = cl
}

// remove erases cl (rb_erase); the caller has moved ptr off it.
func (l *idList) remove(cl *class) {
	i := l.index(cl.id)
	if i < len(l.members) && l.members[i] == cl {
		l.members = append(l.members[:i], l.members[i+1:]...)
	}
}

// next is rb_next: the member after cl, nil after the last.
func (l *idList) next(cl *class) *class {
	i := l.index(cl.id)
	if i+1 < len(l.members) {
		return l.members[i+1]
	}
	return nil
}

// advance is htb_next_rb_node on ptr.
func (l *idList) advance() {
	if l.ptr != nil {
		l.ptr = l.next(l.ptr)
	}
}

// first is the leftmost member, nil when empty.
func (l *idList) first() *class {
	if l.empty() {
		return nil
	}
	return l.members[0]
}

// nextUpper is htb_id_find_next_upper: the first member whose id is >=
// id, nil when none.
func (l *idList) nextUpper(id uint32) *class {
	if i := l.index(id); i < len(l.members) {
		return l.members[i]
	}
	return nil
}

// prios lists the bits of mask, lowest first (ffz(~mask) order).
func prios(mask uint8) []int {
	var ps []int
	for p := 0; p < numPrio; p++ {
		if mask&(1<<p) != 0 {
			ps = append(ps, p)
		}
	}
	return ps
}

// addToRow is htb_add_class_to_row.
func (m *Model) addToRow(cl *class, mask uint8) {
	for _, p := range prios(mask) {
		m.rows[cl.level][p].add(cl)
	}
}

// removeFromRow is htb_remove_class_from_row: a row's pointer at the class
// moves on to the next class.
func (m *Model) removeFromRow(cl *class, mask uint8) {
	for _, p := range prios(mask) {
		row := &m.rows[cl.level][p]
		if row.ptr == cl {
			row.advance()
		}
		row.remove(cl)
	}
}

// activatePrios is htb_activate_prios: a class that may borrow joins its
// parent's feeds for its prios, and the parent, if those feeds were empty,
// takes the prios up in turn; the first class on the way that can send
// joins its level's rows.
func (m *Model) activatePrios(cl *class) {
	mask := cl.prioActivity
	p := cl.parent
	for cl.mode == MayBorrow && p != nil && mask != 0 {
		for _, pr := range prios(mask) {
			if !p.feed[pr].empty() {
				mask &^= 1 << pr // the parent is already active at pr
			}
			p.feed[pr].add(cl)
		}
		p.prioActivity |= mask
		cl, p = p, p.parent
	}
	if cl.mode == CanSend && mask != 0 {
		m.addToRow(cl, mask)
	}
}

// deactivatePrios is htb_deactivate_prios: the reverse of activatePrios
// for the class's mode (before it changes). A parent's feed pointer at
// the class is dropped, its classid kept in lastPtrID.
func (m *Model) deactivatePrios(cl *class) {
	mask := cl.prioActivity
	p := cl.parent
	for cl.mode == MayBorrow && p != nil && mask != 0 {
		emptied := uint8(0)
		for _, pr := range prios(mask) {
			f := &p.feed[pr]
			if f.ptr == cl {
				f.lastPtrID = cl.id
				f.ptr = nil
			}
			f.remove(cl)
			if f.empty() {
				emptied |= 1 << pr
			}
		}
		mask = emptied
		p.prioActivity &^= mask
		cl, p = p, p.parent
	}
	if cl.mode == CanSend && mask != 0 {
		m.removeFromRow(cl, mask)
	}
}

// activate is htb_activate: a leaf that gets a packet takes part at its
// prio.
func (m *Model) activate(cl *class) {
	if cl.prioActivity == 0 {
		cl.prioActivity = 1 << cl.prio
		m.activatePrios(cl)
	}
}

// deactivate is htb_deactivate: a leaf that empties leaves every feed and
// row.
func (m *Model) deactivate(cl *class) {
	if cl.prioActivity == 0 {
		return
	}
	m.deactivatePrios(cl)
	cl.prioActivity = 0
}

// changeClassMode is htb_change_class_mode: it computes the class's mode
// diff ns after tc and, if it changed, moves the class between feeds and
// rows (counting an overlimit when it becomes CantSend). It returns the
// time until the next change, as htb_class_mode leaves it in *diff.
func (m *Model) changeClassMode(cl *class, diff int64) int64 {
	mode, diff := classMode(cl, diff)
	if mode == cl.mode {
		return diff
	}
	if mode == CantSend {
		cl.overlimits++
		m.overlimits++
	}
	if cl.prioActivity != 0 {
		if cl.mode != CantSend {
			m.deactivatePrios(cl)
		}
		cl.mode = mode
		if mode != CantSend {
			m.activatePrios(cl)
		}
	} else {
		cl.mode = mode
	}
	return diff
}
