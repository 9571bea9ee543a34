package gso_test

import (
	"errors"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// partial returns a host-GSO IPv4 packet of 5000 payload bytes (MSS 1000)
// with only the given headers pushed: a TCP header of tcpLen bytes (none
// if 0) and a network header of netLen bytes (none if 0), both filled as
// for a valid packet as far as they go.
func partial(tcpLen, netLen int) *stack.PacketBuffer {
	good := build(spec{payload: 5000, mss: 1000})
	defer good.DecRef()
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: 128,
		Payload:            buffer.MakeWithData(good.Data().AsRange().ToSlice()),
	})
	if tcpLen > 0 {
		copy(pkt.TransportHeader().Push(tcpLen), good.TransportHeader().Slice())
		pkt.TransportProtocolNumber = header.TCPProtocolNumber
	}
	if netLen > 0 {
		copy(pkt.NetworkHeader().Push(netLen), good.NetworkHeader().Slice())
		pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	}
	pkt.GSOOptions = good.GSOOptions
	return pkt
}

func TestGSOSplitErrors(t *testing.T) {
	v4 := spec{payload: 5000, mss: 1000}
	v6 := spec{v6: true, payload: 5000, mss: 1000}
	const maxWire = 3000
	ip4 := func(p *stack.PacketBuffer) header.IPv4 { return header.IPv4(p.NetworkHeader().Slice()) }
	ip6 := func(p *stack.PacketBuffer) header.IPv6 { return header.IPv6(p.NetworkHeader().Slice()) }
	tcp := func(p *stack.PacketBuffer) header.TCP { return header.TCP(p.TransportHeader().Slice()) }
	for _, tc := range []struct {
		name string
		s    spec
		// mk, if set, makes the packet instead of build(s).
		mk      func() *stack.PacketBuffer
		edit    func(*stack.PacketBuffer)
		maxWire uint64
		is      error
		msg     string
	}{
		{name: "GSONone", s: v4, edit: func(p *stack.PacketBuffer) { p.GSOOptions.Type = stack.GSONone }, is: gso.ErrNotHostGSO, msg: "GSO type 0"},
		{name: "GSOGvisor", s: v4, edit: func(p *stack.PacketBuffer) { p.GSOOptions.Type = stack.GSOGvisor }, is: gso.ErrNotHostGSO, msg: "GSO type 3"},
		{name: "unknown GSO type", s: v4, edit: func(p *stack.PacketBuffer) { p.GSOOptions.Type = -1 }, is: gso.ErrNotHostGSO, msg: "GSO type -1"},
		{name: "MSS 0", s: v4, edit: func(p *stack.PacketBuffer) { p.GSOOptions.MSS = 0 }, is: gso.ErrNotHostGSO, msg: "MSS 0"},
		{name: "virtio-net header pushed", s: v4, edit: func(p *stack.PacketBuffer) { p.VirtioNetHeader().Push(10) }, is: gso.ErrMalformed, msg: "10-byte virtio-net header"},
		{name: "no headers", mk: func() *stack.PacketBuffer { return partial(0, 0) }, is: gso.ErrMalformed, msg: "no network header"},
		{name: "no network header", mk: func() *stack.PacketBuffer { return partial(20, 0) }, is: gso.ErrMalformed, msg: "no network header"},
		{name: "no transport header", mk: func() *stack.PacketBuffer { return partial(0, 20) }, is: gso.ErrMalformed, msg: "no transport header"},
		{name: "bytes between headers and payload", s: v4, edit: func(p *stack.PacketBuffer) { p.Data().Consume(4) }, is: gso.ErrMalformed, msg: "58 bytes precede the payload but the link, network and transport headers hold 54"},
		{name: "transport protocol UDP", s: v4, edit: func(p *stack.PacketBuffer) { p.TransportProtocolNumber = header.UDPProtocolNumber }, is: gso.ErrMalformed, msg: "transport protocol 17, not TCP"},
		{name: "IPv6 packet under GSOTCPv4", s: v6, edit: func(p *stack.PacketBuffer) { p.GSOOptions.Type = stack.GSOTCPv4 }, is: gso.ErrMalformed, msg: "network protocol 0x86dd under GSO type 1 (want 0x0800)"},
		{name: "IPv4 packet under GSOTCPv6", s: v4, edit: func(p *stack.PacketBuffer) { p.GSOOptions.Type = stack.GSOTCPv6 }, is: gso.ErrMalformed, msg: "network protocol 0x0800 under GSO type 2 (want 0x86dd)"},
		{name: "ARP", s: v4, edit: func(p *stack.PacketBuffer) { p.NetworkProtocolNumber = header.ARPProtocolNumber }, is: gso.ErrMalformed, msg: "network protocol 0x0806"},
		{name: "IPv4 header of 16 bytes", mk: func() *stack.PacketBuffer { return partial(20, 16) }, is: gso.ErrMalformed, msg: "IPv4 header of 16 bytes, less than 20"},
		{name: "IPv4 version 6", s: v4, edit: func(p *stack.PacketBuffer) { ip4(p)[0] = 0x65 }, is: gso.ErrMalformed, msg: "IP version 6 in the IPv4 header"},
		{name: "IPv4 IHL 4", s: v4, edit: func(p *stack.PacketBuffer) { ip4(p)[0] = 0x44 }, is: gso.ErrMalformed, msg: "IHL says 16 header bytes, the network header has 20"},
		{name: "IPv4 IHL 6", s: v4, edit: func(p *stack.PacketBuffer) { ip4(p)[0] = 0x46 }, is: gso.ErrMalformed, msg: "IHL says 24 header bytes"},
		{name: "IPv4 IHL 15", s: v4, edit: func(p *stack.PacketBuffer) { ip4(p)[0] = 0x4f }, is: gso.ErrMalformed, msg: "IHL says 60 header bytes"},
		{name: "IPv4 IHL 5 with options", s: spec{ipExt: true, payload: 5000, mss: 1000}, edit: func(p *stack.PacketBuffer) { ip4(p)[0] = 0x45 }, is: gso.ErrMalformed, msg: "IHL says 20 header bytes, the network header has 24"},
		{name: "IPv4 total length short", s: v4, edit: func(p *stack.PacketBuffer) { ip4(p).SetTotalLength(5039) }, is: gso.ErrMalformed, msg: "IPv4 total length 5039, the packet holds 5040"},
		{name: "IPv4 total length long", s: v4, edit: func(p *stack.PacketBuffer) { ip4(p).SetTotalLength(5041) }, is: gso.ErrMalformed, msg: "IPv4 total length 5041"},
		{name: "IPv4 total length 0", s: v4, edit: func(p *stack.PacketBuffer) { ip4(p).SetTotalLength(0) }, is: gso.ErrMalformed, msg: "IPv4 total length 0"},
		{name: "IPv4 protocol UDP", s: v4, edit: func(p *stack.PacketBuffer) { ip4(p)[9] = 17 }, is: gso.ErrMalformed, msg: "IPv4 protocol 17, not TCP"},
		{name: "IPv4 more fragments", s: v4, edit: func(p *stack.PacketBuffer) { ip4(p).SetFlagsFragmentOffset(header.IPv4FlagMoreFragments, 0) }, is: gso.ErrMalformed, msg: "IPv4 fragment (more fragments true, offset 0)"},
		{name: "IPv4 fragment offset", s: v4, edit: func(p *stack.PacketBuffer) { ip4(p).SetFlagsFragmentOffset(0, 1480) }, is: gso.ErrMalformed, msg: "offset 1480"},
		{name: "IPv6 header of 30 bytes", s: v6, mk: func() *stack.PacketBuffer {
			p := partial(20, 0)
			copy(p.NetworkHeader().Push(30), []byte{0x60})
			p.NetworkProtocolNumber = header.IPv6ProtocolNumber
			p.GSOOptions.Type = stack.GSOTCPv6
			return p
		}, is: gso.ErrMalformed, msg: "IPv6 header of 30 bytes, less than 40"},
		{name: "IPv6 version 4", s: v6, edit: func(p *stack.PacketBuffer) { ip6(p)[0] = 0x40 }, is: gso.ErrMalformed, msg: "IP version 4 in the IPv6 header"},
		{name: "IPv6 payload length long", s: v6, edit: func(p *stack.PacketBuffer) { ip6(p).SetPayloadLength(5021) }, is: gso.ErrMalformed, msg: "IPv6 payload length 5021, the packet holds 5020"},
		{name: "IPv6 payload length 0 (jumbogram)", s: v6, edit: func(p *stack.PacketBuffer) { ip6(p).SetPayloadLength(0) }, is: gso.ErrMalformed, msg: "IPv6 payload length 0"},
		{name: "IPv6 next header UDP", s: v6, edit: func(p *stack.PacketBuffer) { ip6(p).SetNextHeader(17) }, is: gso.ErrMalformed, msg: "IPv6 next header 17, not TCP"},
		{name: "IPv6 next header an extension header past the network header", s: v6, edit: func(p *stack.PacketBuffer) { ip6(p).SetNextHeader(60) }, is: gso.ErrMalformed, msg: "IPv6 next header 60, not TCP"},
		{name: "IPv6 extension header then UDP", s: spec{v6: true, ipExt: true, payload: 5000, mss: 1000}, edit: func(p *stack.PacketBuffer) { ip6(p)[40] = 17 }, is: gso.ErrMalformed, msg: "IPv6 next header 17, not TCP"},
		{name: "IPv6 routing header", s: spec{v6: true, ipExt: true, payload: 5000, mss: 1000}, edit: func(p *stack.PacketBuffer) { ip6(p).SetNextHeader(43) }, is: gso.ErrMalformed, msg: "IPv6 header 43 at offset 40"},
		{name: "IPv6 fragment header", s: spec{v6: true, ipExt: true, payload: 5000, mss: 1000}, edit: func(p *stack.PacketBuffer) { ip6(p).SetNextHeader(44) }, is: gso.ErrMalformed, msg: "IPv6 header 44 at offset 40"},
		{name: "IPv6 TCP where the extension header is", s: spec{v6: true, ipExt: true, payload: 5000, mss: 1000}, edit: func(p *stack.PacketBuffer) { ip6(p).SetNextHeader(6) }, is: gso.ErrMalformed, msg: "IPv6 header 6 at offset 40"},
		{name: "IPv6 extension header overruns", s: spec{v6: true, ipExt: true, payload: 5000, mss: 1000}, edit: func(p *stack.PacketBuffer) { ip6(p)[41] = 1 }, is: gso.ErrMalformed, msg: "IPv6 extension header 253 of 16 bytes at offset 40 overruns the 48-byte network header"},
		{name: "IPv6 hop-by-hop ending the chain", s: spec{v6: true, ipExt: true, payload: 5000, mss: 1000}, edit: func(p *stack.PacketBuffer) {
			ip6(p).SetNextHeader(60)
			ip6(p)[40] = 0
		}, is: gso.ErrMalformed, msg: "IPv6 next header 0, not TCP"},
		{name: "IPv6 hop-by-hop after another extension header", s: spec{v6: true, ipExt: true, ipExt2: true, payload: 5000, mss: 1000}, edit: func(p *stack.PacketBuffer) { ip6(p)[40] = 0 }, is: gso.ErrMalformed, msg: "IPv6 header 0 at offset 48"},
		{name: "IPv6 hop-by-hop first", s: spec{v6: true, ipExt: true, ipExt2: true, payload: 5000, mss: 1000}, edit: func(p *stack.PacketBuffer) {
			ip6(p).SetNextHeader(0)
			ip6(p)[48] = 17
		}, is: gso.ErrMalformed, msg: "IPv6 next header 17, not TCP"},
		{name: "IPv6 extension header length byte past the network header", mk: func() *stack.PacketBuffer {
			p := build(spec{v6: true, ipExt: true, payload: 5000, mss: 1000})
			q := partial(20, 0)
			copy(q.NetworkHeader().Push(41), p.NetworkHeader().Slice())
			p.DecRef()
			q.NetworkProtocolNumber = header.IPv6ProtocolNumber
			q.GSOOptions.Type = stack.GSOTCPv6
			header.IPv6(q.NetworkHeader().Slice()).SetPayloadLength(1 + 20 + 5000)
			return q
		}, is: gso.ErrMalformed, msg: "IPv6 extension header 253 truncated at offset 40 of 41"},
		{name: "TCP header of 12 bytes", mk: func() *stack.PacketBuffer {
			p := partial(12, 20)
			ip4(p).SetTotalLength(5032)
			return p
		}, is: gso.ErrMalformed, msg: "TCP header of 12 bytes, less than 20"},
		{name: "TCP data offset 0", s: v4, edit: func(p *stack.PacketBuffer) { tcp(p)[12] = 0 }, is: gso.ErrMalformed, msg: "TCP data offset 0, less than 20"},
		{name: "TCP data offset 16", s: v4, edit: func(p *stack.PacketBuffer) { tcp(p)[12] = 4 << 4 }, is: gso.ErrMalformed, msg: "TCP data offset 16, less than 20"},
		{name: "TCP data offset 24 in a 20-byte header", s: v4, edit: func(p *stack.PacketBuffer) { tcp(p)[12] = 6 << 4 }, is: gso.ErrMalformed, msg: "TCP data offset 24, the transport header has 20 bytes"},
		{name: "TCP data offset 60 in a 20-byte header", s: v4, edit: func(p *stack.PacketBuffer) { tcp(p)[12] = 15 << 4 }, is: gso.ErrMalformed, msg: "TCP data offset 60"},
		{name: "TCP data offset 20 in a 32-byte header", s: spec{tcpOpts: 12, payload: 5000, mss: 1000}, edit: func(p *stack.PacketBuffer) { tcp(p)[12] = 5 << 4 }, is: gso.ErrMalformed, msg: "TCP data offset 20, the transport header has 32 bytes"},
		{name: "SYN", s: v4, edit: func(p *stack.PacketBuffer) { tcp(p).SetFlags(uint8(header.TCPFlagSyn | header.TCPFlagAck)) }, is: gso.ErrMalformed, msg: "SYN in a GSO packet"},
		{name: "one segment above maxWire", s: v4, maxWire: 54 + 999, is: gso.ErrTooSmall, msg: "54 header bytes and an MSS of 1000 are more than 1053 bytes"},
		{name: "maxWire 0", s: v6, maxWire: 0, is: gso.ErrTooSmall, msg: "more than 0 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pkt *stack.PacketBuffer
			if tc.mk != nil {
				pkt = tc.mk()
			} else {
				pkt = build(tc.s)
			}
			if tc.edit != nil {
				tc.edit(pkt)
			}
			mw := uint64(maxWire)
			if tc.is == gso.ErrTooSmall {
				mw = tc.maxWire
			}
			before := snapshot(pkt)
			pieces, err := gso.Split(pkt, mw)
			if !errors.Is(err, tc.is) || err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Split = %d pieces, %v; want an error wrapping %q and saying %q", len(pieces), err, tc.is, tc.msg)
			}
			if pieces != nil {
				t.Errorf("Split returned %d pieces with its error", len(pieces))
			}
			for _, p := range pieces {
				p.DecRef()
			}
			if diff := diffSnap(before, snapshot(pkt)); diff != "" {
				t.Errorf("Split changed the packet:\n%s", diff)
			}
			if got := pkt.ReadRefs(); got != 1 {
				t.Errorf("the packet has %d references after Split, want 1", got)
			}
			pkt.DecRef()
			checkNoLeaks(t)
		})
	}
	t.Run("nil", func(t *testing.T) {
		if pieces, err := gso.Split(nil, maxWire); !errors.Is(err, gso.ErrMalformed) || pieces != nil {
			t.Errorf("Split(nil) = %d pieces, %v; want ErrMalformed", len(pieces), err)
		}
	})
}

// TestGSOSplitOutlivesPacket checks that the pieces own their payload: the
// packet released, and its payload storage written over by a later user
// of the buffer pool, they still hold what the packet held.
func TestGSOSplitOutlivesPacket(t *testing.T) {
	pkt := build(spec{payload: 40000, mss: 1448, tcpOpts: 12, views: 5})
	orig := snapshot(pkt)
	pieces, err := gso.Split(pkt, 16384)
	if err != nil {
		t.Fatalf("Split: %v", err)
	}
	pkt.DecRef()
	for i := 0; i < 10; i++ {
		// Take and dirty chunks from the pool the packet's went back to.
		v := buffer.NewViewSize(40000)
		for j := range v.AsSlice() {
			v.AsSlice()[j] = 0xa5
		}
		v.Release()
	}
	var payload []byte
	for _, p := range pieces {
		payload = append(payload, p.Data().AsRange().ToSlice()...)
		p.DecRef()
	}
	if diff := diffBytes(orig.Payload, payload); diff != "" {
		t.Errorf("the pieces' payloads after the packet's release differ from the packet's: %s", diff)
	}
	checkNoLeaks(t)
}

// TestGSOSplitHeaderRoom checks that pieces keep the packet's spare header
// room (within a bound), so that a later stage can push as on the packet.
func TestGSOSplitHeaderRoom(t *testing.T) {
	pkt := build(spec{payload: 5000, mss: 1000})
	defer pkt.DecRef()
	pieces, err := gso.Split(pkt, 2500)
	if err != nil {
		t.Fatalf("Split: %v", err)
	}
	for i, p := range pieces {
		if got, want := p.AvailableHeaderBytes(), pkt.AvailableHeaderBytes(); got != want {
			t.Errorf("piece %d: %d spare header bytes, want %d", i, got, want)
		}
		p.VirtioNetHeader().Push(10)
		p.DecRef()
	}
}
