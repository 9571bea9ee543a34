package fq

// flowList is a list of flows (new, old or detached), linked through the
// flows' prev and next indices.
type flowList struct {
	head, tail int32
	// n counts the flows in the list.
	n int
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
	l.n++
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
	l.n--
}
