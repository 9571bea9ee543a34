package htb_test

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// ipv4 returns an IPv4 packet to dst with a transport header of protocol
// proto (6 TCP, 17 UDP) to port dport, its network header at the start of
// its data, as a link hands a packet up.
func ipv4(dst string, proto uint8, dport uint16) *stack.PacketBuffer {
	b := make([]byte, 20+20)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[8] = 64
	b[9] = proto
	src, d := netip.MustParseAddr("192.168.0.2").As4(), netip.MustParseAddr(dst).As4()
	copy(b[12:], src[:])
	copy(b[16:], d[:])
	binary.BigEndian.PutUint16(b[20:], 40000)
	binary.BigEndian.PutUint16(b[22:], dport)
	return packet(header.IPv4ProtocolNumber, b)
}

func packet(proto tcpip.NetworkProtocolNumber, b []byte) *stack.PacketBuffer {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	pkt.NetworkProtocolNumber = proto
	return pkt
}

// chainTree is a tree with filters on inner classes: 1:10 (the cluster)
// split by its chain into 1:101, 1:102 and 1:11 (whose own chain is a
// catch-all into 1:111); 1:30 an inner class without a chain; 1:40 split
// by a chain ending in a catch-all; 1:20 the default leaf.
func chainTree(root ...string) htb.Config {
	c := htb.Config{Default: 0x10020, Classes: []htb.ClassConfig{
		class(0x10001, 0),
		class(0x10010, 0x10001), class(0x10101, 0x10010), class(0x10102, 0x10010),
		class(0x10011, 0x10010), class(0x10111, 0x10011),
		class(0x10020, 0x10001),
		class(0x10030, 0x10001), class(0x10301, 0x10030),
		class(0x10040, 0x10001), class(0x10401, 0x10040), class(0x10402, 0x10040),
	}}
	if root == nil {
		root = []string{
			"dst 10.0.0.0/8 classid 1:10", "dst 20.0.0.0/8 classid 1:30",
			"dst 30.0.0.0/8 classid 1:40", "dst 40.0.0.0/8 classid 1:0",
			"dst 50.0.0.0/8 classid 1:99",
		}
	}
	for _, s := range root {
		c.Rules = append(c.Rules, mustRule(s))
	}
	c.Chains = map[uint32][]classify.Rule{
		0x10010: {mustRule("dst 10.1.0.0/16 classid 1:101"), mustRule("proto udp dst 10.2.0.0/16 classid 1:102"), mustRule("dst 10.5.0.0/16 classid 1:11")},
		0x10011: {mustRule("classid 1:111")},
		0x10040: {mustRule("dst 30.1.0.0/16 proto tcp dport 80 classid 1:401"), mustRule("classid 1:402"), mustRule("classid 1:401")},
		0x10101: {mustRule("classid 1:10")}, // a leaf's filters are never run
	}
	return c
}

func mustRule(s string) classify.Rule {
	r, err := classify.ParseRule(s)
	if err != nil {
		panic(err)
	}
	return r
}

// TestChainClassify: a packet is classified by the root chain, then by each
// inner class's chain it is sent to, down to a leaf, as Linux's
// htb_classify does; where no chain places it, it goes to the default
// class; and Enqueue puts it where ClassOf says.
func TestChainClassify(t *testing.T) {
	const direct = 0x10000
	short := []byte{0x45, 0, 0, 20} // an IPv4 header cut short
	for _, tc := range []struct {
		name string
		root []string // nil: chainTree's
		pkt  func() *stack.PacketBuffer
		want uint32
	}{
		{"root, inner, chain, leaf", nil, func() *stack.PacketBuffer { return ipv4("10.1.2.3", 6, 80) }, 0x10101},
		{"second filter of the chain", nil, func() *stack.PacketBuffer { return ipv4("10.2.0.1", 17, 53) }, 0x10102},
		{"two chains down", nil, func() *stack.PacketBuffer { return ipv4("10.5.0.1", 6, 22) }, 0x10111},
		{"no filter of the chain matches: default", nil, func() *stack.PacketBuffer { return ipv4("10.3.0.1", 6, 80) }, 0x10020},
		{"inner class without a chain: default", nil, func() *stack.PacketBuffer { return ipv4("20.0.0.1", 6, 80) }, 0x10020},
		{"a chain's filter", nil, func() *stack.PacketBuffer { return ipv4("30.1.0.1", 6, 80) }, 0x10401},
		{"a chain's catch-all", nil, func() *stack.PacketBuffer { return ipv4("30.1.0.1", 6, 81) }, 0x10402},
		{"a chain's catch-all, other address", nil, func() *stack.PacketBuffer { return ipv4("30.9.9.9", 17, 53) }, 0x10402},
		{"direct queue", nil, func() *stack.PacketBuffer { return ipv4("40.0.0.1", 6, 80) }, direct},
		{"no such class: default", nil, func() *stack.PacketBuffer { return ipv4("50.0.0.1", 6, 80) }, 0x10020},
		{"no root filter matches: default", nil, func() *stack.PacketBuffer { return ipv4("60.0.0.1", 6, 80) }, 0x10020},
		{"malformed: default", nil, func() *stack.PacketBuffer { return packet(header.IPv4ProtocolNumber, short) }, 0x10020},
		{"not IP: default", nil, func() *stack.PacketBuffer { return packet(header.ARPProtocolNumber, make([]byte, 28)) }, 0x10020},
		{"malformed, root catch-all: the chain's catch-all", []string{"classid 1:40"}, func() *stack.PacketBuffer { return packet(header.IPv4ProtocolNumber, short) }, 0x10402},
		{"root catch-all, then the chain's filter", []string{"classid 1:40"}, func() *stack.PacketBuffer { return ipv4("30.1.0.1", 6, 80) }, 0x10401},
		{"filter before a root catch-all", []string{"dst 10.0.0.0/8 classid 1:10", "classid 1:40", "classid 1:20"}, func() *stack.PacketBuffer { return ipv4("10.1.0.1", 6, 80) }, 0x10101},
		{"rules after a root catch-all never tried", []string{"dst 10.0.0.0/8 classid 1:10", "classid 1:40", "classid 1:20"}, func() *stack.PacketBuffer { return ipv4("60.1.0.1", 6, 80) }, 0x10402},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := htb.NewTree(chainTree(tc.root...), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			pkt := tc.pkt()
			if got := tr.ClassOf(pkt); got != tc.want {
				t.Errorf("ClassOf = %s, want %s", classify.ClassID(got), classify.ClassID(tc.want))
			}
			if !tr.Enqueue(pkt, 100, 0) {
				t.Fatal("Enqueue refused the packet")
			}
			got := uint32(direct)
			if tr.DirectPackets() == 0 {
				got = 0
				for _, cs := range tr.Classes() {
					if cs.BacklogPackets == 1 {
						got = cs.ID
					}
				}
			}
			if got != tc.want {
				t.Errorf("Enqueue queued the packet in %s, want %s", classify.ClassID(got), classify.ClassID(tc.want))
			}
			if n, _ := tr.Purge(); n != 1 {
				t.Errorf("Purge released %d packets, want 1", n)
			}
		})
	}
}

// TestChainValidate: chains are refused where they name no class of the
// qdisc, hang from no class, loop, or pass more inner classes than Linux
// would; the error names the class and what to change.
func TestChainValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c *htb.Config)
		says   string // "" for accepted
	}{
		{"the sample", func(*htb.Config) {}, ""},
		{"a chain may name any class, as Linux's", func(c *htb.Config) {
			c.Chains[0x10030] = []classify.Rule{mustRule("classid 1:101")}
		}, ""},
		{"a class of another qdisc", func(c *htb.Config) {
			c.Chains[0x10030] = []classify.Rule{mustRule("classid 2:1")}
		}, "htb class 1:30 filter: filter parent 1:30 1 (classid 2:1) sends packets to 2:1, not a class of qdisc 1:"},
		{"no such class", func(c *htb.Config) {
			c.Chains[0x10099] = []classify.Rule{mustRule("classid 1:101")}
		}, "filters attached to 1:99, which is no class of the qdisc"},
		{"the qdisc's handle", func(c *htb.Config) {
			c.Chains[0x10000] = []classify.Rule{mustRule("classid 1:101")}
		}, "give them as Rules"},
		{"a loop", func(c *htb.Config) {
			c.Chains[0x10011] = []classify.Rule{mustRule("classid 1:10")}
		}, "whose chain leads back here: a loop"},
		{"a loop through a catch-all's dead rules is none", func(c *htb.Config) {
			c.Chains[0x10011] = []classify.Rule{mustRule("classid 1:111"), mustRule("classid 1:10")}
		}, ""},
		{"a bad rule", func(c *htb.Config) {
			c.Chains[0x10030] = []classify.Rule{{DstPorts: classify.PortRange{Lo: 80, Hi: 80}, Class: 0x10301}}
		}, "htb class 1:30 filter: classify: rule 1"},
		{"too many rules", func(c *htb.Config) {
			c.Chains[0x10030] = make([]classify.Rule, classify.MaxRules+1)
		}, "more than the 1024 a classifier takes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := chainTree()
			tc.change(&c)
			err := c.Validate()
			if tc.says == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := htb.NewTree(c, nil, 0); err != nil {
					t.Fatalf("NewTree: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Validate: %v; want an error saying %q", err, tc.says)
			}
			if _, err := htb.NewTree(c, nil, 0); err == nil {
				t.Fatal("NewTree took what Validate refuses")
			}
		})
	}
}

// TestChainTooLong: a packet may pass at most MaxDepth inner classes'
// chains (Linux drops it after that); a path through siblings, not down
// the tree, can be longer than the tree is deep.
func TestChainTooLong(t *testing.T) {
	for _, n := range []int{htb.MaxDepth, htb.MaxDepth + 1} {
		c := htb.Config{Classes: []htb.ClassConfig{class(0x10001, 0)}, Chains: map[uint32][]classify.Rule{}}
		// Inner classes 1:100..., each with a leaf, each chain sending
		// packets to the next inner class.
		for i := range n {
			in, lf := uint32(0x10100+i), uint32(0x10200+i)
			c.Classes = append(c.Classes, class(in, 0x10001), class(lf, in))
			next := lf
			if i+1 < n {
				next = in + 1
			}
			c.Chains[in] = []classify.Rule{{Class: next}}
		}
		c.Rules = []classify.Rule{{Class: 0x10100}}
		err := c.Validate()
		if (err == nil) != (n <= htb.MaxDepth) {
			t.Errorf("%d inner classes on a packet's way: Validate: %v", n, err)
		}
		if err != nil && !strings.Contains(err.Error(), "drops a packet after 8") {
			t.Errorf("%d inner classes: %v; want it to say Linux drops the packet", n, err)
		}
		if err == nil {
			tr, err := htb.NewTree(c, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			pkt := ipv4("1.2.3.4", 6, 80)
			if got, want := tr.ClassOf(pkt), uint32(0x10200+n-1); got != want {
				t.Errorf("ClassOf = %s, want %s", classify.ClassID(got), classify.ClassID(want))
			}
			pkt.DecRef()
		}
	}
}

// TestParseFilter: filters in tc's words, with the chain they join, and
// back.
func TestParseFilter(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		parent  uint32
		says    string
	}{
		{in: "dst 10.0.0.0/8 classid 1:10", out: "dst 10.0.0.0/8 classid 1:10"},
		{in: "parent 1: dst 10.0.0.0/8 classid 1:10", out: "dst 10.0.0.0/8 classid 1:10"},
		{in: "parent 1:10 dst 10.1.0.0/16 proto tcp dport 443 classid 1:101", out: "parent 1:10 dst 10.1.0.0/16 proto tcp dport 443 classid 1:101", parent: 0x10010},
		{in: "dst 10.1.0.0/16 parent 1:10 flowid 1:101", out: "parent 1:10 dst 10.1.0.0/16 classid 1:101", parent: 0x10010},
		{in: "parent 1:10 classid 1:102", out: "parent 1:10 classid 1:102", parent: 0x10010},
		{in: "parent 1:10 parent 1:20 classid 1:102", says: `"parent" given twice`},
		{in: "parent", says: `"parent" needs a value`},
		{in: "parent 10 classid 1:1", says: `parent "10": want tc's major:minor`},
		{in: "parent 2:10 classid 1:1", says: "different qdiscs"},
		{in: "parent 1:10 dst 10.1.0.0/16", says: "classid"},
	} {
		parent, r, err := htb.ParseFilter(tc.in)
		if tc.says != "" {
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("ParseFilter(%q): %v; want an error saying %q", tc.in, err, tc.says)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseFilter(%q): %v", tc.in, err)
			continue
		}
		if parent != tc.parent {
			t.Errorf("ParseFilter(%q): parent %s, want %s", tc.in, classify.ClassID(parent), classify.ClassID(tc.parent))
		}
		s := htb.FilterString(parent, r)
		if s != tc.out {
			t.Errorf("FilterString(ParseFilter(%q)) = %q, want %q", tc.in, s, tc.out)
		}
		p2, r2, err := htb.ParseFilter(s)
		if err != nil || p2 != parent || r2 != r {
			t.Errorf("ParseFilter(%q) = %s %v, %v; want %s %v back", s, classify.ClassID(p2), r2, err, classify.ClassID(parent), r)
		}
		if htb.CatchAll(r) != !strings.ContainsAny(strings.TrimPrefix(tc.out, "parent 1:10 "), ".") {
			t.Errorf("CatchAll(%v) = %v", r, htb.CatchAll(r))
		}
	}
}
