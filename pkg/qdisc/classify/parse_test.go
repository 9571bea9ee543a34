package classify_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

// TestParseRule: tc's words to a Rule, and Rule.String back to words that
// parse to the same Rule.
func TestParseRule(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		in   string
		want classify.Rule
		out  string // String's words, if not in
	}{
		{in: "dst 10.0.0.0/8 src 192.168.0.0/16 proto tcp dport 80 sport 1024-65535 dscp 46 classid 1:10",
			want: classify.Rule{Dst: p("10.0.0.0/8"), Src: p("192.168.0.0/16"), Proto: 6, DstPorts: classify.PortRange{Lo: 80, Hi: 80},
				SrcPorts: classify.PortRange{Lo: 1024, Hi: 65535}, DSCP: 46, MatchDSCP: true, Class: 0x00010010}},
		{in: "classid 1:0", want: classify.Rule{Class: 0x10000}},
		{in: "classid ffff:ffff", want: classify.Rule{Class: 0xffffffff}},
		{in: "flowid 1:a", want: classify.Rule{Class: 0x1000a}, out: "classid 1:a"},
		{in: "  classid   1:A  dst   fd00::/8 ", want: classify.Rule{Dst: p("fd00::/8"), Class: 0x1000a}, out: "dst fd00::/8 classid 1:a"},
		{in: "dst 10.1.2.3 classid 1:1", want: classify.Rule{Dst: p("10.1.2.3/32"), Class: 0x10001}, out: "dst 10.1.2.3/32 classid 1:1"},
		{in: "src fd00::1 classid 1:1", want: classify.Rule{Src: p("fd00::1/128"), Class: 0x10001}, out: "src fd00::1/128 classid 1:1"},
		{in: "dst 10.1.2.3/8 classid 1:1", want: classify.Rule{Dst: p("10.0.0.0/8"), Class: 0x10001}, out: "dst 10.0.0.0/8 classid 1:1"},
		{in: "proto udp dport 0-53 classid 1:1", want: classify.Rule{Proto: 17, DstPorts: classify.PortRange{Lo: 0, Hi: 53}, Class: 0x10001}},
		{in: "proto 47 classid 1:1", want: classify.Rule{Proto: 47, Class: 0x10001}},
		{in: "proto 6 classid 1:1", want: classify.Rule{Proto: 6, Class: 0x10001}, out: "proto tcp classid 1:1"},
		{in: "proto sctp sport 5060 classid 1:1", want: classify.Rule{Proto: 132, SrcPorts: classify.PortRange{Lo: 5060, Hi: 5060}, Class: 0x10001}},
		{in: "proto udplite dport 1-2 classid 1:1", want: classify.Rule{Proto: 136, DstPorts: classify.PortRange{Lo: 1, Hi: 2}, Class: 0x10001}},
		{in: "proto icmpv6 classid 1:1", want: classify.Rule{Proto: 58, Class: 0x10001}},
		{in: "dscp ef classid 1:1", want: classify.Rule{DSCP: 46, MatchDSCP: true, Class: 0x10001}, out: "dscp 46 classid 1:1"},
		{in: "dscp AF41 classid 1:1", want: classify.Rule{DSCP: 34, MatchDSCP: true, Class: 0x10001}, out: "dscp 34 classid 1:1"},
		{in: "dscp 0x2e classid 1:1", want: classify.Rule{DSCP: 46, MatchDSCP: true, Class: 0x10001}, out: "dscp 46 classid 1:1"},
		{in: "dscp 0 classid 1:1", want: classify.Rule{MatchDSCP: true, Class: 0x10001}},
	} {
		got, err := classify.ParseRule(tc.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
			t.Errorf("ParseRule(%q) (-want +got):\n%s", tc.in, diff)
		}
		out := tc.out
		if out == "" {
			out = tc.in
		}
		if s := got.String(); s != out {
			t.Errorf("ParseRule(%q).String() = %q, want %q", tc.in, s, out)
		}
		again, err := classify.ParseRule(got.String())
		if err != nil || again != got {
			t.Errorf("ParseRule(%q) = %v, %v; want %v back", got.String(), again, err, got)
		}
	}
}

// TestParseRuleRefuses: every bad word is refused with an error that
// names it.
func TestParseRuleRefuses(t *testing.T) {
	for _, tc := range []struct{ in, word string }{
		{"", "no classid"},
		{"dst 10.0.0.0/8", "no classid"},
		{"classid", `"classid" needs a value`},
		{"classid 1:10 dst", `"dst" needs a value`},
		{"classid 1:10 to 10.0.0.0/8", `unknown word "to"`},
		{"classid 1:10 classid 1:11", `"classid" given twice`},
		{"flowid 1:10 classid 1:11", `"classid" given twice`},
		{"dst 10.0.0.0/8 dst 11.0.0.0/8 classid 1:1", `"dst" given twice`},
		{"classid 10", `classid "10"`},
		{"classid 0:10", `classid "0:10"`},
		{"classid 10000:1", `classid "10000:1"`},
		{"classid 1:10000", `classid "1:10000"`},
		{"classid 1:", `classid "1:"`},
		{"classid 1:g", `classid "1:g"`},
		{"classid root", `classid "root"`},
		{"dst 10.0.0.0/33 classid 1:1", `dst "10.0.0.0/33"`},
		{"dst 10.0.0 classid 1:1", `dst "10.0.0"`},
		{"src fe80::1%eth0 classid 1:1", `src "fe80::1%eth0"`},
		{"src example.com classid 1:1", `src "example.com"`},
		{"proto tcpp classid 1:1", `proto "tcpp"`},
		{"proto 0 classid 1:1", `proto "0"`},
		{"proto 256 classid 1:1", `proto "256"`},
		{"proto tcp dport 65536 classid 1:1", `dport "65536"`},
		{"proto tcp dport 0 classid 1:1", `dport "0"`},
		{"proto tcp dport 80-79 classid 1:1", `dport "80-79"`},
		{"proto tcp sport -1 classid 1:1", `sport "-1"`},
		{"proto tcp sport http classid 1:1", `sport "http"`},
		{"proto tcp sport 1-2-3 classid 1:1", `sport "1-2-3"`},
		{"dscp 64 classid 1:1", `dscp "64"`},
		{"dscp af44 classid 1:1", `dscp "af44"`},
		{"dport 80 classid 1:1", "dport needs proto"},
		{"proto icmp sport 80 classid 1:1", "sport needs proto"},
		{"dst 10.0.0.0/8 src fd00::/8 classid 1:1", "different families"},
		{"dst fd00::/8 proto icmp classid 1:1", "never in an IPv6 packet"},
	} {
		_, err := classify.ParseRule(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.word) {
			t.Errorf("ParseRule(%q) = %v, want an error naming %s", tc.in, err, tc.word)
		}
	}
}
