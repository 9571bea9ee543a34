package mmlink_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestCharge: a packet costs the opportunities its IP bytes and 4 (the
// TUN header mahimahi reads with it), each segment's: the link header is
// not charged; a host-GSO packet is charged as its segments, and so is a
// received aggregate larger than the link's frames.
func TestCharge(t *testing.T) {
	const eth = header.EthernetMinimumSize
	gsoPkt := func() *stack.PacketBuffer { return qdisctest.GSOPacket(3000, 1448, 1, 1, 1) } // 3 segments
	for _, tc := range []struct {
		name string
		make func() *stack.PacketBuffer
		size func(*stack.PacketBuffer) uint32
		mtu  uint32
		want uint32
	}{
		{"an IP packet", func() *stack.PacketBuffer { return qdisctest.MakePacket(1500, 1, 1) }, nil, 1500, 1504},
		{"a small one", func() *stack.PacketBuffer { return qdisctest.MakePacket(40, 1, 1) }, nil, 1500, 44},
		{"with a link header", func() *stack.PacketBuffer { return fuzzPacket(1500, 1, true) }, nil, 1500, 1504},
		{"host GSO, as its segments", gsoPkt, func(p *stack.PacketBuffer) uint32 { return uint32(gso.WireSize(p)) }, 1500,
			3000 + 3*(qdisctest.GSOHeaderLen-eth) + 3*mmlink.PacketOverhead},
		// Two full segments GRO merged: 20+32+2*1448 IP bytes, charged by
		// gso.ReceivedWireSize with the second's 14+20+32 header bytes.
		{"a received aggregate, as its segments", func() *stack.PacketBuffer { return fuzzPacket(20+32+2*1448, 1, true) },
			func(p *stack.PacketBuffer) uint32 { return uint32(p.Size()) + eth + 20 + 32 }, 1500, 2 * mmlink.OpportunityBytes},
		{"no MTU known: one packet", func() *stack.PacketBuffer { return qdisctest.MakePacket(9000, 1, 1) }, nil, 0, 9004},
		{"an empty one", func() *stack.PacketBuffer { return qdisctest.MakePacket(0, 1, 1) }, nil, 1500, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.make()
			defer p.DecRef()
			size := uint32(p.Size())
			if tc.size != nil {
				size = tc.size(p)
			}
			if got := mmlink.Charge(p, size, tc.mtu); got != tc.want {
				t.Errorf("Charge(%d bytes) = %d, want %d", size, got, tc.want)
			}
		})
	}
}
