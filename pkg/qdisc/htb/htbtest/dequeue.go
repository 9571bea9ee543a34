package htbtest

import "time"

// lookupLeaf is htb_lookup_leaf: from a row, follow each list's pointer
// down the feeds to a leaf. A lost pointer resumes at the first class at or
// after lastPtrID; a pointer past the end rewinds to the first class and
// moves the list above it on by one.
func lookupLeaf(row *idList, prio int) *class {
	if row.empty() {
		return nil
	}
	stk := []*idList{row}
	for i := 0; i < 65535; i++ {
		sp := stk[len(stk)-1]
		if sp.ptr == nil && sp.lastPtrID != 0 {
			sp.ptr = sp.nextUpper(sp.lastPtrID)
		}
		sp.lastPtrID = 0
		if sp.ptr == nil {
			sp.ptr = sp.first()
			if len(stk) > 1 {
				stk = stk[:len(stk)-1]
				up := stk[len(stk)-1]
				if up.ptr == nil {
					return nil // Linux WARNs: cannot happen
				}
				up.advance()
			}
			continue
		}
		cl := sp.ptr
		if cl.level == 0 {
			return cl
		}
		stk = append(stk, &cl.feed[prio])
	}
	return nil
}

// drrList is the list whose pointer a leaf served at level moves on when
// its deficit runs out: its row at level 0, its parent's feed above.
func (m *Model) drrList(cl *class, prio, level int) *idList {
	if level > 0 {
		return &cl.parent.feed[prio]
	}
	return &m.rows[0][prio]
}

// dequeueTree is htb_dequeue_tree: the leaf the row's pointers lead to
// sends its head packet, pays its deficit at level (moving the round robin
// on when it goes below 0, after adding its quantum), leaves the feeds if
// it empties, and is charged.
func (m *Model) dequeueTree(prio, level int, now int64) (Departure, bool) {
	row := &m.rows[level][prio]
	start := lookupLeaf(row, prio)
	cl := start
	for {
		if cl == nil {
			return Departure{}, false
		}
		if len(cl.queue) > 0 {
			break
		}
		// An empty leaf in a row: Linux deactivates it and looks again.
		// With fifo leaves it cannot happen.
		m.deactivate(cl)
		if row.empty() {
			return Departure{}, false
		}
		next := lookupLeaf(row, prio)
		if cl == start {
			start = next
		}
		cl = next
	}
	d := cl.queue[0]
	cl.queue = cl.queue[1:]
	cl.backlog -= uint64(d.Size)
	cl.deficit[level] -= int64(d.Size)
	if cl.deficit[level] < 0 {
		cl.deficit[level] += cl.quantum
		m.drrList(cl, prio, level).advance()
	}
	if len(cl.queue) == 0 {
		m.deactivate(cl)
	}
	m.chargeClass(cl, level, d.Size, now)
	return d, true
}

// dequeueOne is one htb_dequeue call at now: the direct queue first; then,
// level by level from the leaves up, the level's due events and its rows
// by prio. When nothing can leave it arms the watchdog at the nearest
// event: the first pending key of a level, now+1s for a level with none,
// and at most now+5s.
func (m *Model) dequeueOne(now int64) (Departure, bool) {
	if len(m.direct) > 0 {
		d := m.direct[0]
		m.direct = m.direct[1:]
		m.qlen--
		return d, true
	}
	if m.qlen == 0 {
		return Departure{}, false
	}
	next := now + int64(5*time.Second)
	for level := 0; level < maxDepth; level++ {
		ev := m.doEvents(level, now)
		if ev == 0 {
			ev = now + int64(time.Second)
		}
		next = min(next, ev)
		for prio := 0; prio < numPrio; prio++ {
			if m.rows[level][prio].empty() {
				continue
			}
			if d, ok := m.dequeueTree(prio, level, now); ok {
				m.qlen--
				return d, true
			}
		}
	}
	m.Watchdog = next
	return Departure{}, false
}

// Dequeue calls htb_dequeue at now until it returns nothing, as the
// kernel's qdisc_run does after an enqueue and when the watchdog fires,
// recording what leaves in Sent. Watchdog is then the time of the next
// call, or -1 when the qdisc is empty.
func (m *Model) Dequeue(now int64) {
	m.Watchdog = -1
	for {
		d, ok := m.dequeueOne(now)
		if !ok {
			return
		}
		d.At = now
		m.Sent = append(m.Sent, d)
	}
}

// DequeueOne calls htb_dequeue once at now, recording what leaves in Sent;
// when nothing does, Watchdog is the time of the next call (-1 when the
// qdisc is empty).
func (m *Model) DequeueOne(now int64) (Departure, bool) {
	d, ok := m.dequeueOne(now)
	if !ok {
		if m.qlen == 0 {
			m.Watchdog = -1
		}
		return d, false
	}
	d.At = now
	m.Sent = append(m.Sent, d)
	return d, true
}
