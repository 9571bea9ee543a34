package caketest

import (
	"encoding/binary"
	"net/netip"
)

// pkt describes a test packet; ipv4 builds it.
type pkt struct {
	id               uint64
	src, dst         string
	sport, dport     uint16
	proto            uint8 // 0 means TCP
	dscp, ecn        uint8
	flags            uint8 // TCP flags byte (FIN 1, SYN 2, RST 4, PSH 8, ACK 16, URG 32, ECE 64, CWR 128)
	seq, ack         uint32
	opts             []byte // TCP options, padded to 4 bytes by the builder
	payload          int
	macLen           int
	gsoSize, gsoSegs uint32
}

// TCP flag bytes.
const (
	fSYN = 0x02
	fPSH = 0x08
	fACK = 0x10
	fECE = 0x40
	fCWR = 0x80
)

// ipv4 builds an IPv4 packet with a TCP (or UDP) header and a payload of
// zeros, its header checksum right.
func (d pkt) ipv4() Packet {
	proto := d.proto
	if proto == 0 {
		proto = ipprotoTCP
	}
	var l4 []byte
	if proto == ipprotoTCP {
		opts := append([]byte(nil), d.opts...)
		for len(opts)%4 != 0 {
			opts = append(opts, tcpoptEOL)
		}
		l4 = make([]byte, 20+len(opts))
		binary.BigEndian.PutUint16(l4[0:], d.sport)
		binary.BigEndian.PutUint16(l4[2:], d.dport)
		binary.BigEndian.PutUint32(l4[4:], d.seq)
		binary.BigEndian.PutUint32(l4[8:], d.ack)
		l4[12] = uint8(len(l4)/4) << 4
		l4[13] = d.flags
		binary.BigEndian.PutUint16(l4[14:], 65535)
		copy(l4[20:], opts)
	} else {
		l4 = make([]byte, 8)
		binary.BigEndian.PutUint16(l4[0:], d.sport)
		binary.BigEndian.PutUint16(l4[2:], d.dport)
		binary.BigEndian.PutUint16(l4[4:], uint16(8+d.payload))
	}
	b := make([]byte, 20+len(l4)+d.payload)
	b[0] = 0x45
	b[1] = d.dscp<<2 | d.ecn
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8] = 64
	b[9] = proto
	src, dst := netip.MustParseAddr(d.src).As4(), netip.MustParseAddr(d.dst).As4()
	copy(b[12:16], src[:])
	copy(b[16:20], dst[:])
	binary.BigEndian.PutUint16(b[10:], ipChecksum(b[:20]))
	copy(b[20:], l4)
	return Packet{ID: d.id, Data: b, MacLen: d.macLen, GSOSize: d.gsoSize, GSOSegs: d.gsoSegs}
}

// Option builders.
func optTS(val, ecr uint32) []byte {
	o := []byte{tcpoptNOP, tcpoptNOP, tcpoptTimestamp, tcpolenTS, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(o[4:], val)
	binary.BigEndian.PutUint32(o[8:], ecr)
	return o
}

func optSACK(blocks ...uint32) []byte {
	o := []byte{tcpoptNOP, tcpoptNOP, tcpoptSACK, uint8(2 + 4*len(blocks))}
	for _, x := range blocks {
		o = binary.BigEndian.AppendUint32(o, x)
	}
	return o
}

// headerOK reports whether an IPv4 header's checksum verifies.
func headerOK(h []byte) bool {
	var s uint32
	for i := 0; i < 20; i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return s == 0xffff
}

// ipv6 builds the IPv6 form of d (addresses given as IPv6), with a flow
// label.
func (d pkt) ipv6(label uint32) Packet {
	c := d
	c.src, c.dst = "0.0.0.0", "0.0.0.0" // the transport header is what is kept
	v4 := c.ipv4()
	l4 := v4.Data[20:]
	b := make([]byte, 40+len(l4))
	binary.BigEndian.PutUint32(b[0:], 6<<28|uint32(d.dscp<<2|d.ecn)<<20|label&0xfffff)
	binary.BigEndian.PutUint16(b[4:], uint16(len(l4)))
	b[6] = v4.Data[9]
	b[7] = 64
	src, dst := netip.MustParseAddr(d.src).As16(), netip.MustParseAddr(d.dst).As16()
	copy(b[8:24], src[:])
	copy(b[24:40], dst[:])
	copy(b[40:], l4)
	v4.Data = b
	return v4
}
