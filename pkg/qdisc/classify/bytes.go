package classify

import (
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// packetBytes reads a packet's network-layer bytes (its network header
// onward) where they lie in the packet's views, without modifying the
// packet or allocating: PacketData.PullUp, and PacketHeader.Slice on a
// header that is there, may merge or clone chunks, and cost a PullUp each.
//
// The network header starts after the link-layer (and virtio) header when
// headers were pushed (the send path) or the network header was consumed;
// otherwise (a packet as a link hands it up, its link header perhaps
// consumed) it starts the data.
type packetBytes struct {
	// first is the bytes in the view where they start; rest is the view
	// after it.
	first []byte
	rest  *buffer.View
	// size is the number of bytes in all.
	size int
}

// init points b at pkt's network-layer bytes.
func (b *packetBytes) init(pkt *stack.PacketBuffer) {
	b.first, b.rest, b.size = networkBytes(pkt)
}

// networkBytes returns where pkt's network-layer bytes start: the bytes
// from there to the end of the view they start in (never past the
// packet), the view after that one, and how many bytes there are in all.
// It returns them rather than filling a packetBytes, so that the IPv4
// path of Classify keeps them in registers.
func networkBytes(pkt *stack.PacketBuffer) (first []byte, rest *buffer.View, size int) {
	views, start := pkt.AsViewList() // start: where the first header begins
	size = pkt.Size()
	if pkt.HeaderSize() != 0 {
		skip := linkBytes(pkt)
		start += skip
		size -= skip
	}
	for v := views.Front(); v != nil; v = v.Next() {
		s := v.AsSlice()
		if start >= len(s) {
			start -= len(s)
			continue
		}
		s = s[start:]
		if len(s) > size { // never past the packet, so at need not check
			s = s[:max(size, 0)]
		}
		return s, v.Next(), size
	}
	return nil, nil, size
}

// linkBytes is how many bytes of a packet with headers pushed or consumed
// come before its network header. With nothing pushed or consumed (the
// common case on the receive path, which init does not ask about), the
// network header starts the data.
func linkBytes(pkt *stack.PacketBuffer) int {
	pushed := pkt.ReservedHeaderBytes() - pkt.AvailableHeaderBytes()
	if pushed == 0 && len(pkt.NetworkHeader().Slice()) == 0 {
		// Nothing parsed past the link header: the data. (Slice of a
		// header that is not there costs nothing.)
		return pkt.Size() - pkt.Data().Size()
	}
	return len(pkt.VirtioNetHeader().Slice()) + len(pkt.LinkHeader().Slice())
}

// at returns the n bytes at off, in place or copied into scratch (at least
// n bytes long); ok is false if the packet has fewer than off+n bytes. The
// common case, bytes within the first view (which init cuts to the
// packet's size), is inlined; the rest is atSlow's.
func (b *packetBytes) at(off, n int, scratch []byte) (s []byte, ok bool) {
	if end := off + n; off >= 0 && end <= len(b.first) {
		return b.first[off:end], true
	}
	return b.atSlow(off, n, scratch)
}

// atSlow is at for bytes that are not all in the first view, or not there.
func (b *packetBytes) atSlow(off, n int, scratch []byte) (s []byte, ok bool) {
	if off < 0 || n > b.size-off {
		return nil, false
	}
	if off+n <= len(b.first) {
		return b.first[off : off+n], true
	}
	// Past the first view: copy.
	dst := scratch[:n]
	c := 0
	if off < len(b.first) {
		c = copy(dst, b.first[off:])
		off = 0
	} else {
		off -= len(b.first)
	}
	for v := b.rest; v != nil && c < n; v = v.Next() {
		p := v.AsSlice()
		if off < len(p) {
			c += copy(dst[c:], p[off:])
			off = 0
		} else {
			off -= len(p)
		}
	}
	return dst, c == n
}
