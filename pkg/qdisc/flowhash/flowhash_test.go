package flowhash_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
)

// flow is one packet's identity.
type flow struct {
	v6               bool
	src, dst         byte // last byte of the addresses
	proto            tcpip.TransportProtocolNumber
	srcPort, dstPort uint16
	fragOffset       uint16
	more             bool
}

// packet returns the bytes of an IPv4 or IPv6 packet of flow f, with 8
// bytes of transport header and payload after the network header.
func packet(f flow, payload byte) (tcpip.NetworkProtocolNumber, []byte) {
	tail := []byte{byte(f.srcPort >> 8), byte(f.srcPort), byte(f.dstPort >> 8), byte(f.dstPort), payload, payload, payload, payload}
	if f.v6 {
		b := make([]byte, header.IPv6MinimumSize+len(tail))
		header.IPv6(b).Encode(&header.IPv6Fields{
			PayloadLength:     uint16(len(tail)),
			TransportProtocol: f.proto,
			HopLimit:          64,
			SrcAddr:           tcpip.AddrFrom16([16]byte{0xfd, 15: f.src}),
			DstAddr:           tcpip.AddrFrom16([16]byte{0xfd, 15: f.dst}),
		})
		copy(b[header.IPv6MinimumSize:], tail)
		return header.IPv6ProtocolNumber, b
	}
	b := make([]byte, header.IPv4MinimumSize+len(tail))
	var flags uint8
	if f.more {
		flags = header.IPv4FlagMoreFragments
	}
	header.IPv4(b).Encode(&header.IPv4Fields{
		TotalLength:    uint16(len(b)),
		TTL:            64,
		Protocol:       uint8(f.proto),
		Flags:          flags,
		FragmentOffset: f.fragOffset,
		SrcAddr:        tcpip.AddrFrom4([4]byte{10, 0, 0, f.src}),
		DstAddr:        tcpip.AddrFrom4([4]byte{10, 0, 0, f.dst}),
	})
	copy(b[header.IPv4MinimumSize:], tail)
	return header.IPv4ProtocolNumber, b
}

// TestFlows: packets of one flow hash alike whatever their payload, and a
// change in any field of the flow's identity changes the hash; fragments
// of a datagram hash alike (no ports), and so do unparsable packets of one
// protocol.
func TestFlows(t *testing.T) {
	h := flowhash.WithSeed(1)
	hash := func(f flow, payload byte) uint32 {
		proto, b := packet(f, payload)
		return h.Bytes(proto, b)
	}
	for _, v6 := range []bool{false, true} {
		base := flow{v6: v6, src: 1, dst: 2, proto: header.UDPProtocolNumber, srcPort: 1000, dstPort: 53}
		if hash(base, 1) != hash(base, 2) {
			t.Errorf("v6=%v: one flow, two hashes for two payloads", v6)
		}
		for name, f := range map[string]flow{
			"source":           {v6: v6, src: 3, dst: 2, proto: header.UDPProtocolNumber, srcPort: 1000, dstPort: 53},
			"destination":      {v6: v6, src: 1, dst: 3, proto: header.UDPProtocolNumber, srcPort: 1000, dstPort: 53},
			"protocol":         {v6: v6, src: 1, dst: 2, proto: header.TCPProtocolNumber, srcPort: 1000, dstPort: 53},
			"source port":      {v6: v6, src: 1, dst: 2, proto: header.UDPProtocolNumber, srcPort: 1001, dstPort: 53},
			"destination port": {v6: v6, src: 1, dst: 2, proto: header.UDPProtocolNumber, srcPort: 1000, dstPort: 54},
		} {
			if hash(f, 1) == hash(base, 1) {
				t.Errorf("v6=%v: a different %s hashes as the base flow", v6, name)
			}
		}
	}
	first := flow{src: 1, dst: 2, proto: header.UDPProtocolNumber, srcPort: 1000, dstPort: 53, more: true}
	later := flow{src: 1, dst: 2, proto: header.UDPProtocolNumber, srcPort: 7, dstPort: 7, fragOffset: 1480}
	if hash(first, 1) != hash(later, 2) {
		t.Errorf("two fragments of one datagram hash apart")
	}
	if h.Bytes(header.IPv4ProtocolNumber, []byte{0x45, 0}) != h.Bytes(header.IPv4ProtocolNumber, nil) {
		t.Errorf("truncated IPv4 packets hash apart")
	}
	if h.Bytes(header.ARPProtocolNumber, []byte{1}) != h.Bytes(header.ARPProtocolNumber, []byte{2}) {
		t.Errorf("ARP packets hash apart")
	}
}

// TestSeeds: the seed perturbs the hash, and a packet hashes the same from
// its data (received) as from its parsed headers (sent).
func TestSeeds(t *testing.T) {
	proto, b := packet(flow{src: 1, dst: 2, proto: header.TCPProtocolNumber, srcPort: 80, dstPort: 5555}, 9)
	if flowhash.WithSeed(1).Bytes(proto, b) == flowhash.WithSeed(2).Bytes(proto, b) {
		t.Errorf("two seeds, one hash")
	}
	h := flowhash.New()
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	defer pkt.DecRef()
	fromData := h.Packet(proto, pkt)
	if _, ok := pkt.NetworkHeader().Consume(header.IPv4MinimumSize); !ok {
		t.Fatal("cannot parse the network header")
	}
	if _, ok := pkt.TransportHeader().Consume(4); !ok {
		t.Fatal("cannot parse the ports")
	}
	if got := h.Packet(proto, pkt); got != fromData || fromData != h.Bytes(proto, b) {
		t.Errorf("from data %#x, from parsed headers %#x, from bytes %#x: want one hash", fromData, got, h.Bytes(proto, b))
	}
}

func TestNoAllocation(t *testing.T) {
	proto, b := packet(flow{src: 1, dst: 2, proto: header.TCPProtocolNumber, srcPort: 80, dstPort: 5555}, 9)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	defer pkt.DecRef()
	h := flowhash.New()
	if a := testing.AllocsPerRun(100, func() { h.Packet(proto, pkt) }); a != 0 {
		t.Errorf("%v allocations per packet", a)
	}
}

func BenchmarkPacket(b *testing.B) {
	proto, data := packet(flow{src: 1, dst: 2, proto: header.TCPProtocolNumber, srcPort: 80, dstPort: 5555}, 9)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(data)})
	defer pkt.DecRef()
	h := flowhash.New()
	for b.Loop() {
		h.Packet(proto, pkt)
	}
}
