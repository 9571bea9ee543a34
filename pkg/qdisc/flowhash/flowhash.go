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
// options (60 bytes) and the ports after it.
const maxHeaders = header.IPv4MaximumHeaderSize + 4

// Packet hashes pkt, whose network protocol is proto, from its network and
// transport headers if they have been parsed (the send path), else from
// the start of its data (a received packet, as the link hands it up).
func (h Hasher) Packet(proto tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) uint32 {
	if nh := pkt.NetworkHeader().Slice(); len(nh) > 0 {
		var b [maxHeaders]byte
		n := copy(b[:], nh)
		n += copy(b[n:], pkt.TransportHeader().Slice())
		return h.Bytes(proto, b[:n])
	}
	b, ok := pkt.Data().PullUp(min(pkt.Data().Size(), maxHeaders))
	if !ok {
		return h.Bytes(proto, nil)
	}
	return h.Bytes(proto, b)
}

// Bytes hashes a packet of protocol proto whose network header starts b.
// What it cannot parse (a truncated header, another protocol) hashes by
// proto alone: one flow per protocol.
func (h Hasher) Bytes(proto tcpip.NetworkProtocolNumber, b []byte) uint32 {
	x := mix(h.seed, uint32(proto))
	switch proto {
	case header.IPv4ProtocolNumber:
		if len(b) < header.IPv4MinimumSize || b[0]>>4 != 4 {
			break
		}
		ip := header.IPv4(b)
		x = mix(x, binary.BigEndian.Uint32(b[12:16])) // source
		x = mix(x, binary.BigEndian.Uint32(b[16:20])) // destination
		x = mix(x, uint32(ip.Protocol()))
		// A fragment other than the first has no ports, and a first one
		// must hash with the rest of its datagram.
		if ip.More() || ip.FragmentOffset() != 0 {
			break
		}
		x = ports(x, ip.TransportProtocol(), b[min(int(ip.HeaderLength()), len(b)):])
	case header.IPv6ProtocolNumber:
		if len(b) < header.IPv6MinimumSize || b[0]>>4 != 6 {
			break
		}
		for i := 8; i < 40; i += 4 { // source and destination
			x = mix(x, binary.BigEndian.Uint32(b[i:i+4]))
		}
		next := tcpip.TransportProtocolNumber(b[6])
		x = mix(x, uint32(next))
		x = ports(x, next, b[header.IPv6MinimumSize:])
	}
	return final(x)
}

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
