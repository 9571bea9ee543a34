package htb

// feed is one of sch_htb's id-ordered sets of classes with a round-robin
// pointer (struct htb_prio): a level's row of classes that may send at one
// prio, or an inner class's feed of the children that borrow from it at
// one prio. Linux keeps them in red-black trees; a tree here holds a
// handful of classes, so a sorted slice does the same job. ptr is the
// class whose turn it is (nil: past the last); lastID remembers, when ptr
// was removed from the feed, where the turn was, so that it resumes at the
// next class by id (htb_id_find_next_upper).
type feed struct {
	members []*class // by class id, ascending
	ptr     *class
	lastID  uint32
}

// empty reports whether no class is in the feed.
func (f *feed) empty() bool { return len(f.members) == 0 }

// index returns where a class of id id is, or would be inserted.
func (f *feed) index(id uint32) int {
	lo, hi := 0, len(f.members)
	for lo < hi {
		m := (lo + hi) / 2
		if f.members[m].id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// add puts cl in the feed (htb_add_to_id_tree).
func (f *feed) add(cl *class) {
	i := f.index(cl.id)
	f.members = append(f.members, nil)
	copy(f.members[i+1:], f.members[i:])
	f.members[i] = cl
}

// remove takes cl out of the feed (rb_erase); ptr is the caller's to
// move first.
func (f *feed) remove(cl *class) {
	i := f.index(cl.id)
	if i < len(f.members) && f.members[i] == cl {
		copy(f.members[i:], f.members[i+1:])
		f.members[len(f.members)-1] = nil
		f.members = f.members[:len(f.members)-1]
	}
}

// next returns the class after cl by id, nil after the last
// (htb_next_rb_node).
func (f *feed) next(cl *class) *class {
	if cl == nil {
		return nil
	}
	i := f.index(cl.id)
	if i < len(f.members) && f.members[i] == cl {
		i++
	}
	if i < len(f.members) {
		return f.members[i]
	}
	return nil
}

// advance moves the pointer to the next class (htb_next_rb_node on ptr).
func (f *feed) advance() { f.ptr = f.next(f.ptr) }

// upper returns the first class whose id is at least id, nil if none
// (htb_id_find_next_upper).
func (f *feed) upper(id uint32) *class {
	if i := f.index(id); i < len(f.members) {
		return f.members[i]
	}
	return nil
}

// first returns the class with the lowest id (the tree's leftmost node).
func (f *feed) first() *class { return f.members[0] }
