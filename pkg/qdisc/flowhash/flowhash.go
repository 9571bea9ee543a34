// Package flowhash picks a packet's flow from its own headers: the IPv4 or
// IPv6 addresses, the transport protocol and, for TCP, UDP, UDP-Lite and
// SCTP, the ports. pkt.Hash cannot be used for this: only gVisor's TCP sets
// it, on the send path, so received packets and UDP, ICMP and ARP all
// carry 0. A Hasher mixes in a random seed of its own, as Linux's flow
// dissector does with its per-qdisc perturbation, so that flows that
// collide in one instance do not collide in every one.
package flowhash

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Hasher hashes packets to flows. The zero Hasher has seed 0.
type Hasher struct{ seed uint32 }

// New returns a Hasher with a random seed.
func New() Hasher { return Hasher{seed: rand.Uint32()} }

// WithSeed returns a Hasher with the given seed (tests use it to repeat).
func WithSeed(seed uint32) Hasher { return Hasher{seed: seed} }

// maxHeaders is the most of a packet Packet reads: an IPv4 header with
// options (60 bytes) and its ports, or an IPv6 header (40 bytes), up to 84
// bytes of extension headers and the ports. A packet whose ports lie
// further in hashes by its addresses and protocol alone.
const maxHeaders = header.IPv6MinimumSize + 84 + 4

// maxExtensions is the most IPv6 extension headers Bytes walks.
const maxExtensions = 8

// Packet hashes pkt, whose network protocol is proto, from its network and
// transport headers if they have been parsed (the send path), else from
// the start of its data (a received packet, as the link hands it up).
func (h Hasher) Packet(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) uint32 {
	if nh := pkt.NetworkHeader().Slice(); len(nh) > 0 {
		var b [maxHeaders]byte
		n := copy(b[:], nh)
		n += copy(b[n:], pkt.TransportHeader().Slice())
		if n < maxHeaders && len(pkt.TransportHeader().Slice()) == 0 {
			// The network header is parsed, the transport one not: the
			// ports, if any, start the data.
			if d, ok := pkt.Data().PullUp(min(pkt.Data().Size(), maxHeaders-n)); ok {
				n += copy(b[n:], d)
			}
		}
		return h.Bytes(proto, b[:n])
	}
	b, ok := pkt.Data().PullUp(min(pkt.Data().Size(), maxHeaders))
	if !ok {
		return h.Bytes(proto, nil)
	}
	return h.Bytes(proto, b)
}

// Bytes hashes a packet of protocol proto whose network header starts b,
// from its first maxHeaders bytes. It reads only what is there and well formed: a header that is truncated,
// of another version than proto says, or (IPv4) shorter than its minimum
// hashes by proto alone, one flow per protocol; one whose ports cannot be
// read (a fragment, first or not, as in Linux's flow dissector without
// FLOW_DISSECTOR_F_PARSE_1ST_FRAG; a truncated or too long header chain)
// hashes by its addresses and protocol.
func (h Hasher) Bytes(proto tcpip.NetworkProtocolNumber, b []byte) uint32 {
	b = b[:min(len(b), maxHeaders)] // what Packet reads
	x := mix(h.seed, uint32(proto))
	switch proto {
	case header.IPv4ProtocolNumber:
		if len(b) < header.IPv4MinimumSize || b[0]>>4 != 4 {
			break
		}
		ip := header.IPv4(b)
		ihl := int(ip.HeaderLength())
		if ihl < header.IPv4MinimumSize {
			break // malformed: opaque
		}
		x = mix(x, binary.BigEndian.Uint32(b[12:16])) // source
		x = mix(x, binary.BigEndian.Uint32(b[16:20])) // destination
		x = mix(x, uint32(ip.Protocol()))
		if ip.More() || ip.FragmentOffset() != 0 || ihl > len(b) {
			break
		}
		x = ports(x, ip.TransportProtocol(), b[ihl:])
	case header.IPv6ProtocolNumber:
		if len(b) < header.IPv6MinimumSize || b[0]>>4 != 6 {
			break
		}
		for i := 8; i < 40; i += 4 { // source and destination
			x = mix(x, binary.BigEndian.Uint32(b[i:i+4]))
		}
		next, rest, portless := upperLayer(b[6], b[header.IPv6MinimumSize:])
		x = mix(x, uint32(next))
		if !portless {
			x = ports(x, next, rest)
		}
	}
	return final(x)
}

// upperLayer walks the IPv6 extension headers in b, the first of type
// next, to the upper-layer protocol, and returns it with what follows its
// header. portless is true where the ports cannot be read: a fragment, a
// header chain cut short or longer than maxExtensions.
func upperLayer(next uint8, b []byte) (proto tcpip.TransportProtocolNumber, rest []byte, portless bool) {
	for range maxExtensions {
		var n int
		switch next {
		case hopByHop, routing, destOptions:
			if len(b) < 2 {
				return tcpip.TransportProtocolNumber(next), nil, true
			}
			n = (int(b[1]) + 1) * 8
		case authentication:
			if len(b) < 2 {
				return tcpip.TransportProtocolNumber(next), nil, true
			}
			n = (int(b[1]) + 2) * 4
		case fragment:
			if len(b) < 8 {
				return tcpip.TransportProtocolNumber(next), nil, true
			}
			// Every fragment of a datagram names the same upper layer.
			return tcpip.TransportProtocolNumber(b[0]), nil, true
		default:
			return tcpip.TransportProtocolNumber(next), b, false
		}
		if n > len(b) {
			return tcpip.TransportProtocolNumber(next), nil, true
		}
		next, b = b[0], b[n:]
	}
	return tcpip.TransportProtocolNumber(next), nil, true
}

// IPv6 extension header types (RFC 8200, RFC 4302).
const (
	hopByHop       = 0
	routing        = 43
	fragment       = 44
	authentication = 51
	destOptions    = 60
)

// ports mixes in the ports that start b, for the transport protocols that
// have them there.
func ports(x uint32, p tcpip.TransportProtocolNumber, b []byte) uint32 {
	switch p {
	case header.TCPProtocolNumber, header.UDPProtocolNumber, udpLite, sctp:
		if len(b) >= 4 {
			x = mix(x, binary.BigEndian.Uint32(b[:4]))
		}
	}
	return x
}

// IP protocol numbers of the other transports with ports first.
const (
	sctp    = 132
	udpLite = 136
)

// mix and final are MurmurHash3's 32-bit block and finishing steps.
func mix(h, k uint32) uint32 {
	k *= 0xcc9e2d51
	k = bits.RotateLeft32(k, 15)
	k *= 0x1b873593
	h ^= k
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

func final(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// ByPacket returns a packet's flow as the flow queues (fq, fq_codel) take
// it: pkt.Hash where the stack set one (gVisor's TCP does, per
// connection), else h's hash of its headers (UDP, ICMP and ARP carry 0).
func (h Hasher) ByPacket() func(*stack.PacketBuffer) uint32 {
	return func(pkt *stack.PacketBuffer) uint32 {
		if pkt.Hash != 0 {
			return pkt.Hash
		}
		return h.Packet(pkt.NetworkProtocolNumber, pkt)
	}
}
