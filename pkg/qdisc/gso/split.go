package gso

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// maxSpareHeaderBytes bounds the header room a piece keeps beyond its own
// headers: as much as the packet had left, up to this.
const maxSpareHeaderBytes = 128

// headers is what Split reads from a packet it has checked.
type headers struct {
	// link, network and tcp are the packet's own headers (not copies):
	// Split only reads them.
	link, network, tcp []byte
	v6                 bool
	src, dst           tcpip.Address
	// payload is the TCP payload's size, pkt.Data().Size().
	payload int
}

// size returns the bytes of headers every segment carries.
func (h *headers) size() int { return len(h.link) + len(h.network) + len(h.tcp) }

// Split segments pkt, a host-GSO TCP packet, in software so that no piece
// puts more than maxWire bytes on the wire, as Linux's tbf_segment does
// with skb_gso_segment for a packet larger than its bucket. Unlike
// skb_gso_segment, it cuts pkt not into MSS-sized segments but into pieces
// that each hold as many whole MSS-sized segments as fit in maxWire
// (WireSize(piece) <= maxWire), the last piece the rest, so that the host
// still segments each piece (or, if it is a single segment, only completes
// its checksum) and the wire carries the very segments it would have
// carried for pkt: the pieces' WireSizes add up to WireSize(pkt).
//
// The pieces are new packets, in order, whose payloads concatenate to
// pkt's. Each has its own copy of pkt's link, network and TCP headers,
// pushed as LinkHeader, NetworkHeader and TransportHeader as in pkt, with
// the fields that differ between pieces fixed as Linux's GSO fixes them
// per segment:
//
//   - IPv4: the total length; the ID advanced by the number of segments in
//     the pieces before, so that the host, which numbers the segments of a
//     piece ID, ID+1, ..., gives every segment the ID it would have had
//     for pkt and no two pieces collide; the header checksum.
//   - IPv6: the payload length.
//   - TCP: the sequence number advanced by the payload before; FIN and PSH
//     kept only on the last piece, CWR only on the first; the checksum. If
//     pkt.GSOOptions.NeedsCsum (the host completes the checksum), it holds
//     what gVisor's TCP writes there for a GSO packet: the folded,
//     uncomplemented pseudo-header checksum (addresses, protocol and the
//     TCP length, header plus payload, of the piece). Otherwise it is the
//     full TCP checksum.
//
// Each piece keeps pkt.GSOOptions (so the link writes a piece of more than
// one MSS with host GSO and a smaller one as a partial-checksum packet) and
// the metadata that PacketBuffer.Clone keeps and that is exported:
// NetworkProtocolNumber, TransportProtocolNumber, Hash, Owner, Mark,
// EgressRoute, PktType, NICID, InputNICID, RXChecksumValidated and
// NetworkPacketInfo. Connection-tracking state is not carried over, nor
// is pkt's release callback; instead each piece holds a reference to pkt
// until the piece is released, so that a sender told of pkt's release
// (TCP small queues, runsc patch 0006) learns of it when the last piece
// has left or been dropped, not when pkt was cut.
//
// If pkt already fits (WireSize(pkt) <= maxWire), Split returns one piece,
// a copy of pkt (with its checksums computed as above); callers that only
// split packets that do not fit never see this. A packet of one segment or
// none (a bare ACK) is a single piece too.
//
// Split does not consume the caller's reference to pkt, and only reads
// pkt: the pieces share pkt's payload storage copy-on-write and have their
// own headers. The caller owns one reference to each piece. On error, no
// piece is left: the error wraps ErrNotHostGSO (pkt's GSO type is not
// stack.GSOTCPv4 or stack.GSOTCPv6, or its MSS is 0), ErrMalformed (pkt's
// headers are missing, not IPv4 or IPv6 and TCP, disagree with each other
// or with pkt, or carry a SYN, which cut would misnumber the data) or
// ErrTooSmall (one MSS-sized segment and its headers exceed maxWire), and
// says what is wrong. Split does not verify pkt's IPv4 and TCP checksums
// (it computes the pieces' afresh), nor GSOOptions.L3HdrLen and
// CsumOffset, which it passes on as they are.
func Split(pkt *stack.PacketBuffer, maxWire uint64) ([]*stack.PacketBuffer, error) {
	if pkt == nil {
		return nil, fmt.Errorf("%w: nil packet", ErrMalformed)
	}
	var h headers
	if err := h.parse(pkt); err != nil {
		return nil, err
	}
	mss := int(pkt.GSOOptions.MSS)
	segs := Segments(pkt)
	perPiece := segs
	if WireSize(pkt) > maxWire {
		n := maxWire / uint64(h.size()+mss)
		if n == 0 {
			return nil, fmt.Errorf("%w: %d header bytes and an MSS of %d are more than %d bytes", ErrTooSmall, h.size(), mss, maxWire)
		}
		if n < uint64(segs) {
			perPiece = int(n)
		}
	}
	count := (segs + perPiece - 1) / perPiece

	payload := pkt.Data().ToBuffer()
	defer payload.Release()
	pieces := make([]*stack.PacketBuffer, 0, count)
	done := 0
	for i := 0; i < count; i++ {
		size := min(perPiece*mss, h.payload-done)
		chunk := payload.Clone()
		chunk.Truncate(int64(size))
		payload.TrimFront(int64(size))
		pieces = append(pieces, h.piece(pkt, chunk, size, pieceInfo{
			first:  i == 0,
			last:   i == count-1,
			offset: done,
			segs:   i * perPiece,
		}))
		done += size
	}
	return pieces, nil
}

// pieceInfo says where a piece lies in the packet Split cuts.
type pieceInfo struct {
	first, last bool
	// offset is the payload bytes before the piece.
	offset int
	// segs is the MSS-sized segments before the piece.
	segs int
}

// piece returns a new packet of payload (size bytes, owned by the new
// packet) after a copy of h's headers, fixed for the piece at.
func (h *headers) piece(pkt *stack.PacketBuffer, payload buffer.Buffer, size int, at pieceInfo) *stack.PacketBuffer {
	pkt.IncRef()
	p := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: h.size() + min(pkt.AvailableHeaderBytes(), maxSpareHeaderBytes),
		Payload:            payload,
		IsForwardedPacket:  pkt.NetworkPacketInfo.IsForwardedPacket,
		Mark:               pkt.Mark,
		OnRelease:          func() { pkt.DecRef() },
	})
	p.NetworkProtocolNumber = pkt.NetworkProtocolNumber
	p.TransportProtocolNumber = pkt.TransportProtocolNumber
	p.Hash = pkt.Hash
	p.Owner = pkt.Owner
	p.EgressRoute = pkt.EgressRoute
	p.GSOOptions = pkt.GSOOptions
	p.PktType = pkt.PktType
	p.NICID = pkt.NICID
	p.InputNICID = pkt.InputNICID
	p.RXChecksumValidated = pkt.RXChecksumValidated
	p.NetworkPacketInfo = pkt.NetworkPacketInfo

	tcp := header.TCP(p.TransportHeader().Push(len(h.tcp)))
	copy(tcp, h.tcp)
	network := p.NetworkHeader().Push(len(h.network))
	copy(network, h.network)
	if len(h.link) > 0 {
		copy(p.LinkHeader().Push(len(h.link)), h.link)
	}

	// The lengths fit in 16 bits: parse checked that pkt's own, larger,
	// lengths do.
	tcpLen := len(h.tcp) + size
	if h.v6 {
		ip := header.IPv6(network)
		ip.SetPayloadLength(uint16(len(network) - header.IPv6MinimumSize + tcpLen))
	} else {
		ip := header.IPv4(network)
		ip.SetTotalLength(uint16(len(network) + tcpLen))
		ip.SetID(ip.ID() + uint16(at.segs))
		ip.SetChecksum(0)
		ip.SetChecksum(^ip.CalculateChecksum())
	}

	tcp.SetSequenceNumber(tcp.SequenceNumber() + uint32(at.offset))
	flags := tcp.Flags()
	if !at.last {
		flags &^= header.TCPFlagFin | header.TCPFlagPsh
	}
	if !at.first {
		flags &^= header.TCPFlagCwr
	}
	tcp.SetFlags(uint8(flags))

	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, h.src, h.dst, uint16(tcpLen))
	if pkt.GSOOptions.NeedsCsum {
		tcp.SetChecksum(xsum)
	} else {
		tcp.SetChecksum(0)
		xsum = checksum.Combine(xsum, p.Data().Checksum())
		tcp.SetChecksum(^tcp.CalculateChecksum(xsum))
	}
	return p
}

// parse fills h from pkt and checks that Split can cut pkt: a host-GSO
// packet with an IPv4 or IPv6 header and a TCP header pushed, whose lengths
// agree with each other and with the packet.
func (h *headers) parse(pkt *stack.PacketBuffer) error {
	var wantNet tcpip.NetworkProtocolNumber
	switch t := pkt.GSOOptions.Type; t {
	case stack.GSOTCPv4:
		wantNet = header.IPv4ProtocolNumber
	case stack.GSOTCPv6:
		wantNet = header.IPv6ProtocolNumber
	default:
		return fmt.Errorf("%w: GSO type %d is not stack.GSOTCPv4 or stack.GSOTCPv6", ErrNotHostGSO, t)
	}
	if pkt.GSOOptions.MSS == 0 {
		return fmt.Errorf("%w: MSS 0", ErrNotHostGSO)
	}
	if n := len(pkt.VirtioNetHeader().Slice()); n != 0 {
		return fmt.Errorf("%w: a %d-byte virtio-net header is already pushed", ErrMalformed, n)
	}
	h.link = pkt.LinkHeader().Slice()
	h.network = pkt.NetworkHeader().Slice()
	h.tcp = pkt.TransportHeader().Slice()
	h.payload = pkt.Data().Size()
	if len(h.network) == 0 {
		return fmt.Errorf("%w: no network header", ErrMalformed)
	}
	if len(h.tcp) == 0 {
		return fmt.Errorf("%w: no transport header", ErrMalformed)
	}
	if before := pkt.Size() - h.payload; before != h.size() {
		return fmt.Errorf("%w: %d bytes precede the payload but the link, network and transport headers hold %d", ErrMalformed, before, h.size())
	}
	if p := pkt.TransportProtocolNumber; p != header.TCPProtocolNumber {
		return fmt.Errorf("%w: transport protocol %d, not TCP", ErrMalformed, p)
	}
	if p := pkt.NetworkProtocolNumber; p != wantNet {
		return fmt.Errorf("%w: network protocol %#04x under GSO type %d (want %#04x)", ErrMalformed, p, pkt.GSOOptions.Type, wantNet)
	}
	var err error
	if h.v6 = wantNet == header.IPv6ProtocolNumber; h.v6 {
		err = h.parseIPv6()
	} else {
		err = h.parseIPv4()
	}
	if err != nil {
		return err
	}
	return h.parseTCP()
}

// parseIPv4 checks h.network, an IPv4 header.
func (h *headers) parseIPv4() error {
	b := h.network
	if len(b) < header.IPv4MinimumSize {
		return fmt.Errorf("%w: IPv4 header of %d bytes, less than %d", ErrMalformed, len(b), header.IPv4MinimumSize)
	}
	if v := header.IPVersion(b); v != header.IPv4Version {
		return fmt.Errorf("%w: IP version %d in the IPv4 header", ErrMalformed, v)
	}
	ip := header.IPv4(b)
	if ihl := int(ip.HeaderLength()); ihl != len(b) {
		return fmt.Errorf("%w: IPv4 IHL says %d header bytes, the network header has %d", ErrMalformed, ihl, len(b))
	}
	if p := ip.Protocol(); p != uint8(header.TCPProtocolNumber) {
		return fmt.Errorf("%w: IPv4 protocol %d, not TCP", ErrMalformed, p)
	}
	if ip.More() || ip.FragmentOffset() != 0 {
		return fmt.Errorf("%w: IPv4 fragment (more fragments %t, offset %d)", ErrMalformed, ip.More(), ip.FragmentOffset())
	}
	if tl, have := int(ip.TotalLength()), len(b)+len(h.tcp)+h.payload; tl != have {
		return fmt.Errorf("%w: IPv4 total length %d, the packet holds %d", ErrMalformed, tl, have)
	}
	h.src, h.dst = ip.SourceAddress(), ip.DestinationAddress()
	return nil
}

// parseIPv6 checks h.network, an IPv6 header and the extension headers
// gVisor may send TCP with, that leave the pseudo-header's addresses those
// of the fixed header.
func (h *headers) parseIPv6() error {
	b := h.network
	if len(b) < header.IPv6MinimumSize {
		return fmt.Errorf("%w: IPv6 header of %d bytes, less than %d", ErrMalformed, len(b), header.IPv6MinimumSize)
	}
	if v := header.IPVersion(b); v != header.IPv6Version {
		return fmt.Errorf("%w: IP version %d in the IPv6 header", ErrMalformed, v)
	}
	ip := header.IPv6(b)
	if pl, have := int(ip.PayloadLength()), len(b)-header.IPv6MinimumSize+len(h.tcp)+h.payload; pl != have {
		return fmt.Errorf("%w: IPv6 payload length %d, the packet holds %d", ErrMalformed, pl, have)
	}
	next := ip.NextHeader()
	for off := header.IPv6MinimumSize; off < len(b); {
		switch id := header.IPv6ExtensionHeaderIdentifier(next); {
		case id == header.IPv6HopByHopOptionsExtHdrIdentifier && off == header.IPv6MinimumSize:
		case id == header.IPv6DestinationOptionsExtHdrIdentifier,
			id == header.IPv6ExperimentExtHdrIdentifier,
			id == header.IPv6UnknownExtHdrIdentifier:
		default:
			return fmt.Errorf("%w: IPv6 header %d at offset %d of the network header is not an extension header a GSO packet can carry", ErrMalformed, next, off)
		}
		if off+2 > len(b) {
			return fmt.Errorf("%w: IPv6 extension header %d truncated at offset %d of %d", ErrMalformed, next, off, len(b))
		}
		n := (int(b[off+1]) + 1) * 8
		if off+n > len(b) {
			return fmt.Errorf("%w: IPv6 extension header %d of %d bytes at offset %d overruns the %d-byte network header", ErrMalformed, next, n, off, len(b))
		}
		next = b[off]
		off += n
	}
	if next != uint8(header.TCPProtocolNumber) {
		return fmt.Errorf("%w: IPv6 next header %d, not TCP", ErrMalformed, next)
	}
	h.src, h.dst = ip.SourceAddress(), ip.DestinationAddress()
	return nil
}

// parseTCP checks h.tcp, a TCP header.
func (h *headers) parseTCP() error {
	if len(h.tcp) < header.TCPMinimumSize {
		return fmt.Errorf("%w: TCP header of %d bytes, less than %d", ErrMalformed, len(h.tcp), header.TCPMinimumSize)
	}
	tcp := header.TCP(h.tcp)
	if off := int(tcp.DataOffset()); off < header.TCPMinimumSize {
		return fmt.Errorf("%w: TCP data offset %d, less than %d", ErrMalformed, off, header.TCPMinimumSize)
	} else if off != len(h.tcp) {
		return fmt.Errorf("%w: TCP data offset %d, the transport header has %d bytes", ErrMalformed, off, len(h.tcp))
	}
	if tcp.Flags().Contains(header.TCPFlagSyn) {
		// A SYN takes a sequence number: cut, its data would be misnumbered.
		return fmt.Errorf("%w: SYN in a GSO packet", ErrMalformed)
	}
	return nil
}
