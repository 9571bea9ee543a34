package ingress

import (
	"encoding/binary"
	"time"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// The control allowance: link-layer control frames pass the shaper
// unshaped at most ControlRate a second, ControlBurst at once; the rest are
// shaped like any other frame. Address resolution needs a few frames a
// second; the allowance keeps a flood of well-formed control frames from
// carrying bulk traffic past the ceiling: at most ControlRate frames of at
// most maxNDPSize bytes a second (16 x 1280 B/s, 164 kbit/s).
const (
	ControlRate  = 16
	ControlBurst = 16
)

// The largest control frames, in bytes from the network header on: an ARP
// message for IPv4 over Ethernet (28 bytes) padded to Ethernet's minimum
// payload (46) with room for a VLAN tag's 4 and some slack; and the IPv6
// minimum MTU, which RFC 4861 bounds a Redirect by and no other neighbour
// discovery message needs to pass.
const (
	maxARPSize = 64
	maxNDPSize = header.IPv6MinimumMTU
)

// isControl reports whether pkt, delivered as protocol, is a well-formed
// link-layer control frame: an Ethernet/IPv4 ARP request or reply of ARP's
// size, or an IPv6 neighbour discovery message (ICMPv6 types 133 to 137,
// code 0) with hop limit 255 (RFC 4861 drops any other), no extension
// header, a payload length that matches the frame and a size no larger than
// maxNDPSize. Anything else, a malformed one included, is shaped, and so
// is a packet whose network header a link has already parsed (links hand
// up the network header in the data).
func isControl(protocol tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) bool {
	if len(pkt.NetworkHeader().Slice()) != 0 {
		return false
	}
	size := pkt.Data().Size()
	switch protocol {
	case header.ARPProtocolNumber:
		if size < header.ARPSize || size > maxARPSize {
			return false
		}
		b, ok := pkt.Data().PullUp(header.ARPSize)
		if !ok {
			return false
		}
		a := header.ARP(b)
		return a.IsValid() && (a.Op() == header.ARPRequest || a.Op() == header.ARPReply)
	case header.IPv6ProtocolNumber:
		const icmp = header.IPv6MinimumSize
		if size < icmp+header.ICMPv6MinimumSize || size > maxNDPSize {
			return false
		}
		b, ok := pkt.Data().PullUp(icmp + header.ICMPv6HeaderSize)
		if !ok {
			return false
		}
		ip := header.IPv6(b)
		if b[0]>>4 != 6 || ip.TransportProtocol() != header.ICMPv6ProtocolNumber ||
			ip.HopLimit() != header.NDPHopLimit || int(binary.BigEndian.Uint16(b[4:6])) != size-icmp {
			return false
		}
		t, code := header.ICMPv6Type(b[icmp]), b[icmp+1]
		return code == 0 && t >= header.ICMPv6RouterSolicit && t <= header.ICMPv6RedirectMsg
	}
	return false
}

// allowance is the control frames' own token bucket, in frames.
type allowance struct {
	clock tcpip.Clock

	mu sync.Mutex
	// credit is the allowance in nanoseconds of ControlRate, at most
	// ControlBurst frames' worth, as of last.
	// +checklocks:mu
	credit int64
	// +checklocks:mu
	last int64
}

// perFrame is one frame's cost in nanoseconds of credit.
const perFrame = int64(time.Second) / ControlRate

func newAllowance(clock tcpip.Clock) *allowance {
	return &allowance{clock: clock, credit: ControlBurst * perFrame, last: nowNS(clock)}
}

// take spends one frame's allowance if there is one.
func (a *allowance) take() bool {
	now := nowNS(a.clock)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.credit = min(a.credit+max(now-a.last, 0), ControlBurst*perFrame)
	a.last = max(a.last, now)
	if a.credit < perFrame {
		return false
	}
	a.credit -= perFrame
	return true
}

func nowNS(c tcpip.Clock) int64 { return int64(c.NowMonotonic().Sub(tcpip.MonotonicTime{})) }
