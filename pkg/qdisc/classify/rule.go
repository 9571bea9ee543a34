package classify

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Rule is one filter: a packet matches when it matches every field that is
// set. A rule with no field set matches every well-formed IPv4 and IPv6
// packet.
type Rule struct {
	// Dst and Src are the destination and source prefixes (the remote and
	// local ends: see Direction); the zero Prefix matches any address. A
	// prefix also selects its family: a rule with an IPv4 prefix never
	// matches an IPv6 packet. Bits past the prefix length are ignored, as
	// tc ignores them.
	Dst, Src netip.Prefix
	// Proto is the IP protocol (IPv6: the upper-layer protocol, past any
	// extension headers); 0 matches any.
	Proto uint8
	// DstPorts and SrcPorts are port ranges; the zero range matches any
	// port. Setting either needs Proto TCP, UDP, UDP-Lite or SCTP.
	DstPorts, SrcPorts PortRange
	// DSCP is matched when MatchDSCP is set: the top six bits of IPv4's
	// TOS or IPv6's traffic class, 0 to 63.
	DSCP      uint8
	MatchDSCP bool
	// Class is the class of packets that match: a tc handle, major in the
	// top 16 bits and minor in the bottom 16 (1:10 is 0x00010010). The
	// classifier does not check that the class exists; the qdisc does.
	Class uint32
}

// PortRange is the ports Lo to Hi, both included. The zero PortRange
// matches any port.
type PortRange struct{ Lo, Hi uint16 }

// IsZero reports whether r is the zero range (any port).
func (r PortRange) IsZero() bool { return r == PortRange{} }

// String returns "80" for one port and "1024-65535" for a range.
func (r PortRange) String() string {
	if r.Lo == r.Hi {
		return fmt.Sprint(r.Lo)
	}
	return fmt.Sprintf("%d-%d", r.Lo, r.Hi)
}

// IP protocol numbers with names in rules.
const (
	protoICMP    = 1
	protoTCP     = 6
	protoUDP     = 17
	protoICMPv6  = 58
	protoSCTP    = 132
	protoUDPLite = 136
)

// hasPorts reports whether protocol p starts with a source and a
// destination port, and the least header it has.
func hasPorts(p uint8) (minHeader int, ok bool) {
	switch p {
	case protoTCP:
		return 20, true
	case protoUDP, protoUDPLite:
		return 8, true
	case protoSCTP:
		return 12, true
	}
	return 0, false
}

// String writes r in ParseRule's words, fields that are not set left out:
// "dst 10.0.0.0/8 proto tcp dport 80 classid 1:10".
func (r Rule) String() string {
	var b strings.Builder
	if r.Dst.IsValid() {
		fmt.Fprintf(&b, "dst %v ", r.Dst.Masked())
	}
	if r.Src.IsValid() {
		fmt.Fprintf(&b, "src %v ", r.Src.Masked())
	}
	if r.Proto != 0 {
		fmt.Fprintf(&b, "proto %s ", protoName(r.Proto))
	}
	if !r.DstPorts.IsZero() {
		fmt.Fprintf(&b, "dport %v ", r.DstPorts)
	}
	if !r.SrcPorts.IsZero() {
		fmt.Fprintf(&b, "sport %v ", r.SrcPorts)
	}
	if r.MatchDSCP {
		fmt.Fprintf(&b, "dscp %d ", r.DSCP)
	}
	fmt.Fprintf(&b, "classid %s", ClassID(r.Class))
	return b.String()
}

// ClassID writes a class handle as tc does: major and minor in hex,
// "1:10" for 0x00010010.
func ClassID(h uint32) string { return fmt.Sprintf("%x:%x", h>>16, h&0xffff) }

// rule is a Rule ready to match: prefixes as masks over 128 bits (an IPv4
// address in the low 32), absent fields as masks that take anything.
type rule struct {
	family       uint8 // 0 (any), 4 or 6
	dst, src     prefix
	dscp         uint8
	dscpMask     uint8
	proto        uint8
	ports        bool
	dport, sport PortRange // the full range when absent
	class        uint32
}

// addr is an address as two 64-bit halves; an IPv4 address is in the low
// 32 bits of lo.
type addr [2]uint64

// prefix is the addresses a whose bits under mask are bits.
type prefix struct{ bits, mask addr }

func (p *prefix) contains(a addr) bool {
	return a[0]&p.mask[0] == p.bits[0] && a[1]&p.mask[1] == p.bits[1]
}

// compile checks r and returns it ready to match.
func compile(r Rule) (rule, error) {
	c := rule{proto: r.Proto, class: r.Class, dport: r.DstPorts, sport: r.SrcPorts}
	for _, p := range []struct {
		name string
		pfx  netip.Prefix
		to   *prefix
	}{{"dst", r.Dst, &c.dst}, {"src", r.Src, &c.src}} {
		if p.pfx == (netip.Prefix{}) {
			continue
		}
		if !p.pfx.IsValid() {
			return rule{}, fmt.Errorf("%s %v is not a valid prefix", p.name, p.pfx)
		}
		fam := uint8(6)
		if p.pfx.Addr().Is4() {
			fam = 4
		}
		if c.family != 0 && c.family != fam {
			return rule{}, errors.New("dst and src are of different families: a packet is IPv4 or IPv6")
		}
		c.family = fam
		*p.to = compilePrefix(p.pfx)
	}
	switch {
	case r.Proto == protoICMP && c.family == 6:
		return rule{}, errors.New("proto icmp (1) is never in an IPv6 packet: ICMP for IPv6 is icmpv6 (58)")
	case r.Proto == protoICMPv6 && c.family == 4:
		return rule{}, errors.New("proto icmpv6 (58) is never in an IPv4 packet: ICMP for IPv4 is icmp (1)")
	}
	for _, p := range []struct {
		name string
		r    PortRange
	}{{"dport", r.DstPorts}, {"sport", r.SrcPorts}} {
		if p.r.IsZero() {
			continue
		}
		if p.r.Lo > p.r.Hi {
			return rule{}, fmt.Errorf("%s %d-%d: the range's low end is above its high end", p.name, p.r.Lo, p.r.Hi)
		}
		if _, ok := hasPorts(r.Proto); !ok {
			return rule{}, fmt.Errorf("%s needs proto tcp, udp, udplite or sctp (proto is %s)", p.name, protoName(r.Proto))
		}
		c.ports = true
	}
	if c.dport.IsZero() {
		c.dport = PortRange{0, 0xffff}
	}
	if c.sport.IsZero() {
		c.sport = PortRange{0, 0xffff}
	}
	switch {
	case r.MatchDSCP && r.DSCP > 63:
		return rule{}, fmt.Errorf("dscp %d is above 63: DSCP has six bits", r.DSCP)
	case r.MatchDSCP:
		c.dscp, c.dscpMask = r.DSCP, 0x3f
	case r.DSCP != 0:
		return rule{}, fmt.Errorf("dscp %d given without MatchDSCP: it would be ignored", r.DSCP)
	}
	return c, nil
}

func compilePrefix(p netip.Prefix) prefix {
	p = p.Masked()
	var c prefix
	if p.Addr().Is4() {
		a := p.Addr().As4()
		c.bits[1] = uint64(binary.BigEndian.Uint32(a[:]))
		c.mask[1] = uint64(^uint32(0)) &^ (uint64(1)<<(32-p.Bits()) - 1)
		return c
	}
	a := p.Addr().As16()
	c.bits = addr{binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])}
	bits := p.Bits()
	switch {
	case bits == 0:
	case bits <= 64:
		c.mask[0] = ^uint64(0) << (64 - bits)
	default:
		c.mask[0] = ^uint64(0)
		c.mask[1] = ^uint64(0) << (128 - bits)
	}
	return c
}
