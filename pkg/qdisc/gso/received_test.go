package gso_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// rxBytes returns what a receiver's GRO makes of the frames the host sends
// for a packet of spec s (as build makes it): one packet with s's link,
// IP and TCP headers and the whole payload, the IP length covering it all,
// as its link header and the rest, and the protocol it is delivered as.
func rxBytes(s spec) (link, network []byte, proto tcpip.NetworkProtocolNumber) {
	pkt := build(s)
	defer pkt.DecRef()
	sn := snapshot(pkt)
	network = append(append(append([]byte(nil), sn.Network...), sn.TCP...), sn.Payload...)
	return sn.Link, network, pkt.NetworkProtocolNumber
}

// rxPacket returns a packet as fdbased hands a received frame up: the link
// header consumed into pkt.LinkHeader(), network, the IP packet, in
// pkt.Data(), cut into views at the given offsets of network, delivered
// as proto.
func rxPacket(link, network []byte, proto tcpip.NetworkProtocolNumber, cuts ...int) *stack.PacketBuffer {
	b := append(append([]byte(nil), link...), network...)
	var buf buffer.Buffer
	prev := 0
	for _, c := range append(cuts, len(network)) {
		c = min(max(len(link)+c, prev), len(b))
		if c > prev {
			buf.Append(buffer.NewViewWithData(b[prev:c]))
		}
		prev = c
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buf})
	if len(link) > 0 {
		pkt.LinkHeader().Consume(len(link))
	}
	pkt.NetworkProtocolNumber = proto
	return pkt
}

// rxWant is ReceivedWireSize written from the bytes alone, by offsets: the
// fuzz target's oracle.
func rxWant(link, network []byte, proto tcpip.NetworkProtocolNumber, mtu uint32) uint64 {
	size := uint64(len(link) + len(network))
	n := len(network)
	if uint64(n) <= uint64(mtu) {
		return size
	}
	var ipLen int
	switch proto {
	case header.IPv4ProtocolNumber:
		if n < 20 || network[0]>>4 != 4 {
			return size
		}
		ipLen = int(network[0]&0xf) * 4
		frag := binary.BigEndian.Uint16(network[6:8])
		if ipLen < 20 || network[9] != 6 || frag&0x2000 != 0 || frag&0x1fff != 0 || int(binary.BigEndian.Uint16(network[2:4])) != n {
			return size
		}
	case header.IPv6ProtocolNumber:
		if n < 40 || network[0]>>4 != 6 || network[6] != 6 || int(binary.BigEndian.Uint16(network[4:6]))+40 != n {
			return size
		}
		ipLen = 40
	default:
		return size
	}
	if n < ipLen+20 {
		return size
	}
	tcpLen := int(network[ipLen+12]>>4) * 4
	mss := int64(mtu) - int64(ipLen) - int64(tcpLen)
	if tcpLen < 20 || ipLen+tcpLen > n || mss <= 0 {
		return size
	}
	payload := int64(n - ipLen - tcpLen)
	segs := (payload + mss - 1) / mss
	return size + uint64(segs-1)*uint64(len(link)+ipLen+tcpLen)
}

// TestGSOReceivedWireSize: a received TCP packet larger than the MTU is
// charged as the segments a sender on that MTU made, each with the link,
// IP and TCP headers; when the sender's MSS is the MTU's, that is what
// the sender's host put on the wire (WireSize of the packet it sent, the
// sum of its frames).
func TestGSOReceivedWireSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec
		mtu  uint32
		// segs is the segments the packet is charged as (1: its size).
		segs int
	}{
		{name: "IPv4 64 KiB, timestamps", s: spec{tcpOpts: 12, payload: 45 * 1448, mss: 1448}, mtu: 1500, segs: 45},
		{name: "IPv4 remainder", s: spec{tcpOpts: 12, payload: 10*1448 + 700, mss: 1448}, mtu: 1500, segs: 11},
		{name: "IPv4 no TCP options", s: spec{payload: 3 * 1460, mss: 1460}, mtu: 1500, segs: 3},
		{name: "IPv4 one byte over the MTU", s: spec{tcpOpts: 12, payload: 1449, mss: 1448}, mtu: 1500, segs: 2},
		{name: "IPv4 of the MTU", s: spec{tcpOpts: 12, payload: 1448, mss: 1448}, mtu: 1500, segs: 1},
		{name: "IPv4 below the MTU", s: spec{tcpOpts: 12, payload: 100, mss: 1448}, mtu: 1500, segs: 1},
		{name: "IPv4 bare ACK", s: spec{tcpOpts: 12, mss: 1448}, mtu: 1500, segs: 1},
		{name: "IPv4 options", s: spec{ipExt: true, tcpOpts: 12, payload: 20 * 1444, mss: 1444}, mtu: 1500, segs: 20},
		{name: "IPv4 SACK blocks, remainder", s: spec{tcpOpts: 40, payload: 5*1420 + 1, mss: 1420}, mtu: 1500, segs: 6},
		{name: "IPv6 64 KiB, timestamps", s: spec{v6: true, tcpOpts: 12, payload: 45 * 1428, mss: 1428}, mtu: 1500, segs: 45},
		{name: "IPv6 SACK blocks, remainder", s: spec{v6: true, tcpOpts: 40, payload: 7*1400 + 1, mss: 1400}, mtu: 1500, segs: 8},
		{name: "IPv6 no TCP options", s: spec{v6: true, payload: 4 * 1440, mss: 1440}, mtu: 1500, segs: 4},
		{name: "no link header", s: spec{noLink: true, tcpOpts: 12, payload: 10 * 1448, mss: 1448}, mtu: 1500, segs: 10},
		{name: "jumbo MTU", s: spec{tcpOpts: 12, payload: 60000, mss: 8948}, mtu: 9000, segs: 7},
		{name: "MTU of the IP and TCP headers and a byte", s: spec{tcpOpts: 12, payload: 300, mss: 1, noLink: true}, mtu: 53, segs: 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link, network, proto := rxBytes(tc.s)
			pkt := rxPacket(link, network, proto)
			defer pkt.DecRef()
			size := uint64(pkt.Size())
			want := size + uint64(tc.segs-1)*uint64(tc.s.hdrLen())
			if got := gso.ReceivedWireSize(pkt, tc.mtu); got != want {
				t.Errorf("ReceivedWireSize = %d, want %d (%d bytes as %d segments of %d header bytes)", got, want, size, tc.segs, tc.s.hdrLen())
			}
			if oracle := rxWant(link, network, proto, tc.mtu); oracle != want {
				t.Errorf("the fuzz oracle says %d, want %d", oracle, want)
			}
			if tc.segs > 1 {
				sent := build(tc.s)
				defer sent.DecRef()
				if w := gso.WireSize(sent); w != want {
					t.Errorf("the sender's host put %d bytes on the wire, ReceivedWireSize %d", w, want)
				}
			}
		})
	}
	t.Run("a sender with a smaller MSS sent more segments", func(t *testing.T) {
		s := spec{tcpOpts: 12, payload: 20000, mss: 1000}
		link, network, proto := rxBytes(s)
		pkt := rxPacket(link, network, proto)
		defer pkt.DecRef()
		sent := build(s)
		defer sent.DecRef()
		got, want := gso.ReceivedWireSize(pkt, 1500), uint64(pkt.Size())+13*uint64(s.hdrLen()) // 14 segments of 1448
		if got != want || got >= gso.WireSize(sent) {
			t.Errorf("ReceivedWireSize = %d, want %d (the MTU's 14 segments), below the sender's %d", got, want, gso.WireSize(sent))
		}
	})
	t.Run("nil", func(t *testing.T) {
		if got := gso.ReceivedWireSize(nil, 1500); got != 0 {
			t.Errorf("ReceivedWireSize(nil) = %d", got)
		}
	})
	checkNoLeaks(t)
}

// TestGSOReceivedMalformed: a packet larger than the MTU that is not a
// well-formed IPv4 or IPv6 TCP packet, or whose headers lie, is charged
// its size.
func TestGSOReceivedMalformed(t *testing.T) {
	v4 := spec{tcpOpts: 12, payload: 45 * 1448, mss: 1448}
	v6 := spec{v6: true, tcpOpts: 12, payload: 45 * 1428, mss: 1428}
	be := binary.BigEndian
	for _, tc := range []struct {
		name string
		s    spec
		// edit changes the IP packet's bytes; as, if not 0, is the
		// protocol it is delivered as.
		edit func(b []byte)
		as   tcpip.NetworkProtocolNumber
		// pkt changes the packet.
		pkt func(*stack.PacketBuffer)
		mtu uint32 // 0: 1500
	}{
		{name: "IPv4 version 5", s: v4, edit: func(b []byte) { b[0] = 0x55 }},
		{name: "IPv4 version 6", s: v4, edit: func(b []byte) { b[0] = 0x65 }},
		{name: "IPv4 IHL 4", s: v4, edit: func(b []byte) { b[0] = 0x44 }},
		{name: "IPv4 IHL 0", s: v4, edit: func(b []byte) { b[0] = 0x40 }},
		{name: "IPv4 total length one more", s: v4, edit: func(b []byte) { be.PutUint16(b[2:], be.Uint16(b[2:])+1) }},
		{name: "IPv4 total length one less", s: v4, edit: func(b []byte) { be.PutUint16(b[2:], be.Uint16(b[2:])-1) }},
		{name: "IPv4 total length 0", s: v4, edit: func(b []byte) { be.PutUint16(b[2:], 0) }},
		{name: "IPv4 more fragments", s: v4, edit: func(b []byte) { b[6] |= 0x20 }},
		{name: "IPv4 fragment offset", s: v4, edit: func(b []byte) { be.PutUint16(b[6:], 1) }},
		{name: "IPv4 UDP", s: v4, edit: func(b []byte) { b[9] = uint8(header.UDPProtocolNumber) }},
		{name: "IPv4 TCP data offset 4", s: v4, edit: func(b []byte) { b[20+12] = 4 << 4 }},
		{name: "IPv4 TCP data offset 0", s: v4, edit: func(b []byte) { b[20+12] = 0 }},
		{name: "IPv4 delivered as IPv6", s: v4, as: header.IPv6ProtocolNumber},
		{name: "IPv4 delivered as ARP", s: v4, as: header.ARPProtocolNumber},
		{name: "IPv6 version 4", s: v6, edit: func(b []byte) { b[0] = 0x40 }},
		{name: "IPv6 payload length one more", s: v6, edit: func(b []byte) { be.PutUint16(b[4:], be.Uint16(b[4:])+1) }},
		{name: "IPv6 payload length one less", s: v6, edit: func(b []byte) { be.PutUint16(b[4:], be.Uint16(b[4:])-1) }},
		{name: "IPv6 payload length 0 (jumbogram)", s: v6, edit: func(b []byte) { be.PutUint16(b[4:], 0) }},
		{name: "IPv6 UDP", s: v6, edit: func(b []byte) { b[6] = uint8(header.UDPProtocolNumber) }},
		{name: "IPv6 extension header", s: spec{v6: true, ipExt: true, tcpOpts: 12, payload: 45 * 1420, mss: 1420}},
		{name: "IPv6 TCP data offset 3", s: v6, edit: func(b []byte) { b[40+12] = 3 << 4 }},
		{name: "IPv6 delivered as IPv4", s: v6, as: header.IPv4ProtocolNumber},
		{name: "network header already parsed", s: v4, pkt: func(p *stack.PacketBuffer) { p.NetworkHeader().Consume(header.IPv4MinimumSize) }},
		{name: "MTU below the headers", s: v4, mtu: 52},
		{name: "MTU 1", s: v4, mtu: 1},
		{name: "TCP data offset past the packet", s: spec{noLink: true, payload: 10, mss: 30}, mtu: 40, edit: func(b []byte) { b[20+12] = 15 << 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link, network, proto := rxBytes(tc.s)
			if tc.edit != nil {
				tc.edit(network)
			}
			if tc.as != 0 {
				proto = tc.as
			}
			mtu := tc.mtu
			if mtu == 0 {
				mtu = 1500
			}
			pkt := rxPacket(link, network, proto)
			defer pkt.DecRef()
			if tc.pkt != nil {
				tc.pkt(pkt)
			}
			if got, want := gso.ReceivedWireSize(pkt, mtu), uint64(pkt.Size()); got != want {
				t.Errorf("ReceivedWireSize = %d, want its size %d", got, want)
			}
			if tc.pkt == nil {
				if oracle := rxWant(link, network, proto, mtu); oracle != uint64(pkt.Size()) {
					t.Errorf("the fuzz oracle says %d, want %d", oracle, pkt.Size())
				}
			}
		})
	}
	t.Run("MTU 0", func(t *testing.T) {
		link, network, proto := rxBytes(v4)
		pkt := rxPacket(link, network, proto)
		defer pkt.DecRef()
		if got, want := gso.ReceivedWireSize(pkt, 0), uint64(pkt.Size()); got != want {
			t.Errorf("ReceivedWireSize = %d, want its size %d", got, want)
		}
	})
	t.Run("empty", func(t *testing.T) {
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{})
		defer pkt.DecRef()
		pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
		if got := gso.ReceivedWireSize(pkt, 0); got != 0 {
			t.Errorf("ReceivedWireSize of an empty packet = %d", got)
		}
	})
	checkNoLeaks(t)
}

// TestGSOReceivedViews: headers cut across views count as in one, and
// ReceivedWireSize neither merges the views (as PullUp would) nor changes
// a byte.
func TestGSOReceivedViews(t *testing.T) {
	for _, s := range []spec{
		{tcpOpts: 40, ipExt: true, payload: 30000, mss: 1416},
		{v6: true, tcpOpts: 12, payload: 30000, mss: 1428},
	} {
		link, network, proto := rxBytes(s)
		one := rxPacket(link, network, proto)
		want := gso.ReceivedWireSize(one, 1500)
		one.DecRef()
		if want == uint64(len(link)+len(network)) {
			t.Fatalf("%+v: charged its size", s)
		}
		for _, cuts := range [][]int{{1}, {3, 7, 20, 21, 33, 50}, {0, 10, 40, 60, 70}, {45, 46, 47, 100, 119, 120}} {
			pkt := rxPacket(link, network, proto, cuts...)
			views := func() (n int) {
				l, _ := pkt.AsViewList()
				for v := l.Front(); v != nil; v = v.Next() {
					n++
				}
				return n
			}
			before := views()
			if got := gso.ReceivedWireSize(pkt, 1500); got != want {
				t.Errorf("%+v cut at %v: ReceivedWireSize = %d, want %d", s, cuts, got, want)
			}
			if after := views(); after != before {
				t.Errorf("%+v cut at %v: %d views became %d", s, cuts, before, after)
			}
			if got := pkt.Data().AsRange().ToSlice(); !bytes.Equal(got, network) || !bytes.Equal(pkt.LinkHeader().Slice(), link) {
				t.Errorf("%+v cut at %v: the packet changed", s, cuts)
			}
			pkt.DecRef()
		}
	}
	checkNoLeaks(t)
}

func TestGSOReceivedWireSizeAllocs(t *testing.T) {
	var pkts []*stack.PacketBuffer
	for _, s := range []spec{
		{tcpOpts: 12, payload: 45 * 1448, mss: 1448},
		{v6: true, tcpOpts: 12, payload: 45 * 1428, mss: 1428},
		{tcpOpts: 12, payload: 100, mss: 1448},
	} {
		link, network, proto := rxBytes(s)
		pkts = append(pkts, rxPacket(link, network, proto, 5, 30, 1000))
	}
	if got := testing.AllocsPerRun(1000, func() {
		for _, p := range pkts {
			sink += gso.ReceivedWireSize(p, 1500)
		}
	}); got != 0 {
		t.Errorf("ReceivedWireSize allocates %v times a run", got)
	}
	for _, p := range pkts {
		p.DecRef()
	}
	checkNoLeaks(t)
}
