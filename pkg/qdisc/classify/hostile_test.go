package classify_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// hostileRules test every field, so that a hostile packet has something to
// match or to lack.
var hostileRules = []string{
	"proto udp dport 443 classid 1:1",
	"dst 10.0.0.0/8 proto tcp sport 1024-65535 classid 1:2",
	"dst fd00::/8 src fd00::/16 classid 1:3",
	"proto sctp dport 1-100 classid 1:4",
	"dscp ef classid 1:5",
	"src 0.0.0.0/1 classid 1:6",
	"proto 58 classid 1:7",
	"proto udplite sport 0-9 classid 1:8",
}

// addressRules test addresses only, IPv4 and IPv6 mixed: a Classifier of
// them takes IPv4 packets by its address-only path (classifyV4).
var addressRules = []string{
	"dst 10.0.0.0/8 src 192.168.0.0/16 classid 1:1",
	"dst fd00::/8 classid 1:2",
	"src 0.0.0.0/1 classid 1:3",
	"dst 10.1.2.3/32 classid 1:4",
	"dst 128.0.0.0/1 classid 1:5",
}

func classes(c *classify.Classifier) map[uint32]bool {
	m := map[uint32]bool{c.Default(): true}
	for _, r := range c.Rules() {
		m[r.Class] = true
	}
	return m
}

// TestHostilePackets: qdisctest's hostile packets (random sizes and bytes,
// real layouts with lying fields, every PacketBuffer layout, any network
// protocol number) never make Classify panic, always get one of the rules'
// classes or the default, and are not modified.
func TestHostilePackets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, dir := range []classify.Direction{classify.Egress, classify.Ingress} {
		c := mustNew(t, dir, hostileRules...)
		ok := classes(c)
		seen := map[uint32]int{}
		for i := range 5000 {
			pkt := qdisctest.HostilePacket(rng, qdisctest.HostileSize(rng))
			before := pkt.ToView()
			got := c.Classify(pkt.NetworkProtocolNumber, pkt)
			after := pkt.ToView()
			if !ok[got] {
				t.Fatalf("packet %d: class %s, neither a rule's nor the default", i, classify.ClassID(got))
			}
			if !equal(before.AsSlice(), after.AsSlice()) {
				t.Fatalf("packet %d: Classify changed the packet", i)
			}
			before.Release()
			after.Release()
			pkt.DecRef()
			seen[got]++
		}
		if len(seen) < 4 {
			t.Errorf("%v: hostile packets reached only %v: the generator no longer reaches the rules", dir, seen)
		}
	}
}

func equal(a, b []byte) bool { return string(a) == string(b) }

// FuzzClassify: no bytes, network protocol or PacketBuffer layout makes
// Classify panic; the class is one of the rules' or the default; it is the
// same in every layout, and the one a model written apart from the code
// (from the package comment, with gVisor's header accessors and netip)
// gives; and a packet whose network header is malformed gets the default.
func FuzzClassify(f *testing.F) {
	f.Add(uint8(0), uint8(20), pk{src: "192.168.0.1", dst: "10.0.0.1", proto: 6, sport: 40000, dport: 80}.bytes())
	f.Add(uint8(0), uint8(20), pk{src: "192.168.0.1", dst: "10.0.0.1", proto: 17, dport: 443, more: true}.bytes())
	f.Add(uint8(1), uint8(40), pk{src: "fd00::1", dst: "fd10::1", proto: 17, sport: 1000, dport: 443}.bytes())
	f.Add(uint8(5), uint8(40), chain(pk{src: "fd00::1", dst: "fd00::2", proto: 132, dport: 7}, 3))
	f.Add(uint8(8), uint8(20), pk{src: "192.168.0.1", dst: "10.0.0.1", proto: 6, sport: 40000, dport: 80}.bytes())
	f.Add(uint8(12), uint8(3), pk{src: "10.1.2.3", dst: "192.168.7.7", proto: 17, dport: 53}.bytes())
	f.Fuzz(func(t *testing.T, which, split uint8, b []byte) {
		protocol := []tcpip.NetworkProtocolNumber{header.IPv4ProtocolNumber, header.IPv6ProtocolNumber, header.ARPProtocolNumber, 0x1234}[which%4]
		dir := classify.Direction(which >> 2 % 2)
		rules := hostileRules
		if which>>3%2 == 1 {
			rules = addressRules
		}
		c := mustNew(t, dir, rules...)
		want, malformed := model(c, protocol, b)
		if malformed && want != c.Default() {
			t.Fatalf("the model gives a malformed packet class %s", classify.ClassID(want))
		}
		for _, l := range layouts {
			pkt := l.make(b, int(split))
			got := c.Classify(protocol, pkt)
			pkt.DecRef()
			if !classes(c)[got] {
				t.Fatalf("%s: class %s, neither a rule's nor the default", l.name, classify.ClassID(got))
			}
			if got != want {
				t.Fatalf("%s (split %d), %v: class %s, the model's %s (malformed %v)", l.name, split, dir, classify.ClassID(got), classify.ClassID(want), malformed)
			}
		}
	})
}

// model classifies b as the package comment says, written apart from the
// code. malformed reports a malformed network header.
func model(c *classify.Classifier, protocol tcpip.NetworkProtocolNumber, b []byte) (class uint32, malformed bool) {
	var (
		dst, src           netip.Addr
		dscp, proto        uint8
		protoOK            bool
		dport, sport       uint16
		portsOK            bool
		transportAt, ipEnd int
	)
	l4min := map[uint8]int{6: 20, 17: 8, 136: 8, 132: 12}
	switch protocol {
	case header.IPv4ProtocolNumber:
		if len(b) < 20 {
			return c.Default(), true
		}
		ip := header.IPv4(b)
		if ip.HeaderLength() < 20 || b[0]>>4 != 4 || int(ip.TotalLength()) < int(ip.HeaderLength()) || int(ip.TotalLength()) > len(b) {
			return c.Default(), true
		}
		src, dst = netip.AddrFrom4(ip.SourceAddress().As4()), netip.AddrFrom4(ip.DestinationAddress().As4())
		dscp, proto, protoOK = b[1]>>2, ip.Protocol(), true
		if !ip.More() && ip.FragmentOffset() == 0 {
			transportAt = int(ip.HeaderLength())
		}
		ipEnd = int(ip.TotalLength())
	case header.IPv6ProtocolNumber:
		if len(b) < 40 || b[0]>>4 != 6 {
			return c.Default(), true
		}
		ip := header.IPv6(b)
		ipEnd = 40 + int(ip.PayloadLength())
		if ipEnd > len(b) {
			return c.Default(), true
		}
		src, dst = netip.AddrFrom16(ip.SourceAddress().As16()), netip.AddrFrom16(ip.DestinationAddress().As16())
		tc, _ := ip.TOS()
		dscp = tc >> 2
		next, at := ip.NextHeader(), 40
		exts := 0
	walk:
		for {
			switch next {
			case 0, 43, 60, 135, 139, 140, 253, 254, 51, 44:
				exts++
				if exts > 8 || at+2 > ipEnd {
					return c.Default(), true
				}
				if next == 44 {
					if at+8 > ipEnd {
						return c.Default(), true
					}
					proto = b[at]
					switch proto {
					case 0, 43, 44, 51, 60, 135, 139, 140, 253, 254:
					default:
						protoOK = true
					}
					break walk
				}
				length := (int(b[at+1]) + 1) * 8
				if next == 51 {
					length = (int(b[at+1]) + 2) * 4
				}
				next, at = b[at], at+length
				if at > ipEnd {
					return c.Default(), true
				}
			default:
				proto, protoOK, transportAt = next, true, at
				break walk
			}
		}
	default:
		return c.Default(), true
	}
	if n, ok := l4min[proto]; ok && protoOK && transportAt > 0 && transportAt+n <= ipEnd {
		sport = binary.BigEndian.Uint16(b[transportAt:])
		dport = binary.BigEndian.Uint16(b[transportAt+2:])
		portsOK = true
	}
	if c.Direction() == classify.Ingress {
		dst, src, dport, sport = src, dst, sport, dport
	}
	for _, r := range c.Rules() {
		if r.Dst.IsValid() && !r.Dst.Contains(dst) || r.Src.IsValid() && !r.Src.Contains(src) {
			continue
		}
		if r.MatchDSCP && r.DSCP != dscp {
			continue
		}
		if r.Proto != 0 {
			if !protoOK {
				return c.Default(), false
			}
			if r.Proto != proto {
				continue
			}
		}
		if !r.DstPorts.IsZero() || !r.SrcPorts.IsZero() {
			if !portsOK {
				return c.Default(), false
			}
			in := func(p uint16, pr classify.PortRange) bool { return pr.IsZero() || pr.Lo <= p && p <= pr.Hi }
			if !in(dport, r.DstPorts) || !in(sport, r.SrcPorts) {
				continue
			}
		}
		return r.Class, false
	}
	return c.Default(), false
}
