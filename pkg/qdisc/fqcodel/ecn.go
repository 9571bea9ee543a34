package fqcodel

import (
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

// markCE sets CE on an ECN-capable IPv4 or IPv6 packet (ECT(0), ECT(1), or
// already CE), fixing IPv4's header checksum, and reports whether the
// packet is ECN-capable: Linux's INET_ECN_set_ce. Packets arriving from
// outside may be ECT; gVisor's own TCP does not set ECN.
func markCE(pkt *stack.PacketBuffer) bool {
	nh := pkt.NetworkHeader().Slice()
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		if len(nh) < header.IPv4MinimumSize {
			return false
		}
		ip := header.IPv4(nh)
		tos, _ := ip.TOS()
		if tos&ecnMask == ecnNotECT {
			return false
		}
		if tos&ecnMask != ecnCE {
			ip.SetTOS(tos|ecnCE, 0)
			ip.SetChecksum(0)
			ip.SetChecksum(^ip.CalculateChecksum())
		}
		return true
	case header.IPv6ProtocolNumber:
		if len(nh) < header.IPv6MinimumSize {
			return false
		}
		ip := header.IPv6(nh)
		tc, label := ip.TOS()
		if tc&ecnMask == ecnNotECT {
			return false
		}
		ip.SetTOS(tc|ecnCE, label)
		return true
	}
	return false
}
