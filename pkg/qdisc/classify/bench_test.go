package classify_test

import (
	"fmt"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

// BenchmarkClassify measures the cost of one packet with 1, 8 and 64
// rules, on the send path (headers pushed) and the receive path (all in
// Data). The packet matches the last rule, so every rule is tried; each
// rule asks for addresses, protocol and ports.
func BenchmarkClassify(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		var rules []string
		for i := range n - 1 {
			rules = append(rules, fmt.Sprintf("dst 10.%d.0.0/16 proto tcp dport %d classid 1:%x", i, 1+i, 1+i))
		}
		rules = append(rules, "dst 10.0.0.0/8 src 192.168.0.0/16 proto tcp dport 443 classid 1:ff")
		for _, path := range []struct {
			name string
			dir  classify.Direction
			p    pk
			l    layout
		}{
			{"send-v4", classify.Egress, pk{src: "192.168.0.1", dst: "10.200.0.1", proto: 6, sport: 40000, dport: 443, payload: 1400}, layoutNamed("pushed")},
			{"receive-v4", classify.Ingress, pk{src: "10.200.0.1", dst: "192.168.0.1", proto: 6, sport: 443, dport: 40000, payload: 1400}, layoutNamed("link-consumed")},
		} {
			b.Run(fmt.Sprintf("rules=%d/%s", n, path.name), func(b *testing.B) {
				c := mustNew(b, path.dir, rules...)
				bytes := path.p.bytes()
				pkt := path.l.make(bytes, 20)
				defer pkt.DecRef()
				if got := c.Classify(header.IPv4ProtocolNumber, pkt); got != 0x100ff {
					b.Fatalf("class %s, want 1:ff", classify.ClassID(got))
				}
				b.ReportAllocs()
				for b.Loop() {
					c.Classify(header.IPv4ProtocolNumber, pkt)
				}
			})
		}
	}
}
