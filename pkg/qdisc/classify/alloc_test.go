package classify_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

// TestNoAllocationPerPacket: Classify allocates nothing, in any layout,
// including bytes scattered over many views (where a PullUp would merge
// them) and rules that ask for every field.
func TestNoAllocationPerPacket(t *testing.T) {
	c := mustNew(t, classify.Ingress, hostileRules...)
	for _, p := range []pk{
		{src: "192.168.0.1", dst: "10.0.0.1", proto: 6, sport: 40000, dport: 80, payload: 1400},
		{src: "fd00::1", dst: "fd10::1", proto: 17, sport: 1000, dport: 443, payload: 1400},
		{src: "192.168.0.1", dst: "10.0.0.1", proto: 17, more: true},
	} {
		b := p.bytes()
		for _, l := range layouts {
			pkt := l.make(b, netHeaderLen(p.protocol(), b))
			if n := testing.AllocsPerRun(100, func() { c.Classify(p.protocol(), pkt) }); n != 0 {
				t.Errorf("%s %+v: %v allocations per packet", l.name, p, n)
			}
			pkt.DecRef()
		}
	}
	ext := chain(pk{src: "fd00::1", dst: "fd10::1", proto: 17, dport: 443}, 8)
	pkt := layoutNamed("scattered").make(ext, 0)
	defer pkt.DecRef()
	if n := testing.AllocsPerRun(100, func() { c.Classify(header.IPv6ProtocolNumber, pkt) }); n != 0 {
		t.Errorf("8 extension headers in 3-byte views: %v allocations per packet", n)
	}
}
