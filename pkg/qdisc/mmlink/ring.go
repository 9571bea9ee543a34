package mmlink

import "gvisor.dev/gvisor/pkg/tcpip/stack"

// held is a packet the link holds: its reference, what its lane charged
// it (size), what it costs of the opportunities (charge), when it came,
// and, once it has left, when (the opportunity that carried its last
// byte).
type held struct {
	pkt     *stack.PacketBuffer
	size    uint32
	charge  uint32
	arrived int64
	left    int64
}

// ring is a FIFO of held packets that grows by doubling and never
// shrinks: once it has grown to what the link holds, queueing allocates
// nothing.
type ring struct {
	buf  []held // len(buf) is 0 or a power of 2
	head int
	n    int
}

// minRing is the ring's first size.
const minRing = 64

// push appends h.
func (r *ring) push(h held) {
	if r.n == len(r.buf) {
		r.grow()
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = h
	r.n++
}

// grow doubles the ring, keeping its order.
func (r *ring) grow() {
	buf := make([]held, max(2*len(r.buf), minRing))
	for i := range r.n {
		buf[i] = *r.at(i)
	}
	r.buf, r.head = buf, 0
}

// at returns the i-th packet from the front.
func (r *ring) at(i int) *held { return &r.buf[(r.head+i)&(len(r.buf)-1)] }

// pop removes and returns the front packet; the ring must not be empty.
func (r *ring) pop() held {
	p := &r.buf[r.head]
	h := *p
	*p = held{}
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return h
}
