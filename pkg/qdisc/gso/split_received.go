package gso

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// SplitReceived cuts pkt, a received packet as a link delivers it (see
// ReceivedWireSize), that stands for more than maxWire bytes on the wire
// into pieces that each stand for at most maxWire, as Linux's tbf_segment
// cuts a GRO packet larger than its bucket on ifb. A shaper whose bucket
// holds the largest packet the link delivers (a 64 KiB aggregate and its
// link header) but not the segments that packet was on the wire (68,130
// bytes for 45 segments of 1448 bytes) must charge those segments in full,
// or the rate on the wire runs over by their headers (3.9%); a bucket
// cannot charge more than it holds, so the packet goes up in pieces.
//
// As Split does on the send path, it cuts pkt not into segments but into
// pieces of as many whole segments (of the MSS a sender on mtu uses, as
// ReceivedWireSize counts them) as fit in maxWire, the last piece the
// rest, so that the pieces' ReceivedWireSizes add up to pkt's. Each piece
// is as the link delivers a packet: its link header consumed into
// LinkHeader, its IP and TCP headers and payload in Data, pkt's
// NetworkProtocolNumber, RXChecksumValidated and PktType, with the fields
// that differ between pieces fixed as Split fixes them (IPv4 total length,
// ID and header checksum; IPv6 payload length; TCP sequence number, FIN
// and PSH on the last piece only, CWR on the first only) and a full TCP
// checksum.
//
// It returns no pieces and no error when pkt need not be cut
// (ReceivedWireSize(pkt, mtu) <= maxWire), and an error, and no pieces,
// when it cannot be cut: it is larger than maxWire and not a well-formed
// TCP aggregate, or one segment and its headers exceed maxWire
// (ErrTooSmall); it carries a SYN, or its IPv4 or TCP checksum is wrong
// and the link has not validated it (ErrMalformed: cut, it would go up
// with good checksums).
// Like Split, it does not consume the caller's reference to pkt and only
// reads it; the caller owns one reference to each piece.
func SplitReceived(pkt *stack.PacketBuffer, mtu uint32, maxWire uint64) ([]*stack.PacketBuffer, error) {
	if pkt == nil || ReceivedWireSize(pkt, mtu) <= maxWire {
		return nil, nil
	}
	segs, ipLen, tcpLen := receivedSegments(pkt, mtu)
	if segs <= 1 {
		return nil, fmt.Errorf("%w: a packet of %d bytes that is not a TCP aggregate exceeds %d", ErrTooSmall, pkt.Size(), maxWire)
	}
	// Split cuts it as the send path's host-GSO packet it would be with
	// its headers parsed: a clone, whose headers are consumed in place.
	c := pkt.Clone()
	defer c.DecRef()
	c.NetworkHeader().Consume(ipLen)
	c.TransportHeader().Consume(tcpLen)
	if !pkt.RXChecksumValidated && !checksumsValid(c) {
		return nil, fmt.Errorf("%w: a received aggregate's checksum is wrong", ErrMalformed)
	}
	c.TransportProtocolNumber = header.TCPProtocolNumber
	c.GSOOptions = stack.GSO{Type: stack.GSOTCPv4, MSS: uint16(int(mtu) - ipLen - tcpLen), L3HdrLen: uint16(ipLen)}
	if pkt.NetworkProtocolNumber == header.IPv6ProtocolNumber {
		c.GSOOptions.Type = stack.GSOTCPv6
	}
	sent, err := Split(c, maxWire)
	if err != nil {
		return nil, err
	}
	pieces := make([]*stack.PacketBuffer, len(sent))
	linkLen := len(pkt.LinkHeader().Slice())
	for i, s := range sent {
		p := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: s.ToBuffer()})
		s.DecRef()
		if linkLen > 0 {
			p.LinkHeader().Consume(linkLen)
		}
		p.NetworkProtocolNumber = pkt.NetworkProtocolNumber
		p.RXChecksumValidated = pkt.RXChecksumValidated
		p.PktType = pkt.PktType
		pieces[i] = p
	}
	return pieces, nil
}

// checksumsValid reports whether c, a received TCP packet with its IP
// and TCP headers consumed, has a good IPv4 header checksum (IPv6 has
// none) and a good TCP checksum.
func checksumsValid(c *stack.PacketBuffer) bool {
	tcp := header.TCP(c.TransportHeader().Slice())
	n := uint16(c.Data().Size())
	if c.NetworkProtocolNumber == header.IPv6ProtocolNumber {
		ip := header.IPv6(c.NetworkHeader().Slice())
		return tcp.IsChecksumValid(ip.SourceAddress(), ip.DestinationAddress(), c.Data().Checksum(), n)
	}
	ip := header.IPv4(c.NetworkHeader().Slice())
	return ip.IsChecksumValid() && tcp.IsChecksumValid(ip.SourceAddress(), ip.DestinationAddress(), c.Data().Checksum(), n)
}
