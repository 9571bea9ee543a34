// Package gso sizes and splits host-GSO TCP packets for qdiscs.
//
// When the link offloads segmentation to the host (stack.HostGSOSupported,
// as fdbased does with a virtio-net header), gVisor's TCP hands the qdisc
// one packet of up to 64 KiB that the host kernel later cuts into MSS-sized
// segments, each with its own copy of the link, IP and TCP headers. Two
// things follow for a qdisc that shapes or measures bytes:
//
//   - A packet's pkt.Size() undercounts what it puts on the wire by the
//     headers of every segment after the first. WireSize charges it as
//     Linux's qdisc_pkt_len_init does (net/core/dev.c): gso_segs segments,
//     each carrying the headers again.
//
//   - A token bucket smaller than such a packet could never send it. Split
//     segments it in software, as Linux's tbf_segment does with
//     skb_gso_segment, into pieces that each fit, but that still hold as
//     many whole MSS-sized segments as fit, so that the host keeps doing
//     most of the work and the wire carries exactly the segments it would
//     have carried without Split.
//
// Both rely on the headers as gVisor pushes them on the send path: the link
// header (if any), the network header (IPv4 or IPv6) and the TCP header,
// with the TCP payload in pkt.Data().
//
// The receive path has the same undercount the other way round: the host
// hands the sandbox TCP packets that GRO merged from many segments, with no
// GSOOptions. ReceivedWireSize recognizes them by their size and headers (as
// a link delivers them: the network header in pkt.Data()) and charges them
// as the segments they stand for, as Linux charges a GRO packet on ifb.
package gso

import (
	"errors"

	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Errors Split returns, wrapped with what exactly is wrong.
var (
	// ErrNotHostGSO is returned for a packet that the host would not
	// segment: its GSO type is not stack.GSOTCPv4 or stack.GSOTCPv6, or its
	// MSS is 0.
	ErrNotHostGSO = errors.New("not a host-GSO TCP packet")

	// ErrMalformed is returned for a packet whose headers are missing,
	// not IPv4 or IPv6 and TCP, or disagree with each other or with the
	// packet.
	ErrMalformed = errors.New("malformed GSO packet")

	// ErrTooSmall is returned when not even one MSS-sized segment with its
	// headers fits in the size allowed for a piece.
	ErrTooSmall = errors.New("one GSO segment exceeds the size allowed")
)

// hostGSO reports whether pkt asks the host to segment it (when its payload
// exceeds its MSS), and returns that MSS.
func hostGSO(pkt *stack.PacketBuffer) (mss int, ok bool) {
	switch pkt.GSOOptions.Type {
	case stack.GSOTCPv4, stack.GSOTCPv6:
		return int(pkt.GSOOptions.MSS), pkt.GSOOptions.MSS != 0
	default:
		return 0, false
	}
}

// Segments returns the number of packets pkt becomes on the wire, Linux's
// gso_segs: ceil(payload/MSS) for a host-GSO TCP packet (GSO type
// stack.GSOTCPv4 or stack.GSOTCPv6) whose payload, pkt.Data(), is larger
// than its MSS; 1 for every other packet (stack.GSONone, stack.GSOGvisor,
// whose segments gVisor cuts before the qdisc, a payload no larger than the
// MSS, an MSS of 0). It returns 0 for a nil packet.
//
// Segments does not allocate.
func Segments(pkt *stack.PacketBuffer) int {
	if pkt == nil {
		return 0
	}
	mss, ok := hostGSO(pkt)
	if !ok {
		return 1
	}
	payload := pkt.Data().Size()
	if payload <= mss {
		return 1
	}
	return (payload + mss - 1) / mss
}

// WireSize returns the bytes pkt puts on the wire, as Linux's
// qdisc_pkt_len_init charges a packet: pkt.Size() for a packet that is
// sent as is, and for a host-GSO packet of Segments(pkt) segments
//
//	pkt.Size() + (Segments(pkt)-1) * hdrLen
//
// where hdrLen = pkt.Size() - pkt.Data().Size() is the bytes before the TCP
// payload (link, network and TCP headers as pushed on the packet). Every
// segment carries these headers. It returns 0 for a nil packet.
//
// WireSize neither allocates nor panics: it reads only sizes and
// pkt.GSOOptions, not the headers.
func WireSize(pkt *stack.PacketBuffer) uint64 {
	if pkt == nil {
		return 0
	}
	size := pkt.Size()
	if size < 0 {
		size = 0
	}
	segs := Segments(pkt)
	if segs <= 1 {
		return uint64(size)
	}
	hdrLen := size - pkt.Data().Size()
	if hdrLen < 0 {
		hdrLen = 0
	}
	return uint64(size) + uint64(segs-1)*uint64(hdrLen)
}
