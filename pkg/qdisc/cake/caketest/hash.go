package caketest

import (
	"bytes"
	"encoding/binary"

	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// Hashes are the three hashes cake_hash takes from a packet's flow keys.
type Hashes struct {
	// Flow is flow_hash_from_keys(keys): the 5-tuple, the same both ways
	// (Linux sorts the addresses, and the ports, before hashing). Cake
	// uses it in the modes with the Flows bit.
	Flow uint32
	// SrcHost hashes the keys with the ports, protocol, flow label and
	// destination address zeroed; DstHost the same with the source
	// zeroed. Both are 0 for a packet without IP addresses.
	SrcHost, DstHost uint32
}

// Hasher gives a packet's hashes. A cake implementation and the model
// share one so that they pick the same queues.
type Hasher interface {
	Hash(p *Packet) Hashes
}

// FlowHasher is the default Hasher, built on package flowhash with the
// seed Seed. It dissects as skb_flow_dissect_flow_keys does with
// FLOW_DISSECTOR_F_STOP_AT_FLOW_LABEL: the IPv4 or IPv6 addresses, the
// protocol after IPv6's hop-by-hop, routing, destination-options and
// fragment headers, and the ports of TCP, UDP, UDP-Lite, SCTP and DCCP
// (the SPI of ESP and AH) unless the packet is a fragment or, for IPv6,
// carries a non-zero flow label (then the label is hashed in their place).
// A packet it cannot read (not IP, truncated, a bad version or IHL) has
// keys with no addresses: its Flow hashes the protocol alone and its host
// hashes are 0, so in the host modes all such packets share a queue, as
// in Linux.
//
// The keys are put in a canonical header (addresses and ports each in
// ascending order, as __flow_hash_consistentify does) that
// flowhash.Hasher.Bytes hashes.
type FlowHasher struct{ Seed uint32 }

// Hash implements Hasher.
func (h FlowHasher) Hash(p *Packet) Hashes {
	k := dissect(p)
	fh := flowhash.WithSeed(h.Seed)
	if !k.hasAddrs {
		return Hashes{Flow: fh.Bytes(tcpip.NetworkProtocolNumber(p.proto()), nil)}
	}
	flow := k
	if bytes.Compare(flow.dst[:], flow.src[:]) < 0 {
		flow.src, flow.dst = flow.dst, flow.src
	}
	if flow.dport < flow.sport {
		flow.sport, flow.dport = flow.dport, flow.sport
	}
	host := k
	host.sport, host.dport, host.ipProto, host.label, host.hasPorts = 0, 0, 0, 0, false
	srcOnly, dstOnly := host, host
	srcOnly.dst = [16]byte{}
	dstOnly.src = [16]byte{}
	return Hashes{
		Flow:    canonicalHash(fh, flow),
		SrcHost: canonicalHash(fh, srcOnly),
		DstHost: canonicalHash(fh, dstOnly),
	}
}

// canonicalHash hashes k with flowhash from a header built for it: an
// IPv4 or IPv6 header with k's addresses and protocol, then the ports (or
// the flow label) where flowhash reads them. Protocols without ports are
// given none, so their hash is addresses and protocol.
func canonicalHash(fh flowhash.Hasher, k flowKeys) uint32 {
	var b [header.IPv6MinimumSize + 4]byte
	var n int
	// The ports (or the label) follow the header, where flowhash reads
	// ports for the transports that have them; for the others they are
	// folded in below.
	proto := k.ipProto
	extra := uint32(k.sport)<<16 | uint32(k.dport)
	if k.label != 0 {
		extra = k.label
	}
	if k.v6 {
		b[0] = 6 << 4
		b[6] = proto
		copy(b[8:24], k.src[:])
		copy(b[24:40], k.dst[:])
		n = header.IPv6MinimumSize
	} else {
		b[0] = 4<<4 | 5
		b[9] = proto
		copy(b[12:16], k.src[12:16])
		copy(b[16:20], k.dst[12:16])
		n = header.IPv4MinimumSize
	}
	binary.BigEndian.PutUint32(b[n:], extra)
	x := fh.Bytes(k.netProto(), b[:n+4])
	if extra != 0 && !portsProto(proto) {
		// flowhash did not read them: fold them in by hashing again
		// with the hash in the address place of an opaque header.
		var c [header.IPv4MinimumSize + 4]byte
		c[0] = 4<<4 | 5
		binary.BigEndian.PutUint32(c[12:16], x)
		binary.BigEndian.PutUint32(c[16:20], extra)
		x = fh.Bytes(header.IPv4ProtocolNumber, c[:header.IPv4MinimumSize])
	}
	return x
}

// portsProto reports whether flowhash reads ports after a header of this
// protocol.
func portsProto(p uint8) bool {
	switch p {
	case ipprotoTCP, ipprotoUDP, 132, 136:
		return true
	}
	return false
}

// flowKeys are the keys the flow dissector finds (struct flow_keys, the
// fields cake uses). Addresses are 16 bytes; IPv4 fills the last 4.
type flowKeys struct {
	hasAddrs     bool
	v6           bool
	src, dst     [16]byte
	ipProto      uint8
	hasPorts     bool
	sport, dport uint16
	label        uint32
	// thoff is where the transport header starts in Data.
	thoff int
}

func (k flowKeys) netProto() tcpip.NetworkProtocolNumber {
	if k.v6 {
		return header.IPv6ProtocolNumber
	}
	return header.IPv4ProtocolNumber
}

// dissect reads p's flow keys (see FlowHasher).
func dissect(p *Packet) flowKeys {
	var k flowKeys
	switch p.proto() {
	case ProtoIPv4:
		h := p.at(0, 20)
		if h == nil || h[0]>>4 != 4 {
			return k
		}
		ihl := int(h[0]&0xf) * 4
		if ihl < 20 || p.at(0, ihl) == nil {
			return k
		}
		k.hasAddrs = true
		copy(k.src[12:], h[12:16])
		copy(k.dst[12:], h[16:20])
		k.ipProto = h[9]
		k.thoff = ihl
		frag := binary.BigEndian.Uint16(h[6:8])
		if frag&0x3fff != 0 { // MF or an offset: no ports
			return k
		}
	case ProtoIPv6:
		h := p.at(0, 40)
		if h == nil || h[0]>>4 != 6 {
			return k
		}
		k.hasAddrs, k.v6 = true, true
		copy(k.src[:], h[8:24])
		copy(k.dst[:], h[24:40])
		k.label = binary.BigEndian.Uint32(h[0:4]) & 0xfffff
		next, off := h[6], 40
		k.ipProto, k.thoff = next, off
		if k.label != 0 {
			return k // FLOW_DISSECTOR_F_STOP_AT_FLOW_LABEL
		}
		for range 8 {
			switch next {
			case 0, 43, 60: // hop-by-hop, routing, destination options
				e := p.at(off, 2)
				if e == nil {
					return k
				}
				next, off = e[0], off+(int(e[1])+1)*8
			case 44: // fragment
				e := p.at(off, 8)
				if e == nil {
					return k
				}
				k.ipProto, k.thoff = e[0], off+8
				return k // no ports for a fragment
			default:
				k.ipProto, k.thoff = next, off
				goto ports
			}
			k.ipProto, k.thoff = next, off
		}
		return k
	default:
		return k
	}
ports:
	off := -1
	switch k.ipProto {
	case ipprotoTCP, ipprotoUDP, 33, 132, 136, 50: // DCCP 33, SCTP, UDP-Lite, ESP
		off = 0
	case 51: // AH: the SPI
		off = 4
	}
	if off >= 0 {
		if b := p.at(k.thoff+off, 4); b != nil {
			k.hasPorts = true
			k.sport = binary.BigEndian.Uint16(b[0:2])
			k.dport = binary.BigEndian.Uint16(b[2:4])
		}
	}
	return k
}
