package htb

import (
	"net/netip"
	"sync/atomic"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// ipv4Packet returns a 1500-byte IPv4/UDP packet to dst, its headers not
// yet parsed, as a link would hand it over (the classifier reads them).
func ipv4Packet(dst netip.Addr) *stack.PacketBuffer { return ipv4PacketOf(dst, 1500) }

// ipv4PacketOf is ipv4Packet of n bytes.
func ipv4PacketOf(dst netip.Addr, n int) *stack.PacketBuffer {
	b := make([]byte, n)
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(n), TTL: 64, Protocol: uint8(header.UDPProtocolNumber),
		SrcAddr: tcpip.AddrFrom4([4]byte{192, 168, 0, 2}), DstAddr: tcpip.AddrFrom4(dst.As4()),
	})
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	return pkt
}

// never2 is htb with two classes that never limit (10 Tbit/s each, as
// tbf's benchmark), packets to 10.0.0.0/8 in one and the rest in the
// other: the per-packet cost of classes, to set beside tbf's.
func never2() Config {
	const tbit = 125_000_000_000
	rule, err := classify.ParseRule("dst 10.0.0.0/8 classid 1:10")
	if err != nil {
		panic(err)
	}
	return Config{Default: 0x10020, Rules: []classify.Rule{rule}, Classes: []ClassConfig{
		{ID: 0x10010, Rate: 10 * tbit, Burst: 1000 * 1514, CBurst: 1000 * 1514},
		{ID: 0x10020, Rate: 10 * tbit, Burst: 1000 * 1514, CBurst: 1000 * 1514},
	}}
}

// BenchmarkWritePacket is the per-packet cost of an htb of two classes
// that never limits, from WritePacket to the lower link, the producers
// (-cpu) alternating between the classes; tbf's and fifo's benchmarks of
// the same name give the ratio.
func BenchmarkWritePacket(b *testing.B) { benchNever2(b, []int{1500}) }

// BenchmarkWritePacketMixed is BenchmarkWritePacket with each producer's
// packets of qdisctest.MixedLengths in turn; tbf's benchmark of the same
// name gives the ratio.
func BenchmarkWritePacketMixed(b *testing.B) { benchNever2(b, qdisctest.MixedLengths[:]) }

// benchNever2 runs the producers on never2, each writing packets of
// lengths in turn, over and over.
func benchNever2(b *testing.B, lengths []int) {
	link := qdisctest.NewLink(nil)
	link.Discard = true
	d, err := New(link, tcpip.NewStdClock(), never2())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	var n atomic.Uint32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		dst := netip.AddrFrom4([4]byte{8, 8, 8, 8})
		if n.Add(1)%2 == 0 {
			dst = netip.AddrFrom4([4]byte{10, 1, 2, 3})
		}
		pkts := make([]*stack.PacketBuffer, len(lengths))
		for i, l := range lengths {
			pkts[i] = ipv4PacketOf(dst, l)
			defer pkts[i].DecRef()
		}
		for i := 0; pb.Next(); i++ {
			qdisctest.Feed(d, pkts[i%len(pkts)], 1)
		}
	})
}

// TestNoAllocationPerPacket: classifying, queueing and scheduling a packet
// allocates nothing.
func TestNoAllocationPerPacket(t *testing.T) {
	link := qdisctest.NewLink(nil)
	link.Discard = true
	d, err := New(link, tcpip.NewStdClock(), never2())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if a := qdisctest.AllocsPerPacket(t, d, d); a != 0 {
		t.Errorf("%.3f allocations per packet, want 0", a)
	}
}
