package mmlink

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// What an opportunity carries and what a packet costs, as mahimahi counts
// them: its LinkQueue reads each packet from a TUN device opened without
// IFF_NO_PI, so each comes with a 4-byte packet information header, and
// an opportunity (its PACKET_SIZE, "default max TUN payload size") is
// 1504 bytes: one 1500-byte IP packet and its header, or several smaller
// ones, each with its own.
const (
	// OpportunityBytes is what one delivery opportunity carries.
	OpportunityBytes = 1504
	// PacketOverhead is what a packet costs beyond its IP bytes.
	PacketOverhead = 4
)

// Charge returns what pkt costs of the opportunities, charged size bytes
// by its lane (its link, IP and transport bytes on the wire, every
// segment's), on a link of mtu (0: unknown): its IP bytes and
// PacketOverhead, each segment's. The link header (pkt.LinkHeader(), as
// it is pushed on the send path and consumed on the receive path) is not
// charged: mahimahi's packets are IP packets. A packet's segments are
// gso.Segments(pkt) for a host-GSO packet, and, for a packet larger than
// the link carries in one (a received GRO aggregate: no GSO options, but
// charged by its lane as its segments, gso.ReceivedWireSize), as many as
// its wire bytes fill link frames of mtu. It is at least 1.
func Charge(pkt *stack.PacketBuffer, size, mtu uint32) uint32 {
	link := uint64(len(pkt.LinkHeader().Slice()))
	segs := uint64(gso.Segments(pkt))
	if mtu != 0 {
		frame := uint64(mtu) + link
		segs = max(segs, (uint64(size)+frame-1)/frame)
	}
	segs = max(segs, 1)
	ip := uint64(size) - min(segs*link, uint64(size))
	return uint32(min(ip+segs*PacketOverhead, 1<<32-1))
}
