package netem

import "gvisor.dev/gvisor/pkg/tcpip/stack"

// netem with nothing to draw and nothing to time (no delay, jitter, rate,
// slots, loss, duplication, corruption or reorder: `netem limit N`, or a
// netem a change has turned down) is Linux's pfifo of N packets: each
// packet is due as it comes, and leaves in order. Its packets take the
// paths below, which do what the general ones do for it (no draw is made,
// each packet joins the end of the time-ordered list as immediate, and the
// head of that list leaves) without the general ones' tests: the cost of
// such a netem is a fifo's (issue 49's 1.3 times at most).

// drawsNothing reports whether a packet queued now needs no draw and no
// time: netem_enqueue then draws nothing (each of its draws is guarded by
// a probability of 0 or by a gap of 0, and tabledist by a jitter of 0)
// and holds the packet until it is dequeued.
func (q *Queue) drawsNothing() bool {
	s := &q.st
	return s.duplicate == 0 && s.corrupt == 0 && q.loss.kind == lossRandom && q.loss.p == 0 && !q.timed()
}

// enqueuePlain is enqueue for a packet of a netem that draws nothing,
// when every packet held is immediate: refused past the limit, else held
// as immediate at the end of the list.
func (q *Queue) enqueuePlain(pkt *stack.PacketBuffer, size uint32, now int64) bool {
	if q.qlen >= int(q.st.limit) {
		q.drops++
		return false
	}
	q.counter++
	q.t.linear.pushBack(held{pkt: pkt, size: size, tts: immediate, arrived: now})
	q.qlen++
	q.backlog += uint64(size)
	q.activated = true // immediate is before every next event
	return true
}

// dequeueLinear is Dequeue when the head of the time-ordered list is the
// packet that leaves next and no slot can hold it (nothing peeked or sent
// ahead, the heap empty, no slots): it hands over that head if it is due
// at now, and reports false, changing nothing, otherwise.
func (q *Queue) dequeueLinear(now int64) (*stack.PacketBuffer, uint32, bool) {
	r := &q.t.linear
	if r.n == 0 || len(q.t.heap) != 0 || q.ahead.n != 0 || q.hasPeeked || q.slotOn {
		return nil, 0, false
	}
	h := &r.buf[r.head]
	if h.tts > now {
		return nil, 0, false
	}
	pkt, size := h.pkt, h.size
	h.pkt = nil // the reference is handed over
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	q.qlen--
	q.backlog -= uint64(size)
	return pkt, size, true
}
