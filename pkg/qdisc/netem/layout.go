package netem

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// layout is where the parts of a packet lie in its bytes (the packet as
// one slice, from its first header): its IP header and transport part,
// found by reading the headers only once they are known to be there and
// well formed.
type layout struct {
	// start and end bound the bytes corruption flips a bit in: the IP
	// packet's transport part (its header and payload), or the IP header
	// where nothing follows it; every byte after the link header of a
	// packet that is not IP, or not well formed.
	start, end int
	// ip and l4 are where the IP header and the transport part start,
	// when ok: the packet is IPv4 or IPv6, well formed; end is then
	// where the IP packet ends (a link's padding after it is left out).
	ip, l4 int
	ok     bool
	v6     bool
	// proto is the transport protocol.
	proto uint8
	// whole says the transport part is all of its datagram (not a
	// fragment, no routing header): its checksum covers b[l4:end].
	whole bool
}

// locate returns the layout of b, the bytes of pkt.
func locate(pkt *stack.PacketBuffer, b []byte) layout {
	link := min(len(pkt.VirtioNetHeader().Slice())+len(pkt.LinkHeader().Slice()), len(b))
	l := layout{start: link, end: len(b)}
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		l.ipv4(b, link)
	case header.IPv6ProtocolNumber:
		l.ipv6(b, link)
	}
	if l.ok {
		l.start = l.l4
		if l.l4 == l.end { // a bare IP header: its own bits
			l.start = l.ip
		}
	}
	return l
}

// ipv4 fills l from an IPv4 header at b[at:], if it is one.
func (l *layout) ipv4(b []byte, at int) {
	ipb := b[at:]
	if len(ipb) < header.IPv4MinimumSize || header.IPVersion(ipb) != header.IPv4Version {
		return
	}
	ip := header.IPv4(ipb)
	hl, tl := int(ip.HeaderLength()), int(ip.TotalLength())
	if hl < header.IPv4MinimumSize || hl > tl || tl > len(ipb) {
		return
	}
	*l = layout{ok: true, ip: at, l4: at + hl, end: at + tl, proto: ip.Protocol(),
		whole: !ip.More() && ip.FragmentOffset() == 0}
}

// ipv6 fills l from an IPv6 header at b[at:], if it is one, past the
// extension headers that precede a transport header (hop-by-hop,
// routing, fragment, destination options).
func (l *layout) ipv6(b []byte, at int) {
	ipb := b[at:]
	if len(ipb) < header.IPv6MinimumSize || header.IPVersion(ipb) != header.IPv6Version {
		return
	}
	ip := header.IPv6(ipb)
	end := header.IPv6MinimumSize + int(ip.PayloadLength())
	if end > len(ipb) {
		return
	}
	next, off, whole := ip.NextHeader(), header.IPv6MinimumSize, true
walk:
	for {
		switch header.IPv6ExtensionHeaderIdentifier(next) {
		case header.IPv6HopByHopOptionsExtHdrIdentifier, header.IPv6DestinationOptionsExtHdrIdentifier, header.IPv6RoutingExtHdrIdentifier:
			if off+2 > end {
				return
			}
			n := (int(ipb[off+1]) + 1) * 8
			if off+n > end {
				return
			}
			if header.IPv6ExtensionHeaderIdentifier(next) == header.IPv6RoutingExtHdrIdentifier {
				whole = false // the checksum's destination is the route's last
			}
			next, off = ipb[off], off+n
		case header.IPv6FragmentExtHdrIdentifier:
			if off+header.IPv6FragmentExtHdrLength > end {
				return
			}
			whole = false
			next, off = ipb[off], off+header.IPv6FragmentExtHdrLength
		default:
			break walk
		}
	}
	*l = layout{ok: true, v6: true, ip: at, l4: at + off, end: at + end, proto: next, whole: whole}
}

// fillChecksum makes the whole TCP or UDP checksum of the packet in b
// (Linux's skb_checksum_help), and reports whether it did; a UDP checksum
// of 0 is kept where zeroUDP says 0 is the sender's "none".
func (l layout) fillChecksum(b []byte, zeroUDP bool) bool {
	if !l.ok || !l.whole {
		return false
	}
	seg := b[l.l4:l.end]
	var off int
	switch tcpip.TransportProtocolNumber(l.proto) {
	case header.TCPProtocolNumber:
		if len(seg) < header.TCPMinimumSize {
			return false
		}
		off = header.TCPChecksumOffset
	case header.UDPProtocolNumber:
		if len(seg) < header.UDPMinimumSize {
			return false
		}
		off = 6 // the UDP header's checksum
		if zeroUDP && seg[off] == 0 && seg[off+1] == 0 {
			return true
		}
	default:
		return false
	}
	var src, dst tcpip.Address
	if ipb := b[l.ip:]; l.v6 {
		src, dst = header.IPv6(ipb).SourceAddress(), header.IPv6(ipb).DestinationAddress()
	} else {
		src, dst = header.IPv4(ipb).SourceAddress(), header.IPv4(ipb).DestinationAddress()
	}
	seg[off], seg[off+1] = 0, 0
	xsum := header.PseudoHeaderChecksum(tcpip.TransportProtocolNumber(l.proto), src, dst, uint16(len(seg)))
	sum := ^checksum.Checksum(seg, xsum)
	if l.proto == uint8(header.UDPProtocolNumber) && sum == 0 {
		sum = 0xffff // 0 would say "none"
	}
	binary.BigEndian.PutUint16(seg[off:], sum)
	return true
}
