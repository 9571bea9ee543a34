package classify

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// rule4 is a rule that tests addresses only, as IPv4 masks: what
// classifyV4 matches. A rule for IPv6 is kept (never matching), so that
// rules keep their order.
type rule4 struct {
	dstBits, dstMask uint32
	srcBits, srcMask uint32
	v6               bool
	class            uint32
}

// compileV4 returns rules as rule4s if every one tests addresses only (no
// protocol, ports or DSCP), else nil.
func compileV4(rules []rule) []rule4 {
	if len(rules) == 0 {
		return nil
	}
	v4 := make([]rule4, len(rules))
	for i, r := range rules {
		if r.proto != 0 || r.ports || r.dscpMask != 0 {
			return nil
		}
		v4[i] = rule4{
			dstBits: uint32(r.dst.bits[1]), dstMask: uint32(r.dst.mask[1]),
			srcBits: uint32(r.src.bits[1]), srcMask: uint32(r.src.mask[1]),
			v6: r.family == 6, class: r.class,
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
	ihl := int(h[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(h[2:4]))
	if h[0]>>4 != 4 || ihl < header.IPv4MinimumSize || total < ihl || total > size {
		return c.def
	}
	src := binary.BigEndian.Uint32(h[12:16])
	dst := binary.BigEndian.Uint32(h[16:20])
	if c.dir == Ingress {
		src, dst = dst, src
	}
	for i := range c.v4 {
		r := &c.v4[i]
		if !r.v6 && dst&r.dstMask == r.dstBits && src&r.srcMask == r.srcBits {
			return r.class
		}
	}
	return c.def
}
