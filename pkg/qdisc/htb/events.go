package htb

// waitQueue is one level's event queue (sch_htb's wait_pq): the classes
// that cannot send at their rate, by the time their mode changes, those
// with equal times in the order they were added, as Linux's rb-tree
// keeps them.
type waitQueue struct {
	classes []*class
}

// add queues cl at cl.pqKey.
func (w *waitQueue) add(cl *class) {
	lo, hi := 0, len(w.classes)
	for lo < hi {
		m := (lo + hi) / 2
		if w.classes[m].pqKey <= cl.pqKey {
			lo = m + 1
		} else {
			hi = m
		}
	}
	w.classes = append(w.classes, nil)
	copy(w.classes[lo+1:], w.classes[lo:])
	w.classes[lo] = cl
	cl.waiting = true
}

// remove takes cl out of the queue.
func (w *waitQueue) remove(cl *class) {
	for i, c := range w.classes {
		if c == cl {
			copy(w.classes[i:], w.classes[i+1:])
			w.classes[len(w.classes)-1] = nil
			w.classes = w.classes[:len(w.classes)-1]
			break
		}
	}
	cl.waiting = false
}

// addToWait queues cl in its level's event queue to change mode delay ns
// from now (htb_add_to_wait_tree): never at now itself.
func (t *Tree) addToWait(cl *class, delay int64) {
	cl.pqKey = t.now + delay
	if cl.pqKey == t.now {
		cl.pqKey++
	}
	t.wait[cl.level].add(cl)
}

// doEvents applies the mode changes due by now at level (htb_do_events)
// and returns when the next is due, 0 when none is queued. Linux stops
// after two jiffies and defers the rest to a work item; a tree here is
// small enough to apply them all.
func (t *Tree) doEvents(level int) int64 {
	w := &t.wait[level]
	for len(w.classes) > 0 {
		cl := w.classes[0]
		if cl.pqKey > t.now {
			return cl.pqKey
		}
		w.remove(cl)
		if t.quotas && t.renewQuotas(cl) && cl.waiting {
			continue // the renewal placed it anew
		}
		diff := min(t.now-cl.tc, mbuffer)
		t.changeMode(cl, &diff)
		if cl.mode != CanSend {
			t.addToWait(cl, diff)
		}
	}
	return 0
}

// charge charges a packet of bytes bytes, sent from leaf cl borrowing at
// level, to cl and every ancestor (htb_charge_class): the ceil bucket of
// each, the rate bucket of those at level or above (a class at level
// lends, those below borrow), and moves each to its new mode.
func (t *Tree) charge(cl *class, level int, bytes uint32) {
	spent := false
	if t.quotas {
		t.renewQuotas(cl)
		spent = t.useQuotas(cl, bytes)
	}
	for ; cl != nil; cl = cl.parent {
		diff := min(t.now-cl.tc, mbuffer)
		cost := cl.costs(bytes)
		rateNS, ceilNS := cost.rateNS, cost.ceilNS
		if cl.level >= level { // htb_accnt_tokens
			if cl.level == level {
				cl.lends++
			}
			cl.tokens = accnt(cl.tokens, cl.buffer, diff, rateNS)
		} else {
			cl.borrows++
			cl.tokens += diff // t_c moves: keep the credit
		}
		cl.ctokens = accnt(cl.ctokens, cl.cbuffer, diff, ceilNS) // htb_accnt_ctokens
		cl.tc = t.now
		if cl.level != 0 {
			cl.bytes += uint64(bytes)
			cl.packets++
		}
		if cl.mode == CanSend && cl.tokens >= 0 && cl.ctokens >= 0 && !t.quotas {
			continue // still can send: htb_change_class_mode changes nothing
		}
		t.remode(cl)
	}
	if spent {
		t.applyQuotas()
	}
}

// remode moves class cl, just charged at t.now, to the mode its buckets
// now give it (htb_change_class_mode), and to or from its level's wait
// queue.
func (t *Tree) remode(cl *class) {
	old := cl.mode
	var diff int64
	if cl.blockedUntil > t.now || cl.modeAfter(&diff) != old {
		diff = 0
		t.changeMode(cl, &diff)
	}
	if old != cl.mode {
		if old != CanSend {
			t.wait[cl.level].remove(cl)
		}
		if cl.mode != CanSend {
			t.addToWait(cl, diff)
		}
	}
}
