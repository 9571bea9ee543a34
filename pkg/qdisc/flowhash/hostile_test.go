package flowhash_test

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
)

// v6WithExtensions returns an IPv6 UDP packet from port src to port dst
// with the given extension headers (type, then its bytes: a multiple of 8
// with the next-header and length bytes left to fill) before the UDP
// header.
func v6WithExtensions(src, dst uint16, exts ...[]byte) []byte {
	var chain []byte
	types := []byte{}
	for _, e := range exts {
		types = append(types, e[0])
	}
	for i, e := range exts {
		h := bytes.Clone(e[1:])
		h[0] = byte(header.UDPProtocolNumber)
		if i+1 < len(exts) {
			h[0] = types[i+1]
		}
		if types[i] != 44 { // a fragment header has no length byte
			h[1] = byte(len(h)/8 - 1)
		}
		chain = append(chain, h...)
	}
	udp := []byte{byte(src >> 8), byte(src), byte(dst >> 8), byte(dst), 0, 8, 0, 0}
	b := make([]byte, header.IPv6MinimumSize, header.IPv6MinimumSize+len(chain)+len(udp))
	first := byte(header.UDPProtocolNumber)
	if len(exts) > 0 {
		first = types[0]
	}
	header.IPv6(b).Encode(&header.IPv6Fields{
		PayloadLength:     uint16(len(chain) + len(udp)),
		TransportProtocol: tcpip.TransportProtocolNumber(first),
		HopLimit:          64,
		SrcAddr:           tcpip.AddrFrom16([16]byte{0xfd, 15: 1}),
		DstAddr:           tcpip.AddrFrom16([16]byte{0xfd, 15: 2}),
	})
	return append(append(b, chain...), udp...)
}

// ext is an extension header of type t with n bytes.
func ext(t byte, n int) []byte { return append([]byte{t}, make([]byte, n)...) }

// fragmentHeader is an IPv6 fragment header at offset (in bytes) with the
// more-fragments flag.
func fragmentHeader(offset uint16, more bool) []byte {
	h := ext(44, 8)
	v := offset &^ 7
	if more {
		v |= 1
	}
	h[3], h[4] = byte(v>>8), byte(v)
	return h
}

// TestMalformedHeadersAreOpaque: a header is read only where it is there
// and well formed. An IPv4 header with IHL under 5 hashes by its protocol
// alone, so its TOS, TTL and checksum (where the ports would be read from)
// never move it between flows.
func TestMalformedHeadersAreOpaque(t *testing.T) {
	h := flowhash.WithSeed(1)
	_, base := packet(flow{src: 1, dst: 2, proto: header.UDPProtocolNumber, srcPort: 1000, dstPort: 53}, 1)
	for ihl := byte(0); ihl < 5; ihl++ {
		var hashes []uint32
		for _, change := range []struct {
			at  int
			val byte
		}{{1, 0x00}, {1, 0xb8}, {8, 1}, {8, 255}, {10, 0x12}, {11, 0x34}} {
			b := bytes.Clone(base)
			b[0] = 0x40 | ihl
			b[change.at] = change.val
			hashes = append(hashes, h.Bytes(header.IPv4ProtocolNumber, b))
		}
		for i, x := range hashes {
			if x != hashes[0] {
				t.Errorf("IHL %d: change %d moves the packet to another flow (%#x, was %#x)", ihl, i, x, hashes[0])
			}
		}
	}
}

// TestIPv6Extensions: the ports of an IPv6 packet are found past its
// extension headers (hop-by-hop, destination options, routing), so flows
// that differ only in their ports are told apart; every fragment of a
// datagram, first or not, hashes alike (no ports), as IPv4's do.
func TestIPv6Extensions(t *testing.T) {
	h := flowhash.WithSeed(1)
	hash := func(b []byte) uint32 { return h.Bytes(header.IPv6ProtocolNumber, b) }
	for _, tc := range []struct {
		name string
		exts [][]byte
	}{
		{"hop-by-hop", [][]byte{ext(0, 8)}},
		{"hop-by-hop, destination options", [][]byte{ext(0, 8), ext(60, 16)}},
		{"routing", [][]byte{ext(43, 24)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := hash(v6WithExtensions(1000, 53, tc.exts...)), hash(v6WithExtensions(1001, 53, tc.exts...))
			if a == b {
				t.Errorf("two source ports past %s hash alike: the ports were not read", tc.name)
			}
			if c := hash(v6WithExtensions(1000, 53, tc.exts...)); c != a {
				t.Errorf("one flow, two hashes")
			}
		})
	}
	first := hash(v6WithExtensions(1000, 53, fragmentHeader(0, true)))
	later := v6WithExtensions(1000, 53, fragmentHeader(1448, false))
	later[len(later)-8] = 0x99 // payload bytes where ports would be
	if hash(later) != first {
		t.Errorf("the first and a later fragment of one datagram hash apart")
	}
	behind := hash(v6WithExtensions(1000, 53, ext(0, 8), fragmentHeader(1448, false)))
	if behind != hash(v6WithExtensions(7, 7, ext(0, 8), fragmentHeader(0, true))) {
		t.Errorf("fragments behind a hop-by-hop header hash apart")
	}
}

// FuzzFlowhash: no bytes and no header layout make Packet panic; the hash
// is the same whichever way the headers were parsed (none, network header
// consumed, network header pushed); and fields that are not part of a
// flow's identity (IPv4's TOS, ID, TTL and checksum; IPv6's traffic class,
// flow label, payload length and hop limit) never change it.
func FuzzFlowhash(f *testing.F) {
	_, v4 := packet(flow{src: 1, dst: 2, proto: header.TCPProtocolNumber, srcPort: 80, dstPort: 5555}, 9)
	f.Add(uint8(0), uint8(20), v4)
	f.Add(uint8(0), uint8(20), append([]byte{0x42}, v4[1:]...))
	f.Add(uint8(1), uint8(48), v6WithExtensions(1000, 53, ext(0, 8)))
	f.Add(uint8(1), uint8(48), v6WithExtensions(1000, 53, fragmentHeader(8, false)))
	f.Add(uint8(2), uint8(0), []byte{0, 1, 8, 0, 6, 4, 0, 1})
	f.Fuzz(func(t *testing.T, which, split uint8, b []byte) {
		proto := []tcpip.NetworkProtocolNumber{header.IPv4ProtocolNumber, header.IPv6ProtocolNumber, header.ARPProtocolNumber, 0x1234}[which%4]
		h := flowhash.WithSeed(7)
		want := h.Bytes(proto, b)
		k := min(int(split), len(b))
		for _, layout := range []struct {
			name string
			pkt  *stack.PacketBuffer
		}{
			{"unparsed", unparsed(b)},
			{"consumed", consumed(b, k)},
			{"pushed", pushed(b, k)},
		} {
			got := h.Packet(proto, layout.pkt)
			layout.pkt.DecRef()
			if got != want {
				t.Fatalf("%s (%d-byte network header): hash %#x, from the bytes %#x", layout.name, k, got, want)
			}
		}
		var identityFree []int
		switch {
		case proto == header.IPv4ProtocolNumber && len(b) >= 20:
			identityFree = []int{1, 4, 5, 8, 10, 11}
		case proto == header.IPv6ProtocolNumber && len(b) >= 40:
			identityFree = []int{2, 3, 4, 5, 7}
		}
		for _, i := range identityFree {
			c := bytes.Clone(b)
			c[i] ^= 0xa5
			if got := h.Bytes(proto, c); got != want {
				t.Fatalf("flipping byte %d moved the packet to another flow", i)
			}
		}
	})
}

// unparsed, consumed and pushed are the packet of bytes b with no header
// parsed (as a link delivers it), with its first k bytes consumed as the
// network header (as the receive path parses it), and with them pushed as
// the network header (as the send path builds it).
func unparsed(b []byte) *stack.PacketBuffer {
	return stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(bytes.Clone(b))})
}

func consumed(b []byte, k int) *stack.PacketBuffer {
	pkt := unparsed(b)
	pkt.NetworkHeader().Consume(k)
	return pkt
}

func pushed(b []byte, k int) *stack.PacketBuffer {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: k, Payload: buffer.MakeWithData(bytes.Clone(b[k:]))})
	copy(pkt.NetworkHeader().Push(k), b[:k])
	return pkt
}
