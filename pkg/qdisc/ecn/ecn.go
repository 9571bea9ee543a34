// Package ecn reads and sets the ECN field of a packet's IP header, as
// Linux's INET_ECN_set_ce and skb_get_dsfield do, for the qdiscs that mark
// in place of dropping (fq_codel, netem). The header is the sender's, so
// it is read only where it is whole and well formed.
package ecn

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// ECN codepoints in the low two bits of IPv4's TOS and IPv6's traffic
// class (RFC 3168).
const (
	ecnMask   = 0x3
	ecnNotECT = 0x0
	ecnCE     = 0x3
)

// MarkCE sets CE on an ECN-capable IPv4 or IPv6 packet (ECT(0), ECT(1), or
// already CE) and reports whether the packet is ECN-capable: Linux's
// INET_ECN_set_ce. Packets arriving from outside may be ECT; gVisor's own
// TCP does not set ECN.
//
// The header comes from the packet's sender, so it is read only where it
// is there and well formed: the version must match the protocol, and an
// IPv4 header must be whole (IHL of at least 5 words, all of them in the
// network header). Anything else is opaque: not marked (the caller drops it).
// IPv4's checksum is updated incrementally (RFC 1624), as Linux does, so
// that a bad checksum stays bad rather than being made good here.
func MarkCE(pkt *stack.PacketBuffer) bool {
	nh := pkt.NetworkHeader().Slice()
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		if len(nh) < header.IPv4MinimumSize || nh[0]>>4 != 4 {
			return false
		}
		if ihl := int(nh[0]&0xf) * 4; ihl < header.IPv4MinimumSize || ihl > len(nh) {
			return false
		}
		tos := nh[1]
		if tos&ecnMask == ecnNotECT {
			return false
		}
		if tos&ecnMask != ecnCE {
			old := binary.BigEndian.Uint16(nh[0:2])
			nh[1] = tos | ecnCE
			updateChecksum(nh[10:12], old, binary.BigEndian.Uint16(nh[0:2]))
		}
		return true
	case header.IPv6ProtocolNumber:
		if len(nh) < header.IPv6MinimumSize || nh[0]>>4 != 6 {
			return false
		}
		// The traffic class straddles bytes 0 and 1; its ECN bits are
		// bits 4 and 5 of byte 1. Only they change.
		if (nh[1]>>4)&ecnMask == ecnNotECT {
			return false
		}
		nh[1] |= ecnCE << 4
		return true
	}
	return false
}

// DSField returns a packet's DS field, the IPv4 TOS or IPv6 traffic
// class byte, read as MarkCE reads the header; ok is false for anything
// else (Linux's skb_get_dsfield).
func DSField(pkt *stack.PacketBuffer) (uint8, bool) {
	nh := pkt.NetworkHeader().Slice()
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		if len(nh) >= header.IPv4MinimumSize && nh[0]>>4 == 4 {
			return nh[1], true
		}
	case header.IPv6ProtocolNumber:
		if len(nh) >= header.IPv6MinimumSize && nh[0]>>4 == 6 {
			return nh[0]<<4 | nh[1]>>4, true
		}
	}
	return 0, false
}

// updateChecksum rewrites the one's-complement checksum in sum after one
// 16-bit word of what it covers changed from old to new: RFC 1624's
// HC' = ~(~HC + ~m + m').
func updateChecksum(sum []byte, old, new uint16) {
	x := uint32(^binary.BigEndian.Uint16(sum)) + uint32(^old) + uint32(new)
	x = (x & 0xffff) + x>>16
	x = (x & 0xffff) + x>>16
	binary.BigEndian.PutUint16(sum, ^uint16(x))
}
