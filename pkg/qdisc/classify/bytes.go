package classify

import (
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// packetBytes reads a packet's network-layer bytes (its network header
// onward) without modifying the packet or allocating: PacketData.PullUp
// would merge chunks, copying and allocating, when the bytes span them.
//
// The bytes are the network and transport headers, if parsed, then the
// data; or, when the network header is not parsed (a packet as a link
// hands it up), the data alone. A read within one piece is answered in
// place; only one that spans pieces is copied.
type packetBytes struct {
	// pieces are the network header, the transport header and the
	// contiguous start of the data; rest is the view that holds what
	// follows, from its start.
	pieces [3][]byte
	rest   *buffer.View
	// size is the number of bytes in all.
	size int
}

func (b *packetBytes) init(pkt *stack.PacketBuffer) {
	data := pkt.Data().Size()
	if nh := pkt.NetworkHeader().Slice(); len(nh) > 0 {
		th := pkt.TransportHeader().Slice()
		b.pieces[0], b.pieces[1] = nh, th
		b.size = len(nh) + len(th)
	}
	b.size += data
	if data == 0 {
		return
	}
	views, off := pkt.AsViewList()
	off += pkt.Size() - data // where the data starts
	for v := views.Front(); v != nil; v = v.Next() {
		s := v.AsSlice()
		if off >= len(s) {
			off -= len(s)
			continue
		}
		b.pieces[2] = s[off:]
		b.rest = v.Next()
		return
	}
}

// at returns the n bytes at off, in place or copied into scratch (at least
// n bytes long); ok is false if the packet has fewer than off+n bytes.
func (b *packetBytes) at(off, n int, scratch []byte) (s []byte, ok bool) {
	if off < 0 || n > b.size-off {
		return nil, false
	}
	o := off
	for _, p := range b.pieces {
		if o < len(p) {
			if o+n <= len(p) {
				return p[o : o+n], true
			}
			break
		}
		o -= len(p)
	}
	// Across pieces: copy.
	dst := scratch[:n]
	c := 0
	o = off
	for _, p := range b.pieces {
		if o < len(p) {
			c += copy(dst[c:], p[o:])
			o = 0
		} else {
			o -= len(p)
		}
		if c == n {
			return dst, true
		}
	}
	for v := b.rest; v != nil && c < n; v = v.Next() {
		p := v.AsSlice()
		if o < len(p) {
			c += copy(dst[c:], p[o:])
			o = 0
		} else {
			o -= len(p)
		}
	}
	return dst, c == n
}
