package flowhash_test

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
)

// TestHosts: a host's hash is its address's alone: two flows of one
// source share Src, not Flow; source and destination are told apart; a
// malformed or non-IP header has no hosts.
func TestHosts(t *testing.T) {
	h := flowhash.WithSeed(3)
	_, a := packet(flow{src: 1, dst: 2, proto: header.TCPProtocolNumber, srcPort: 80, dstPort: 5555}, 0)
	_, b := packet(flow{src: 1, dst: 3, proto: header.UDPProtocolNumber, srcPort: 53, dstPort: 53}, 0)
	_, c := packet(flow{src: 2, dst: 1, proto: header.TCPProtocolNumber, srcPort: 80, dstPort: 5555}, 0)
	ha, hb, hc := h.HostsBytes(header.IPv4ProtocolNumber, a), h.HostsBytes(header.IPv4ProtocolNumber, b), h.HostsBytes(header.IPv4ProtocolNumber, c)
	if ha.Src != hb.Src || ha.Flow == hb.Flow || ha.Dst == hb.Dst {
		t.Errorf("one source, two flows: %+v %+v", ha, hb)
	}
	if ha.Src != hc.Dst || ha.Dst != hc.Src || ha.Src == ha.Dst {
		t.Errorf("reversed: %+v %+v", ha, hc)
	}
	if ha.Flow != h.Bytes(header.IPv4ProtocolNumber, a) {
		t.Errorf("Flow %#x is not Bytes' %#x", ha.Flow, h.Bytes(header.IPv4ProtocolNumber, a))
	}
	v6 := v6WithExtensions(1000, 53)
	if h6 := h.HostsBytes(header.IPv6ProtocolNumber, v6); h6.Src == 0 || h6.Dst == 0 || h6.Src == h6.Dst {
		t.Errorf("IPv6: %+v", h6)
	}
	for _, tc := range []struct {
		proto tcpip.NetworkProtocolNumber
		b     []byte
	}{
		{header.IPv4ProtocolNumber, a[:19]},
		{header.IPv4ProtocolNumber, append([]byte{0x44}, a[1:]...)}, // IHL 4
		{header.IPv4ProtocolNumber, v6},                             // the wrong version
		{header.IPv6ProtocolNumber, v6[:39]},
		{header.ARPProtocolNumber, a},
	} {
		if hs := h.HostsBytes(tc.proto, tc.b); hs.Src != 0 || hs.Dst != 0 {
			t.Errorf("%d bytes of protocol %#x: hosts %+v, want none", len(tc.b), tc.proto, hs)
		}
	}
}

// FuzzHosts: Hosts reads any bytes in any layout without panicking, gives
// what HostsBytes gives for them, and a host's hash depends on its
// address alone (the other bytes of the header changed, it stays).
func FuzzHosts(f *testing.F) {
	_, v4 := packet(flow{src: 1, dst: 2, proto: header.TCPProtocolNumber, srcPort: 80, dstPort: 5555}, 9)
	f.Add(uint8(0), uint8(20), v4)
	f.Add(uint8(1), uint8(40), v6WithExtensions(1000, 53, ext(0, 8)))
	f.Add(uint8(2), uint8(0), []byte{0, 1, 8, 0})
	f.Fuzz(func(t *testing.T, which, split uint8, b []byte) {
		proto := []tcpip.NetworkProtocolNumber{header.IPv4ProtocolNumber, header.IPv6ProtocolNumber, header.ARPProtocolNumber, 0x1234}[which%4]
		h := flowhash.WithSeed(9)
		want := h.HostsBytes(proto, b)
		k := min(int(split), len(b))
		for _, pkt := range [...]func() (string, flowhash.Hashes){
			func() (string, flowhash.Hashes) {
				p := unparsed(b)
				defer p.DecRef()
				return "unparsed", h.Hosts(proto, p)
			},
			func() (string, flowhash.Hashes) {
				p := consumed(b, k)
				defer p.DecRef()
				return "consumed", h.Hosts(proto, p)
			},
			func() (string, flowhash.Hashes) {
				p := pushed(b, k)
				defer p.DecRef()
				return "pushed", h.Hosts(proto, p)
			},
		} {
			if name, got := pkt(); got != want {
				t.Fatalf("%s: %+v, from the bytes %+v", name, got, want)
			}
		}
		p := pushed(b, k)
		src, dst := h.HostPair(proto, p)
		p.DecRef()
		if src != want.Src || dst != want.Dst {
			t.Fatalf("HostPair: %#x %#x, Hosts %+v", src, dst, want)
		}
		var addrs [2]int // where the source and destination addresses end
		switch {
		case proto == header.IPv4ProtocolNumber && len(b) >= 20:
			addrs = [2]int{12, 20}
		case proto == header.IPv6ProtocolNumber && len(b) >= 40:
			addrs = [2]int{8, 40}
		default:
			return
		}
		c := bytes.Clone(b)
		for i := 1; i < len(c); i++ { // byte 0: the version (and IHL)
			if i < addrs[0] || i >= addrs[1] {
				c[i] ^= 0x5a
			}
		}
		if got := h.HostsBytes(proto, c); got.Src != want.Src || got.Dst != want.Dst {
			t.Fatalf("changing bytes other than the addresses moved the hosts: %+v, was %+v", got, want)
		}
	})
}
