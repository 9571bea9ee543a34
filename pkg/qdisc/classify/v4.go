package classify

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// rule4 is a rule that tests addresses only, as IPv4 masks over the
// packet's own destination and source: what classifyV4 matches. A rule
// for IPv6 is kept as one that never matches, so that rules keep their
// order.
type rule4 struct {
	dstBits, dstMask uint32
	srcBits, srcMask uint32
	class            uint32
}

// compileV4 returns rules as rule4s for packets travelling in direction
// dir (for Ingress, a rule's dst is matched against the packet's source)
// if every one tests addresses only (no protocol, ports or DSCP), else
// nil.
func compileV4(rules []rule, dir Direction) []rule4 {
	if len(rules) == 0 {
		return nil
	}
	v4 := make([]rule4, len(rules))
	for i, r := range rules {
		if r.proto != 0 || r.ports || r.dscpMask != 0 {
			return nil
		}
		dst, src := r.dst, r.src
		if dir == Ingress {
			dst, src = src, dst
		}
		v4[i] = rule4{
			dstBits: uint32(dst.bits[1]), dstMask: uint32(dst.mask[1]),
			srcBits: uint32(src.bits[1]), srcMask: uint32(src.mask[1]),
			class: r.class,
		}
		if r.family == 6 {
			v4[i].dstBits, v4[i].dstMask = 1, 0 // no address has a bit under an empty mask
		}
	}
	return v4
}

// classifyV4 is Classify for an IPv4 packet when the rules test addresses
// only: h is its network header onward, at least IPv4MinimumSize bytes of
// the size bytes the packet holds from there. It reads the header as
// parseIPv4 does, and gives what match would: the checks of a malformed
// header, then the first rule whose prefixes hold the addresses.
func (c *Classifier) classifyV4(h []byte, size int) uint32 {
	h = h[:header.IPv4MinimumSize]
	vihl := h[0]
	total := int(binary.BigEndian.Uint16(h[2:4]))
	// Version 4, an IHL of at least 5 words, and a total length from the
	// IHL to the packet's size.
	if vihl>>4 != 4 || vihl&0xf < header.IPv4MinimumSize/4 || total < int(vihl&0xf)*4 || total > size {
		return c.def
	}
	src := binary.BigEndian.Uint32(h[12:16])
	dst := binary.BigEndian.Uint32(h[16:20])
	for i := range c.v4 {
		r := &c.v4[i]
		if dst&r.dstMask == r.dstBits && src&r.srcMask == r.srcBits {
			return r.class
		}
	}
	return c.def
}
