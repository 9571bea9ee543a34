package flowhash

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Hashes is what a host-fair qdisc (cake) needs of a packet: its flow, as
// Packet hashes it, and its source and destination hosts, each hashed
// from that address alone. A packet that is not IPv4 or IPv6, or whose
// network header is truncated or of another version than its protocol
// says, has no hosts: Src and Dst are 0, as Linux's cake_hash leaves them
// for a packet the flow dissector finds no addresses in.
type Hashes struct {
	Flow, Src, Dst uint32
}

// Hosts hashes pkt, whose network protocol is proto, as Packet does for
// its flow and by its addresses for its hosts, reading the same bytes as
// Packet (at most the first 128 of its network header on).
func (h Hasher) Hosts(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) Hashes {
	return h.hosts(proto, pkt, true)
}

// HostPair returns Hosts' Src and Dst alone, for a caller that has the
// flow's hash already (pkt.Hash): it reads the same bytes, and hashes no
// flow.
func (h Hasher) HostPair(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) (src, dst uint32) {
	if nh := pkt.NetworkHeader().Slice(); HasAddresses(proto, nh) {
		return h.HostPairBytes(proto, nh)
	}
	hs := h.hosts(proto, pkt, false)
	return hs.Src, hs.Dst
}

// HostPairBytes is HostPair of a packet whose network header starts b.
func (h Hasher) HostPairBytes(proto tcpip.NetworkProtocolNumber, b []byte) (src, dst uint32) {
	hs := h.hostsBytes(proto, b, Hashes{})
	return hs.Src, hs.Dst
}

// hosts is Hosts, the flow hashed only if flow is set.
func (h Hasher) hosts(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer, flow bool) Hashes {
	if proto != header.IPv4ProtocolNumber && proto != header.IPv6ProtocolNumber {
		// No addresses to read: the flow is the protocol's alone.
		if !flow {
			return Hashes{}
		}
		return Hashes{Flow: h.Bytes(proto, nil)}
	}
	var b [maxHeaders]byte
	n := 0
	if nh := pkt.NetworkHeader().Slice(); len(nh) > 0 {
		n = copy(b[:], nh)
		th := pkt.TransportHeader().Slice()
		n += copy(b[n:], th)
		if n < maxHeaders && len(th) == 0 {
			if d, ok := pkt.Data().PullUp(min(pkt.Data().Size(), maxHeaders-n)); ok {
				n += copy(b[n:], d)
			}
		}
	} else if d, ok := pkt.Data().PullUp(min(pkt.Data().Size(), maxHeaders)); ok {
		n = copy(b[:], d)
	}
	if !flow {
		return h.hostsBytes(proto, b[:n], Hashes{})
	}
	return h.HostsBytes(proto, b[:n])
}

// HostsBytes is Hosts of a packet whose network header starts b. The host
// hashes are seeded and mix in the protocol, so that an IPv4 host and an
// IPv6 host never share a hash by their bytes.
func (h Hasher) HostsBytes(proto tcpip.NetworkProtocolNumber, b []byte) Hashes {
	return h.hostsBytes(proto, b, Hashes{Flow: h.Bytes(proto, b)})
}

// hostsBytes is HostsBytes with the flow's hash given in hs.
func (h Hasher) hostsBytes(proto tcpip.NetworkProtocolNumber, b []byte, hs Hashes) Hashes {
	b = b[:min(len(b), maxHeaders)]
	// A seed of its own for hosts, so that a host's hash is not a flow's.
	x := mix(h.seed^0x5bd1e995, uint32(proto))
	switch proto {
	case header.IPv4ProtocolNumber:
		if len(b) < header.IPv4MinimumSize || b[0]>>4 != 4 || int(b[0]&0xf)*4 < header.IPv4MinimumSize {
			return hs
		}
		hs.Src = final(mix(x, binary.BigEndian.Uint32(b[12:16])))
		hs.Dst = final(mix(x, binary.BigEndian.Uint32(b[16:20])))
	case header.IPv6ProtocolNumber:
		if len(b) < header.IPv6MinimumSize || b[0]>>4 != 6 {
			return hs
		}
		s, d := x, x
		for i := 8; i < 24; i += 4 {
			s = mix(s, binary.BigEndian.Uint32(b[i:i+4]))
			d = mix(d, binary.BigEndian.Uint32(b[i+16:i+20]))
		}
		hs.Src, hs.Dst = final(s), final(d)
	}
	return hs
}

// HasAddresses reports whether nh, a network header of protocol proto, is
// long enough to hold its addresses (then HostPairBytes of it is HostPair
// of its packet, with nothing copied).
func HasAddresses(proto tcpip.NetworkProtocolNumber, nh []byte) bool {
	return (proto == header.IPv4ProtocolNumber && len(nh) >= header.IPv4MinimumSize) ||
		(proto == header.IPv6ProtocolNumber && len(nh) >= header.IPv6MinimumSize)
}
