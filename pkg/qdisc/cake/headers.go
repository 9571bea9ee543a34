package cake

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Header reading. Packets are untrusted: every read below is of bytes
// checked to be there, from a bounded copy of the packet's headers, and
// a header that is not well formed is opaque (no DSCP, no ECN mark, not an
// ACK the filter may drop).

// maxWindow bounds the bytes of a packet's headers cake reads: an IPv4
// header with options (60), an IPv6 header tunnelled in it (40, Linux's
// 6in4 case), and a TCP header with options (60), rounded up.
const maxWindow = 192

// window copies into buf the packet's bytes from its network header on,
// at most len(buf): the network and transport headers where the send path
// parsed them, and what follows them (or, on the receive path, the start
// of its data). It returns how many it copied.
func window(pkt *stack.PacketBuffer, buf []byte) int {
	nh := pkt.NetworkHeader().Slice()
	if len(nh) == 0 {
		d, ok := pkt.Data().PullUp(min(pkt.Data().Size(), len(buf)))
		if !ok {
			return 0
		}
		return copy(buf, d)
	}
	n := copy(buf, nh)
	n += copy(buf[n:], pkt.TransportHeader().Slice())
	if n < len(buf) {
		if d, ok := pkt.Data().PullUp(min(pkt.Data().Size(), len(buf)-n)); ok {
			n += copy(buf[n:], d)
		}
	}
	return n
}

// dsfieldBytes returns the first two bytes of pkt's network header (nh,
// if parsed), where IPv4's TOS and IPv6's traffic class are, and whether
// it has them.
func dsfieldBytes(pkt *stack.PacketBuffer, nh []byte) (b0, b1 byte, ok bool) {
	if len(nh) > 0 {
		if len(nh) < 2 {
			return 0, 0, false
		}
		return nh[0], nh[1], true
	}
	d, ok := pkt.Data().PullUp(min(pkt.Data().Size(), 2))
	if !ok || len(d) < 2 {
		return 0, 0, false
	}
	return d[0], d[1], true
}

// arpDSCP is the DSCP cake gives ARP: CS7, network control.
const arpDSCP = 0x38

// dscp is cake_handle_diffserv: pkt's (network header nh, if parsed) DSCP (0 for a packet with none, or
// too short to hold one), and, with wash, the DSCP cleared in the packet
// (its ECN bits kept, IPv4's checksum updated) where its network header
// is whole and writable (the send path's parsed header).
func dscp(pkt *stack.PacketBuffer, nh []byte, wash bool) uint8 {
	var d uint8
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		_, b1, ok := dsfieldBytes(pkt, nh)
		if !ok {
			return 0
		}
		d = b1 >> 2
	case header.IPv6ProtocolNumber:
		b0, b1, ok := dsfieldBytes(pkt, nh)
		if !ok {
			return 0
		}
		d = (b0<<4 | b1>>4) >> 2
	case header.ARPProtocolNumber:
		return arpDSCP
	default:
		return 0
	}
	if wash && d != 0 {
		setDSField(nh, uint16(pkt.NetworkProtocolNumber), ecnMask, 0)
	}
	return d
}

// ECN codepoints in the low two bits of the DS field (RFC 3168).
const (
	ecnMask = 0x3
	ecnCE   = 0x3
)

// setDSField sets the DS field of the IPv4 or IPv6 header nh to
// (field & mask) | value, as Linux's ipv4_change_dsfield and
// ipv6_change_dsfield do, updating IPv4's checksum incrementally (RFC
// 1624), and reports whether the header was whole and of its version.
func setDSField(nh []byte, proto uint16, mask, value uint8) bool {
	switch proto {
	case uint16(header.IPv4ProtocolNumber):
		if len(nh) < header.IPv4MinimumSize || nh[0]>>4 != 4 {
			return false
		}
		if ihl := int(nh[0]&0xf) * 4; ihl < header.IPv4MinimumSize || ihl > len(nh) {
			return false
		}
		old := binary.BigEndian.Uint16(nh[0:2])
		nh[1] = nh[1]&mask | value
		sum := uint32(^binary.BigEndian.Uint16(nh[10:12])) + uint32(^old) + uint32(binary.BigEndian.Uint16(nh[0:2]))
		sum = sum&0xffff + sum>>16
		sum = sum&0xffff + sum>>16
		binary.BigEndian.PutUint16(nh[10:12], ^uint16(sum))
		return true
	case uint16(header.IPv6ProtocolNumber):
		if len(nh) < header.IPv6MinimumSize || nh[0]>>4 != 6 {
			return false
		}
		tc := (nh[0]<<4|nh[1]>>4)&mask | value
		nh[0] = nh[0]&0xf0 | tc>>4
		nh[1] = nh[1]&0x0f | tc<<4
		return true
	}
	return false
}

// markCE sets CE on an ECN-capable IPv4 or IPv6 packet (ECT(0), ECT(1) or
// CE already) and reports whether it is ECN-capable: Linux's
// INET_ECN_set_ce. Only a whole network header the send path parsed is
// written; any other packet is not ECN-capable here, and COBALT drops it.
func markCE(pkt *stack.PacketBuffer) bool {
	nh := pkt.NetworkHeader().Slice()
	var ecn uint8
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		if len(nh) < header.IPv4MinimumSize {
			return false
		}
		ecn = nh[1] & ecnMask
	case header.IPv6ProtocolNumber:
		if len(nh) < header.IPv6MinimumSize {
			return false
		}
		ecn = (nh[1] >> 4) & ecnMask
	default:
		return false
	}
	if ecn == 0 {
		return false
	}
	if ecn == ecnCE {
		// Already CE: nothing to write, as long as the header is well
		// formed.
		return setDSField(nh, uint16(pkt.NetworkProtocolNumber), 0xff, 0)
	}
	return setDSField(nh, uint16(pkt.NetworkProtocolNumber), 0xff, ecnCE)
}
