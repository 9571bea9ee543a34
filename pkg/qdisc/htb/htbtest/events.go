package htbtest

// addToWait is htb_add_to_wait_tree: the class will change mode delay ns
// after now; a key equal to now becomes now+1. Classes with equal keys
// stay in the order they came (Linux's rb-tree puts an equal key to the
// right).
func (m *Model) addToWait(cl *class, delay, now int64) {
	cl.pqKey = now + delay
	if cl.pqKey == now {
		cl.pqKey++
	}
	m.pqSeq++
	cl.pqSeq = m.pqSeq
	cl.inPQ = true
	pq := m.wait[cl.level]
	i := len(pq)
	for i > 0 && pq[i-1].pqKey > cl.pqKey {
		i--
	}
	pq = append(pq, nil)
	copy(pq[i+1:], pq[i:])
	pq[i] = cl
	m.wait[cl.level] = pq
}

// removeFromWait erases the class from its level's wait queue.
func (m *Model) removeFromWait(cl *class) {
	pq := m.wait[cl.level]
	for i, c := range pq {
		if c == cl {
			m.wait[cl.level] = append(pq[:i], pq[i+1:]...)
			break
		}
	}
	cl.inPQ = false
}

// doEvents is htb_do_events without its 2-jiffy bound: every class of the
// level whose key is due at now gets its mode recomputed, and goes back in
// the queue if it still cannot send. It returns the first key still
// pending, 0 when none.
func (m *Model) doEvents(level int, now int64) int64 {
	for {
		pq := m.wait[level]
		if len(pq) == 0 {
			return 0
		}
		cl := pq[0]
		if cl.pqKey > now {
			return cl.pqKey
		}
		m.wait[level] = pq[1:]
		cl.inPQ = false
		diff := m.changeClassMode(cl, min(now-cl.tc, mbuffer))
		if cl.mode != CanSend {
			m.addToWait(cl, diff, now)
		}
	}
}

// chargeClass is htb_charge_class: a packet of bytes left leaf cl, served
// at level. Every class from the leaf up pays its ceil bucket; those at
// level or above pay their rate bucket (the one at level lends), those
// below only move tc (they borrow). Each recomputes its mode and, if it
// changed, its place in the wait queue.
func (m *Model) chargeClass(cl *class, level int, bytes uint32, now int64) {
	for ; cl != nil; cl = cl.parent {
		diff := min(now-cl.tc, mbuffer)
		if cl.level >= level {
			if cl.level == level {
				cl.lends++
			}
			accntTokens(cl, bytes, diff)
		} else {
			cl.borrows++
			cl.tokens += diff
		}
		accntCTokens(cl, bytes, diff)
		cl.tc = now

		old := cl.mode
		d := m.changeClassMode(cl, 0)
		if old != cl.mode {
			if old != CanSend {
				m.removeFromWait(cl)
			}
			if cl.mode != CanSend {
				m.addToWait(cl, d, now)
			}
		}
		cl.bytes += uint64(bytes)
		cl.packets++
	}
}
