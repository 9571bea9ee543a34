package netem

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// corrupted is what netem queues in place of a packet it corrupts.
type corrupted struct {
	// pkt is the corrupted copy (nil if it could not be made: Linux
	// drops the packet), size what it is charged.
	pkt  *stack.PacketBuffer
	size uint32
	// rest are the other segments of a GSO packet, to be queued after
	// it, in order, each as a packet of its own.
	rest []*stack.PacketBuffer
}

// release releases what c holds.
func (c *corrupted) release() {
	if c.pkt != nil {
		c.pkt.DecRef()
	}
	for _, p := range c.rest {
		p.DecRef()
	}
}

// corrupt is netem_enqueue's corruption of pkt, which it only reads: a
// GSO packet is cut into its segments first (netem_segment) and the first
// is corrupted, the others queued after it as they are; the packet is
// copied (skb_unshare: its views may be shared, and no other holder sees
// the change), its TCP or UDP checksum made if the link was to make it
// (skb_checksum_help), and one bit of one byte of its transport part
// flipped, both drawn from the corruption's own generator (see
// corruptBit). It returns ok false, holding nothing, when the packet
// cannot be cut (Linux drops it); c.pkt nil, with the other segments,
// when the first cannot be copied or its checksum cannot be made.
func (q *Queue) corrupt(pkt *stack.PacketBuffer, size uint32) (c corrupted, ok bool) {
	first := pkt
	segs, err := q.path.segment(pkt)
	if err != nil {
		return corrupted{}, false
	}
	if len(segs) > 0 {
		first, c.rest = segs[0], segs[1:]
		size = uint32(first.Size())
		defer first.DecRef() // the copy holds its own reference
	}
	b := packetBytes(first)
	l := locate(first, b)
	if partial, zeroUDP := q.path.partial(first); partial && !l.fillChecksum(b, zeroUDP) && first.GSOOptions.NeedsCsum {
		return c, true // the host was to make a checksum netem cannot
	}
	if n := l.end - l.start; n > 0 {
		i, bit := q.corruptBit(uint32(n))
		b[l.start+int(i)] ^= 1 << bit
	}
	cp, err := rebuild(first, b)
	if err != nil {
		return c, true
	}
	cp.GSOOptions.NeedsCsum = false // made: the link makes none
	cp.RXChecksumValidated = false  // the receiver checks it
	c.pkt, c.size = cp, size
	return c, true
}

// corruptBit draws the byte, of n, and the bit a corrupted packet has
// flipped, as Linux's get_random_u32_below(headlen) and
// get_random_u32_below(8), from the generator netem keeps for them.
func (q *Queue) corruptBit(n uint32) (byteIndex uint32, bit uint8) {
	byteIndex = q.flip.below(n)
	return byteIndex, uint8(q.flip.below(8))
}
