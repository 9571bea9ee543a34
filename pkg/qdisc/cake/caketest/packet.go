package caketest

import "encoding/binary"

// Packet is a packet as cake sees it.
type Packet struct {
	// ID names the packet in Events and departures.
	ID uint64
	// Seg is the index of a segment split from a GSO packet (split-gso);
	// 0 for a packet that was not split.
	Seg uint32
	// Proto is the network protocol (skb->protocol: 0x0800 IPv4, 0x86dd
	// IPv6, 0x0806 ARP, ...); 0 means read from the version nibble of
	// Data (4 or 6), else none.
	Proto uint16
	// Data is the packet from its network header on (what
	// skb_network_header points at); the model reads the headers it
	// needs from it only after checking they are there, and writes the
	// DSCP (wash) and ECN (CE marks) into its own copy.
	Data []byte
	// MacLen is the link header's length, counted in the length but not
	// in Data (skb_network_offset).
	MacLen int
	// Len is qdisc_pkt_len: the length cake charges, link header
	// included. 0 means what qdisc_pkt_len_init gives: MacLen+len(Data),
	// plus for a GSO packet (GSOSegs-1) copies of the headers.
	Len uint32
	// GSOSegs and GSOSize are skb_shinfo's gso_segs and gso_size: 0 (or 1)
	// and 0 for a plain packet. GSOSize != 0 makes it a GSO packet.
	GSOSegs, GSOSize uint32
	// TrueSize is skb->truesize, what the memory limit counts; 0 means
	// the packet's length (MacLen+len(Data)).
	TrueSize uint32
}

// EtherTypes of Packet.Proto.
const (
	ProtoIPv4 = 0x0800
	ProtoIPv6 = 0x86dd
	ProtoARP  = 0x0806
)

// IP protocol numbers the model reads.
const (
	ipprotoTCP  = 6
	ipprotoUDP  = 17
	ipprotoIPv6 = 41
)

// proto is skb_protocol(skb, true).
func (p *Packet) proto() uint16 {
	if p.Proto != 0 {
		return p.Proto
	}
	if len(p.Data) > 0 {
		switch p.Data[0] >> 4 {
		case 4:
			return ProtoIPv4
		case 6:
			return ProtoIPv6
		}
	}
	return 0
}

// skbLen is skb->len: the bytes of the packet, link header included.
func (p *Packet) skbLen() uint32 { return uint32(p.MacLen + len(p.Data)) }

// isGSO is skb_is_gso.
func (p *Packet) isGSO() bool { return p.GSOSize != 0 }

// gsoSegs is gso_segs, which the stack sets to at least 1.
func (p *Packet) gsoSegs() uint32 { return max(p.GSOSegs, 1) }

// at returns n bytes of Data at off, or nil if they are not all there
// (skb_header_pointer).
func (p *Packet) at(off, n int) []byte {
	if off < 0 || n < 0 || off+n > len(p.Data) {
		return nil
	}
	return p.Data[off : off+n]
}

// transportOffset is where the transport header starts in Data, as the
// stack sets skb_transport_header: after the IPv4 header and options, or
// after the IPv6 header and its extension headers. ok is false for a
// packet without a readable network header.
func (p *Packet) transportOffset() (off int, proto uint8, ok bool) {
	k := dissect(p)
	if !k.hasAddrs {
		return 0, 0, false
	}
	return k.thoff, k.ipProto, true
}

// pktLen is qdisc_pkt_len: Len, or as qdisc_pkt_len_init computes it.
func (p *Packet) pktLen() uint32 {
	if p.Len != 0 {
		return p.Len
	}
	n := p.skbLen()
	if p.isGSO() && p.gsoSegs() > 1 {
		hdr := uint32(p.MacLen)
		if off, proto, ok := p.transportOffset(); ok {
			hdr += uint32(off)
			if proto == ipprotoTCP {
				if th := p.at(off, 20); th != nil {
					hdr += uint32(th[12]>>4) * 4
				}
			} else if proto == ipprotoUDP {
				hdr += 8
			}
		}
		n += (p.gsoSegs() - 1) * hdr
	}
	return n
}

// trueSize is skb->truesize (see TrueSize).
func (p *Packet) trueSize() uint32 {
	if p.TrueSize != 0 {
		return p.TrueSize
	}
	return p.skbLen()
}

// clone copies p with its own Data, so that the model's writes (wash, CE)
// do not reach the caller's bytes.
func (p Packet) clone() Packet {
	p.Data = append([]byte(nil), p.Data...)
	return p
}

// getDSCP is cake_handle_diffserv: the DSCP of an IPv4 or IPv6 packet (0
// when the first two bytes are not there), 0x38 (CS7) for ARP, 0 for
// anything else. With wash, a packet with a non-zero DSCP has it cleared,
// its ECN bits kept (ipv4_change_dsfield / ipv6_change_dsfield); a packet
// too short for its whole IP header is then left alone and counts as
// DSCP 0, as Linux's failed pskb_may_pull does.
func (p *Packet) getDSCP(wash bool) uint8 {
	switch p.proto() {
	case ProtoIPv4:
		b := p.at(0, 2)
		if b == nil {
			return 0
		}
		dscp := b[1] >> 2
		if wash && dscp != 0 {
			if p.at(0, 20) == nil {
				return 0
			}
			ipv4ChangeDSField(p.Data, 0x03, 0)
		}
		return dscp
	case ProtoIPv6:
		b := p.at(0, 2)
		if b == nil {
			return 0
		}
		dscp := uint8(binary.BigEndian.Uint16(b)>>4) >> 2
		if wash && dscp != 0 {
			if p.at(0, 40) == nil {
				return 0
			}
			ipv6ChangeDSField(p.Data, 0x03, 0)
		}
		return dscp
	case ProtoARP:
		return 0x38
	}
	return 0
}

// ipv4ChangeDSField sets the TOS byte of the IPv4 header h to
// (tos&mask)|value and updates the header checksum by the one's-complement
// arithmetic of Linux's ipv4_change_dsfield (add the old byte with an
// end-around carry, subtract the new, fold the borrow).
func ipv4ChangeDSField(h []byte, mask, value uint8) {
	check := uint32(binary.BigEndian.Uint16(h[10:12]))
	ds := (h[1] & mask) | value
	check += uint32(h[1])
	if (check+1)>>16 != 0 {
		check = (check + 1) & 0xffff
	}
	check -= uint32(ds)
	check += check >> 16
	binary.BigEndian.PutUint16(h[10:12], uint16(check))
	h[1] = ds
}

// ipv6ChangeDSField sets the traffic class of the IPv6 header h to
// (tc&mask)|value, leaving the version and flow label.
func ipv6ChangeDSField(h []byte, mask, value uint8) {
	w := binary.BigEndian.Uint16(h[0:2])
	w = (w & (uint16(mask)<<4 | 0xf00f)) | uint16(value)<<4
	binary.BigEndian.PutUint16(h[0:2], w)
}

// ECN codepoints (the low two bits of the TOS / traffic class).
const (
	ecnNotECT = 0
	ecnCE     = 3
)

// setCE is INET_ECN_set_ce: it marks an ECN-capable IPv4 or IPv6 packet
// Congestion Experienced and reports whether the packet now carries CE
// (true also for one already marked). IPv4's checksum is updated as
// IP_ECN_set_ce does; IPv6 has none. Only the outer header is looked at.
func (p *Packet) setCE() bool {
	switch p.proto() {
	case ProtoIPv4:
		h := p.at(0, 20)
		if h == nil {
			return false
		}
		// ecn+1 in two bits: Not-ECT 01, ECT(1) 10, ECT(0) 11, CE 00.
		ecn := (uint32(h[1]) + 1) & 3
		if ecn&2 == 0 {
			return ecn == 0
		}
		// Adding 0xfffb+ecn (one's complement) takes off the TOS change:
		// ECT(1)->CE adds 2 to the TOS byte, ECT(0)->CE adds 1.
		add := uint32(0xfffb) + ecn
		sum := uint32(binary.BigEndian.Uint16(h[10:12])) + add
		sum = (sum & 0xffff) + (sum >> 16)
		binary.BigEndian.PutUint16(h[10:12], uint16(sum))
		h[1] |= ecnCE
		return true
	case ProtoIPv6:
		h := p.at(0, 40)
		if h == nil {
			return false
		}
		tc := uint8(binary.BigEndian.Uint16(h[0:2]) >> 4)
		if tc&3 == ecnNotECT {
			return false
		}
		h[1] |= ecnCE << 4
		return true
	}
	return false
}
