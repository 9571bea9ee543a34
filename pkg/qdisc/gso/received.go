package gso

import (
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// maxReceivedHeaders is the most bytes ReceivedWireSize reads: an IPv4
// header with the most options (60 bytes) and a TCP header with the most
// options (60 bytes).
const maxReceivedHeaders = 2 * 60

// ReceivedWireSize returns the bytes a received packet stood for on the
// wire, as Linux charges a GRO packet on an ingress qdisc (ifb):
// qdisc_pkt_len_init counts gso_segs segments, each with its headers. With
// host GSO the host hands the sandbox TCP packets that GRO merged from many
// segments (up to 64 KiB), with no GSOOptions to say so; they are recognized
// by their size.
//
// A packet whose network data, pkt.Data(), is larger than mtu (the link's
// MTU; the link header is in pkt.LinkHeader(), as fdbased and ethernet
// consume it) and that is a well-formed TCP packet — delivered as IPv4 with
// a 4 in the version, an IHL of at least 5, a total length equal to the
// data's and no fragmentation, or as IPv6 with a 6, a payload length equal
// to the data's after the fixed header and TCP as the next header (GRO
// merges no extension headers); a TCP data offset of at least 5 words, all
// within the data; no network or transport header parsed yet — is charged
//
//	pkt.Size() + (segs-1) * hdrLen
//
// where hdrLen is the link, IP and TCP header bytes and segs =
// ceil(payload/mss), mss = mtu - IP header - TCP header: the segments a
// sender on that MTU made (GRO merges only segments of one size, and a
// shorter last one). A sender with a smaller MSS made more segments than
// that. Every other packet, a malformed one included, is charged
// pkt.Size(). It returns 0 for a nil packet.
//
// ReceivedWireSize neither allocates nor panics, and it does not change
// pkt: it copies at most maxReceivedHeaders bytes of headers to read them.
func ReceivedWireSize(pkt *stack.PacketBuffer, mtu uint32) uint64 {
	if pkt == nil {
		return 0
	}
	size := max(pkt.Size(), 0)
	segs, ipLen, tcpLen := receivedSegments(pkt, mtu)
	if segs <= 1 {
		return uint64(size)
	}
	hdrLen := pkt.Size() - pkt.Data().Size() + ipLen + tcpLen
	return uint64(size) + uint64(segs-1)*uint64(hdrLen)
}

// receivedSegments returns the segments a received packet stands for and
// the lengths of its IP and TCP headers (see ReceivedWireSize), or 1, 0
// and 0 for a packet charged its size.
func receivedSegments(pkt *stack.PacketBuffer, mtu uint32) (segs, ipLen, tcpLen int) {
	data := pkt.Data().Size()
	if uint64(data) <= uint64(mtu) || len(pkt.NetworkHeader().Slice()) != 0 || len(pkt.TransportHeader().Slice()) != 0 {
		return 1, 0, 0
	}
	var buf [maxReceivedHeaders]byte
	h := buf[:peekData(pkt, buf[:])]
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		if len(h) < header.IPv4MinimumSize || header.IPVersion(h) != header.IPv4Version {
			return 1, 0, 0
		}
		ip := header.IPv4(h)
		ipLen = int(ip.HeaderLength())
		if ipLen < header.IPv4MinimumSize || ip.Protocol() != uint8(header.TCPProtocolNumber) ||
			ip.More() || ip.FragmentOffset() != 0 || int(ip.TotalLength()) != data {
			return 1, 0, 0
		}
	case header.IPv6ProtocolNumber:
		if len(h) < header.IPv6MinimumSize || header.IPVersion(h) != header.IPv6Version {
			return 1, 0, 0
		}
		ip := header.IPv6(h)
		ipLen = header.IPv6MinimumSize
		if ip.NextHeader() != uint8(header.TCPProtocolNumber) || int(ip.PayloadLength()) != data-ipLen {
			return 1, 0, 0
		}
	default:
		return 1, 0, 0
	}
	if len(h) < ipLen+header.TCPMinimumSize {
		return 1, 0, 0
	}
	tcpLen = int(header.TCP(h[ipLen:]).DataOffset())
	if tcpLen < header.TCPMinimumSize || ipLen+tcpLen > len(h) {
		return 1, 0, 0
	}
	mss := int(mtu) - ipLen - tcpLen
	if mss <= 0 {
		return 1, 0, 0
	}
	payload := data - ipLen - tcpLen
	return (payload + mss - 1) / mss, ipLen, tcpLen
}

// peekData copies the first bytes of pkt.Data() into b, as many as fit,
// and returns how many it copied. It reads the packet's views in place:
// unlike pkt.Data().PullUp, it neither merges nor clones them.
func peekData(pkt *stack.PacketBuffer, b []byte) int {
	views, off := pkt.AsViewList()
	off += pkt.HeaderSize() // the data follows the headers
	n := 0
	for v := views.Front(); v != nil && n < len(b); v = v.Next() {
		s := v.AsSlice()
		if off >= len(s) {
			off -= len(s)
			continue
		}
		n += copy(b[n:], s[off:])
		off = 0
	}
	return n
}
