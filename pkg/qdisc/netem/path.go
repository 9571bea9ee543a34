package netem

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// path is what netem needs to know of the path it is on to corrupt a
// packet as Linux does: how to cut a packet that stands for many segments
// on the wire into them (netem_segment), and whether a packet's transport
// checksum is left for the link to complete (Linux's CHECKSUM_PARTIAL,
// which netem completes before it flips a bit).
type path struct {
	// rx says the receive path (NewTo): packets as a link delivers them,
	// GRO aggregates among them, on a link of MTU mtu.
	rx  bool
	mtu uint32
	// txOffload says the lower link completes the transport checksums
	// of what it is given (stack.CapabilityTXChecksumOffload): gVisor's
	// TCP and UDP then leave them unmade.
	txOffload bool
}

// segment cuts pkt into the segments it stands for on the wire, in
// order, each a new packet the caller owns, as Linux's netem_segment cuts
// a GSO packet with skb_gso_segment: on the send path a host-GSO TCP
// packet (gso.Split, one MSS each), on the receive path a TCP aggregate
// GRO made (gso.SplitReceived, a segment a sender on the link's MTU makes
// each). It returns nil for a packet that is one segment, and an error
// for one it cannot cut (Linux drops it). pkt is only read.
func (p path) segment(pkt *stack.PacketBuffer) ([]*stack.PacketBuffer, error) {
	if p.rx {
		if gso.ReceivedWireSize(pkt, p.mtu) <= uint64(max(pkt.Size(), 0)) {
			return nil, nil // not an aggregate: one segment
		}
		one := uint64(len(pkt.LinkHeader().Slice())) + uint64(p.mtu)
		return gso.SplitReceived(pkt, p.mtu, one)
	}
	if gso.Segments(pkt) <= 1 {
		return nil, nil
	}
	hdr := pkt.Size() - pkt.Data().Size()
	return gso.Split(pkt, uint64(hdr)+uint64(pkt.GSOOptions.MSS))
}

// partial reports whether pkt's TCP or UDP checksum may not be whole
// (Linux's CHECKSUM_PARTIAL), so that netem makes it before it flips a
// bit, and the receiver's check sees the flip: on the send path, a packet
// the host completes (GSOOptions.NeedsCsum) or any on a link that
// completes checksums; on the receive path, one the link vouched for
// (RXChecksumValidated: the host may have handed it over with its
// checksum left to complete). zeroUDP says a UDP checksum of 0 is the
// sender's "none", kept (on the send path it is one left unmade).
func (p path) partial(pkt *stack.PacketBuffer) (partial, zeroUDP bool) {
	if p.rx {
		return pkt.RXChecksumValidated, true
	}
	return pkt.GSOOptions.NeedsCsum || p.txOffload, false
}
