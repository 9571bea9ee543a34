package netem

import "gvisor.dev/gvisor/pkg/tcpip/stack"

// held is a packet netem holds, with the time it may leave.
type held struct {
	pkt  *stack.PacketBuffer
	size uint32
	// tts is when it may leave (Linux's time_to_send), ns.
	tts int64
	// arrived is when it was queued, for the lane's Peek.
	arrived int64
}

// tfifo is netem's queue ordered by time to send (Linux's t_root and its
// linear t_head..t_tail): a packet whose tts is no earlier than the last
// one in the linear part joins it at the end, in constant time (without
// jitter, every packet); any other goes into a heap, in log time. The
// next to leave is the earlier of the two heads, the linear one's on a
// tie, as netem_peek takes it.
type tfifo struct {
	linear ring
	heap   []heapHeld
	// heapMax is the latest tts in the heap: as only its earliest
	// leaves, the latest stays until the heap empties.
	heapMax int64
	seq     uint64
}

// heapHeld is a packet in the heap, and the order it came in: seq
// orders packets of the same tts as they came (the rbtree puts an equal
// key to the right of those there). The linear part needs none.
type heapHeld struct {
	held
	seq uint64
}

// push queues h.
func (t *tfifo) push(h held) {
	if t.linear.n == 0 || h.tts >= t.linear.back().tts {
		t.linear.pushBack(h)
		return
	}
	if len(t.heap) == 0 || h.tts > t.heapMax {
		t.heapMax = h.tts
	}
	t.seq++
	t.heap = append(t.heap, heapHeld{h, t.seq})
	t.up(len(t.heap) - 1)
}

// immediateOnly reports whether every packet t holds is immediate (or it
// holds none): they are then all in the linear part.
func (t *tfifo) immediateOnly() bool {
	r := &t.linear
	return len(t.heap) == 0 && (r.n == 0 || r.buf[(r.head+r.n-1)&(len(r.buf)-1)].tts == immediate)
}

// len returns how many packets t holds.
func (t *tfifo) len() int { return t.linear.n + len(t.heap) }

// peek returns the packet that leaves next, and false if none.
func (t *tfifo) peek() (held, bool) {
	switch {
	case len(t.heap) == 0 && t.linear.n == 0:
		return held{}, false
	case len(t.heap) == 0:
		return t.linear.front(), true
	case t.linear.n == 0 || t.heap[0].tts < t.linear.front().tts:
		return t.heap[0].held, true
	default:
		return t.linear.front(), true
	}
}

// pop removes the packet peek returns.
func (t *tfifo) pop() held {
	if len(t.heap) != 0 && (t.linear.n == 0 || t.heap[0].tts < t.linear.front().tts) {
		h := t.heap[0].held
		last := len(t.heap) - 1
		t.heap[0] = t.heap[last]
		t.heap[last] = heapHeld{}
		t.heap = t.heap[:last]
		t.down(0)
		return h
	}
	return t.linear.popFront()
}

// last returns the latest tts held, and false if t is empty (the
// reference netem's rate counts from).
func (t *tfifo) last() (int64, bool) {
	switch {
	case t.linear.n == 0 && len(t.heap) == 0:
		return 0, false
	case len(t.heap) == 0:
		return t.linear.back().tts, true
	case t.linear.n == 0:
		return t.heapMax, true
	default:
		return max(t.heapMax, t.linear.back().tts), true
	}
}

// restamp gives the packets whose time to send is from the time to
// send to: they are the first of the linear part (from is before every
// other time).
func (t *tfifo) restamp(from, to int64) {
	for i := 0; i < t.linear.n; i++ {
		h := &t.linear.buf[(t.linear.head+i)&(len(t.linear.buf)-1)]
		if h.tts != from {
			return
		}
		h.tts = to
	}
}

// drain removes every packet, calling f on each.
func (t *tfifo) drain(f func(held)) {
	for t.linear.n > 0 {
		f(t.linear.popFront())
	}
	for i := range t.heap {
		f(t.heap[i].held)
		t.heap[i] = heapHeld{}
	}
	t.heap = t.heap[:0]
}

func (t *tfifo) less(i, j int) bool {
	a, b := &t.heap[i], &t.heap[j]
	return a.tts < b.tts || (a.tts == b.tts && a.seq < b.seq)
}

func (t *tfifo) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(i, p) {
			return
		}
		t.heap[i], t.heap[p] = t.heap[p], t.heap[i]
		i = p
	}
}

func (t *tfifo) down(i int) {
	for {
		m, l := i, 2*i+1
		if l < len(t.heap) && t.less(l, m) {
			m = l
		}
		if r := l + 1; r < len(t.heap) && t.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		t.heap[i], t.heap[m] = t.heap[m], t.heap[i]
		i = m
	}
}

// ring is a deque of held packets in a slice that grows as needed and is
// reused: no allocation once it has held the most it will. Its length is
// a power of two, so that a place is found with a mask.
type ring struct {
	buf     []held
	head, n int
}

func (r *ring) pushBack(h held) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = h
	r.n++
}

func (r *ring) pushFront(h held) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.head = (r.head - 1) & (len(r.buf) - 1)
	r.buf[r.head] = h
	r.n++
}

func (r *ring) front() held { return r.buf[r.head] }
func (r *ring) back() held  { return r.buf[(r.head+r.n-1)&(len(r.buf)-1)] }

func (r *ring) popFront() held {
	h := r.buf[r.head]
	r.buf[r.head] = held{}
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return h
}

func (r *ring) grow() {
	buf := make([]held, max(16, 2*len(r.buf)))
	for i := range r.n {
		buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = buf, 0
}
