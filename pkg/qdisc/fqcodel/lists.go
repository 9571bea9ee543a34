package fqcodel

// packets is a flow's packets, first in first out, in a ring that grows.
type packets struct {
	buf  []entry
	head int
	n    int
}

func (f *packets) push(e entry) {
	if f.n == len(f.buf) {
		grown := make([]entry, max(4, 2*len(f.buf)))
		for i := 0; i < f.n; i++ {
			grown[i] = f.buf[(f.head+i)%len(f.buf)]
		}
		f.buf, f.head = grown, 0
	}
	f.buf[(f.head+f.n)%len(f.buf)] = e
	f.n++
}

func (f *packets) pop() entry {
	e := f.buf[f.head]
	f.buf[f.head] = entry{}
	f.head = (f.head + 1) % len(f.buf)
	f.n--
	return e
}

// flowList is a list of flows (fq_codel's new or old flows), linked
// through the flows' prev and next indices.
type flowList struct {
	head, tail int32
}

const none = -1

func (l *flowList) init()       { l.head, l.tail = none, none }
func (l *flowList) empty() bool { return l.head == none }

// pushBack appends flows[idx], which is in no list.
func (l *flowList) pushBack(flows []flow, idx int32) {
	f := &flows[idx]
	f.list, f.prev, f.next = l, l.tail, none
	if l.tail == none {
		l.head = idx
	} else {
		flows[l.tail].next = idx
	}
	l.tail = idx
}

// remove takes flows[idx] out of l.
func (l *flowList) remove(flows []flow, idx int32) {
	f := &flows[idx]
	if f.prev == none {
		l.head = f.next
	} else {
		flows[f.prev].next = f.next
	}
	if f.next == none {
		l.tail = f.prev
	} else {
		flows[f.next].prev = f.prev
	}
	f.list = nil
}

// count returns the flows in l (tc -s: new_flows_len, old_flows_len).
func (l *flowList) count(flows []flow) int {
	n := 0
	for i := l.head; i != none; i = flows[i].next {
		n++
	}
	return n
}
