package classify_test

import (
	"net/netip"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

const def = 0x10099 // 1:99, the default class in these tests

func mustParse(t testing.TB, rules ...string) []classify.Rule {
	t.Helper()
	var rs []classify.Rule
	for _, s := range rules {
		r, err := classify.ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

func mustNew(t testing.TB, dir classify.Direction, rules ...string) *classify.Classifier {
	t.Helper()
	c, err := classify.New(mustParse(t, rules...), def, dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// classifyAll classifies b in every layout and fails t unless they agree;
// it returns their answer.
func classifyAll(t *testing.T, c *classify.Classifier, protocol tcpip.NetworkProtocolNumber, b []byte) uint32 {
	t.Helper()
	var first uint32
	for i, l := range layouts {
		pkt := l.make(b, netHeaderLen(protocol, b))
		got := c.Classify(protocol, pkt)
		pkt.DecRef()
		if i == 0 {
			first = got
		} else if got != first {
			t.Errorf("layout %s: class %s, layout %s: %s", l.name, classify.ClassID(got), layouts[0].name, classify.ClassID(first))
		}
	}
	return first
}

// TestClassify: each field of a rule, in IPv4 and IPv6, in every layout a
// qdisc may meet.
func TestClassify(t *testing.T) {
	v4 := pk{src: "192.168.1.2", dst: "10.1.2.3", proto: 6, sport: 40000, dport: 80, dscp: 0}
	v6 := pk{src: "fd00::2", dst: "fd10::3", proto: 17, sport: 40000, dport: 53, dscp: 0}
	for _, tc := range []struct {
		name string
		rule string
		pkt  pk
		want bool // the rule matches
	}{
		{"dst v4 in", "dst 10.0.0.0/8", v4, true},
		{"dst v4 out", "dst 11.0.0.0/8", v4, false},
		{"dst v4 host", "dst 10.1.2.3", v4, true},
		{"dst v4 /0", "dst 0.0.0.0/0", v4, true},
		{"dst v4 rule, v6 packet", "dst 0.0.0.0/0", v6, false},
		{"src v4 in", "src 192.168.0.0/16", v4, true},
		{"src v4 out", "src 192.169.0.0/16", v4, false},
		{"dst is not src", "dst 192.168.0.0/16", v4, false},
		{"dst v6 in", "dst fd10::/16", v6, true},
		{"dst v6 /127", "dst fd10::2/127", v6, true},
		{"dst v6 /128 out", "dst fd10::2/128", v6, false},
		{"dst v6 out in the high half", "dst fd11::/16", v6, false},
		{"dst v6 rule, v4 packet", "dst ::/0", v4, false},
		{"src v6 in", "src fd00::/64", v6, true},
		{"src v6 out", "src fd00:0:0:1::/64", v6, false},
		{"proto v4", "proto tcp", v4, true},
		{"proto v4 other", "proto udp", v4, false},
		{"proto v6", "proto udp", v6, true},
		{"proto v6 other", "proto 6", v6, false},
		{"dport", "proto tcp dport 80", v4, true},
		{"dport other", "proto tcp dport 81", v4, false},
		{"dport range", "proto tcp dport 1-1024", v4, true},
		{"dport range above", "proto tcp dport 81-1024", v4, false},
		{"sport range", "proto tcp sport 1024-65535", v4, true},
		{"sport range below", "proto tcp sport 1024-39999", v4, false},
		{"sport is not dport", "proto tcp sport 80", v4, false},
		{"dport v6", "proto udp dport 53", v6, true},
		{"sport v6", "proto udp sport 40000", v6, true},
		{"dport v6 other", "proto udp dport 54", v6, false},
		{"udplite", "proto udplite dport 53", pk{src: "10.0.0.1", dst: "10.0.0.2", proto: 136, dport: 53}, true},
		{"sctp", "proto sctp dport 5060", pk{src: "fd00::1", dst: "fd00::2", proto: 132, dport: 5060}, true},
		{"sctp other", "proto sctp dport 5061", pk{src: "fd00::1", dst: "fd00::2", proto: 132, dport: 5060}, false},
		{"dscp v4", "dscp ef", pk{src: "10.0.0.1", dst: "10.0.0.2", proto: 6, dscp: 46}, true},
		{"dscp v4 other", "dscp 45", pk{src: "10.0.0.1", dst: "10.0.0.2", proto: 6, dscp: 46}, false},
		{"dscp 0", "dscp 0", v4, true},
		{"dscp v6", "dscp af41", pk{src: "fd00::1", dst: "fd00::2", proto: 17, dscp: 34}, true},
		{"dscp v6 other", "dscp 63", pk{src: "fd00::1", dst: "fd00::2", proto: 17, dscp: 34}, false},
		{"every field", "dst 10.0.0.0/8 src 192.168.0.0/16 proto tcp dport 80 sport 1024-65535 dscp 0", v4, true},
		{"every field but one", "dst 10.0.0.0/8 src 192.168.0.0/16 proto tcp dport 80 sport 1024-65535 dscp 1", v4, false},
		{"no field", "", v6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustNew(t, classify.Egress, tc.rule+" classid 1:10")
			want := uint32(def)
			if tc.want {
				want = 0x10010
			}
			if got := classifyAll(t, c, tc.pkt.protocol(), tc.pkt.bytes()); got != want {
				t.Errorf("%+v by %q: class %s, want %s", tc.pkt, tc.rule, classify.ClassID(got), classify.ClassID(want))
			}
		})
	}
}

// TestFirstMatchWins: rules are tried in order; the first that matches
// gives the class, whatever later rules say; none gives the default.
func TestFirstMatchWins(t *testing.T) {
	c := mustNew(t, classify.Egress,
		"dst 10.1.0.0/16 proto udp dport 53 classid 1:1",
		"dst 10.0.0.0/8 classid 1:2",
		"dst 10.1.0.0/16 classid 1:3", // shadowed by the rule before it
		"proto udp classid 1:4",
	)
	for _, tc := range []struct {
		pkt  pk
		want uint32
	}{
		{pk{src: "10.9.9.9", dst: "10.1.0.1", proto: 17, dport: 53}, 0x10001},
		{pk{src: "10.9.9.9", dst: "10.1.0.1", proto: 17, dport: 54}, 0x10002},
		{pk{src: "10.9.9.9", dst: "10.2.0.1", proto: 6, dport: 53}, 0x10002},
		{pk{src: "10.9.9.9", dst: "11.1.0.1", proto: 17, dport: 53}, 0x10004},
		{pk{src: "10.9.9.9", dst: "11.1.0.1", proto: 6, dport: 53}, def},
		{pk{src: "fd00::1", dst: "fd00::2", proto: 17, dport: 53}, 0x10004},
	} {
		if got := classifyAll(t, c, tc.pkt.protocol(), tc.pkt.bytes()); got != tc.want {
			t.Errorf("%+v: class %s, want %s", tc.pkt, classify.ClassID(got), classify.ClassID(tc.want))
		}
	}
}

// TestIngressMirrors: a classifier for Ingress reads dst and dport as the
// packet's source (the remote end), so one list of rules classifies a
// flow's packets alike both ways.
func TestIngressMirrors(t *testing.T) {
	rules := []string{
		"dst 10.0.0.0/8 src 192.168.0.0/16 proto tcp dport 443 sport 1024-65535 classid 1:20",
		"dst fd10::/16 classid 1:21",
	}
	eg, in := mustNew(t, classify.Egress, rules...), mustNew(t, classify.Ingress, rules...)
	for _, tc := range []struct {
		out  pk // a packet the sandbox sends; its answer comes back mirrored
		want uint32
	}{
		{pk{src: "192.168.1.1", dst: "10.1.1.1", proto: 6, sport: 40000, dport: 443}, 0x10020},
		{pk{src: "192.168.1.1", dst: "10.1.1.1", proto: 6, sport: 40000, dport: 80}, def},
		{pk{src: "fd00::1", dst: "fd10::1", proto: 17, sport: 1, dport: 2}, 0x10021},
		{pk{src: "fd10::1", dst: "fd00::1", proto: 17, sport: 1, dport: 2}, def},
	} {
		back := pk{src: tc.out.dst, dst: tc.out.src, proto: tc.out.proto, sport: tc.out.dport, dport: tc.out.sport}
		if got := classifyAll(t, eg, tc.out.protocol(), tc.out.bytes()); got != tc.want {
			t.Errorf("egress %+v: class %s, want %s", tc.out, classify.ClassID(got), classify.ClassID(tc.want))
		}
		if got := classifyAll(t, in, back.protocol(), back.bytes()); got != tc.want {
			t.Errorf("ingress %+v: class %s, want %s", back, classify.ClassID(got), classify.ClassID(tc.want))
		}
		if got := classifyAll(t, eg, back.protocol(), back.bytes()); tc.want != def && got == tc.want {
			t.Errorf("egress classifier took the answer %+v for the request", back)
		}
	}
}

// TestMalformedGoesToDefault: a packet whose network header is malformed
// goes to the default class even when a rule matching everything comes
// first; one that lacks the ports (a fragment, first or not; a transport
// header cut short) goes to the default class when the first rule it does
// not fail asks for them, and is classified when no rule before its
// answer asks.
func TestMalformedGoesToDefault(t *testing.T) {
	asksPorts := mustNew(t, classify.Egress,
		"proto udp dport 443 classid 1:10",
		"dst 10.0.0.0/8 classid 1:20",
		"classid 1:30",
	)
	addressFirst := mustNew(t, classify.Egress,
		"dst 10.0.0.0/8 classid 1:20",
		"dst fd10::/16 classid 1:20",
		"proto udp dport 443 classid 1:10",
		"classid 1:30",
	)
	matchAll := mustNew(t, classify.Egress, "classid 1:30")
	udp4 := pk{src: "192.168.0.1", dst: "10.0.0.1", proto: 17, sport: 1000, dport: 443, payload: 16}
	udp6 := pk{src: "fd00::1", dst: "fd10::1", proto: 17, sport: 1000, dport: 443, payload: 16}
	withIPv4 := func(p pk, f func(b []byte) []byte) []byte { return f(p.bytes()) }
	for _, tc := range []struct {
		name         string
		protocol     tcpip.NetworkProtocolNumber
		b            []byte
		malformedNet bool // else only the ports are missing
	}{
		{"v4 version 6", header.IPv4ProtocolNumber, withIPv4(udp4, func(b []byte) []byte { b[0] = 0x65; return b }), true},
		{"v4 IHL 4", header.IPv4ProtocolNumber, withIPv4(udp4, func(b []byte) []byte { b[0] = 0x44; return b }), true},
		{"v4 IHL 0", header.IPv4ProtocolNumber, withIPv4(udp4, func(b []byte) []byte { b[0] = 0x40; return b }), true},
		{"v4 IHL past the packet", header.IPv4ProtocolNumber, withIPv4(pk{src: "1.1.1.1", dst: "10.0.0.1", proto: 17}, func(b []byte) []byte {
			b[0] = 0x4f
			return b
		}), true},
		{"v4 total length past the packet", header.IPv4ProtocolNumber, withIPv4(udp4, func(b []byte) []byte { b[3]++; return b }), true},
		{"v4 total length under the IHL", header.IPv4ProtocolNumber, withIPv4(udp4, func(b []byte) []byte { b[2], b[3] = 0, 19; return b }), true},
		{"v4 cut in the header", header.IPv4ProtocolNumber, udp4.bytes()[:19], true},
		{"v4 empty", header.IPv4ProtocolNumber, nil, true},
		{"v6 bytes as v4", header.IPv4ProtocolNumber, udp6.bytes(), true},
		{"v4 bytes as v6", header.IPv6ProtocolNumber, udp4.bytes(), true},
		{"v4 as ARP", header.ARPProtocolNumber, udp4.bytes(), true},
		{"v4 as protocol 0", 0, udp4.bytes(), true},
		{"v6 payload length past the packet", header.IPv6ProtocolNumber, withIPv4(udp6, func(b []byte) []byte { b[5]++; return b }), true},
		{"v6 cut in the header", header.IPv6ProtocolNumber, udp6.bytes()[:39], true},
		{"v6 extension header cut short", header.IPv6ProtocolNumber, withIPv4(udp6, func(b []byte) []byte {
			b[6] = 0 // hop-by-hop, claiming 8*(1+16) bytes
			b[41] = 16
			return b
		}), true},
		{"v6 nine extension headers", header.IPv6ProtocolNumber, chain(udp6, 9), true},
		{"v4 first fragment", header.IPv4ProtocolNumber, pk{src: "192.168.0.1", dst: "10.0.0.1", proto: 17, dport: 443, more: true}.bytes(), false},
		{"v4 later fragment", header.IPv4ProtocolNumber, pk{src: "192.168.0.1", dst: "10.0.0.1", proto: 17, dport: 443, fragOffset: 1480}.bytes(), false},
		{"v4 later fragment, last", header.IPv4ProtocolNumber, pk{src: "192.168.0.1", dst: "10.0.0.1", proto: 17, dport: 443, fragOffset: 8, more: true}.bytes(), false},
		{"v6 first fragment", header.IPv6ProtocolNumber, pk{src: "fd00::1", dst: "fd10::1", proto: 17, dport: 443, more: true}.bytes(), false},
		{"v6 later fragment", header.IPv6ProtocolNumber, pk{src: "fd00::1", dst: "fd10::1", proto: 17, dport: 443, fragOffset: 1232}.bytes(), false},
		{"v4 UDP header cut to 7 bytes", header.IPv4ProtocolNumber, withIPv4(pk{src: "192.168.0.1", dst: "10.0.0.1", proto: 17, dport: 443}, func(b []byte) []byte {
			b = b[:27]
			b[2], b[3] = 0, 27
			return b
		}), false},
		{"v4 UDP header past the total length", header.IPv4ProtocolNumber, withIPv4(pk{src: "192.168.0.1", dst: "10.0.0.1", proto: 17, dport: 443}, func(b []byte) []byte {
			b[2], b[3] = 0, 24 // the rest is padding
			return b
		}), false},
		{"v6 UDP header cut to 4 bytes", header.IPv6ProtocolNumber, withIPv4(udp6, func(b []byte) []byte {
			b[4], b[5] = 0, 4
			return b[:44]
		}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classifyAll(t, asksPorts, tc.protocol, tc.b); got != def {
				t.Errorf("asking for ports first: class %s, want the default %s", classify.ClassID(got), classify.ClassID(def))
			}
			want := uint32(0x10020)
			if tc.malformedNet {
				want = def
			}
			if got := classifyAll(t, addressFirst, tc.protocol, tc.b); got != want {
				t.Errorf("by address first: class %s, want %s", classify.ClassID(got), classify.ClassID(want))
			}
			want = 0x10030
			if tc.malformedNet {
				want = def
			}
			if got := classifyAll(t, matchAll, tc.protocol, tc.b); got != want {
				t.Errorf("a rule with no field: class %s, want %s", classify.ClassID(got), classify.ClassID(want))
			}
		})
	}
}

// chain returns p's bytes with n empty destination-options headers before
// its transport header.
func chain(p pk, n int) []byte {
	b := p.bytes()
	if n == 0 {
		return b
	}
	next := b[6]
	var exts []byte
	for i := range n {
		e := make([]byte, 8)
		e[0] = 60
		if i == n-1 {
			e[0] = next
		}
		exts = append(exts, e...)
	}
	out := append(append(append([]byte{}, b[:40]...), exts...), b[40:]...)
	out[6] = 60
	pl := len(out) - 40
	out[4], out[5] = byte(pl>>8), byte(pl)
	return out
}

// TestExtensionHeaders: an IPv6 packet's protocol and ports are read past
// up to eight extension headers.
func TestExtensionHeaders(t *testing.T) {
	c := mustNew(t, classify.Egress, "proto udp dport 443 classid 1:10")
	p := pk{src: "fd00::1", dst: "fd10::1", proto: 17, sport: 1000, dport: 443}
	for n := 0; n <= 8; n++ {
		if got := classifyAll(t, c, header.IPv6ProtocolNumber, chain(p, n)); got != 0x10010 {
			t.Errorf("%d extension headers: class %s, want 1:10", n, classify.ClassID(got))
		}
	}
}

// TestNew: New refuses rules that could never match as written, or that
// say what no packet carries, naming the rule.
func TestNew(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		name string
		rule classify.Rule
		want string
	}{
		{"families", classify.Rule{Dst: p("10.0.0.0/8"), Src: p("fd00::/8")}, "different families"},
		{"bad prefix", classify.Rule{Dst: netip.PrefixFrom(netip.MustParseAddr("10.0.0.0"), 33)}, "not a valid prefix"},
		{"ports without proto", classify.Rule{DstPorts: classify.PortRange{Lo: 80, Hi: 80}}, "dport needs proto"},
		{"ports with icmp", classify.Rule{Proto: 1, SrcPorts: classify.PortRange{Lo: 80, Hi: 80}}, "sport needs proto"},
		{"range upside down", classify.Rule{Proto: 6, DstPorts: classify.PortRange{Lo: 81, Hi: 80}}, "low end is above"},
		{"dscp 64", classify.Rule{DSCP: 64, MatchDSCP: true}, "above 63"},
		{"dscp unset", classify.Rule{DSCP: 46}, "without MatchDSCP"},
		{"icmp in v6", classify.Rule{Dst: p("fd00::/8"), Proto: 1}, "never in an IPv6 packet"},
		{"icmpv6 in v4", classify.Rule{Src: p("10.0.0.0/8"), Proto: 58}, "never in an IPv4 packet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := []classify.Rule{{Class: 1}, tc.rule}
			_, err := classify.New(rules, def, classify.Egress)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rule 2") {
				t.Errorf("New(%v) = %v, want an error naming rule 2 and saying %q", tc.rule, err, tc.want)
			}
		})
	}
	if _, err := classify.New(nil, def, classify.Direction(2)); err == nil {
		t.Errorf("New took direction 2")
	}
	if _, err := classify.New(make([]classify.Rule, classify.MaxRules+1), def, classify.Egress); err == nil {
		t.Errorf("New took %d rules", classify.MaxRules+1)
	}
	c, err := classify.New(make([]classify.Rule, classify.MaxRules), def, classify.Ingress)
	if err != nil {
		t.Fatalf("New with %d rules: %v", classify.MaxRules, err)
	}
	if len(c.Rules()) != classify.MaxRules || c.Default() != def || c.Direction() != classify.Ingress {
		t.Errorf("New kept %d rules, default %#x, direction %v", len(c.Rules()), c.Default(), c.Direction())
	}
}

// TestIPv4Options: the ports of an IPv4 packet with options are read
// where its IHL says the transport header starts.
func TestIPv4Options(t *testing.T) {
	c := mustNew(t, classify.Egress, "proto tcp dport 443 classid 1:10")
	for _, words := range []int{1, 10} { // 4 and 40 bytes of options
		b := pk{src: "192.168.0.1", dst: "10.0.0.1", proto: 6, sport: 443, dport: 1}.bytes()
		opts := make([]byte, 4*words)
		for i := range opts {
			opts[i] = 1 // NOP
		}
		opts[2], opts[3] = 1, 0xbb // 443, where ports would be without the IHL
		b = append(append(append([]byte{}, b[:20]...), opts...), b[20:]...)
		b[0] = 0x40 | byte(5+words)
		b[2], b[3] = byte(len(b)>>8), byte(len(b))
		if got := classifyAll(t, c, header.IPv4ProtocolNumber, b); got != def {
			t.Errorf("%d words of options, source port 443: class %s, want the default (the options were read as ports?)", words, classify.ClassID(got))
		}
		b[20+4*words+2], b[20+4*words+3] = 1, 0xbb // destination port 443
		if got := classifyAll(t, c, header.IPv4ProtocolNumber, b); got != 0x10010 {
			t.Errorf("%d words of options, destination port 443: class %s, want 1:10", words, classify.ClassID(got))
		}
	}
}
