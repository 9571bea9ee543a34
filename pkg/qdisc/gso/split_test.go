package gso_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// snap is a copy of what a packet holds.
type snap struct {
	Link, Network, TCP, Payload []byte
	GSO                         stack.GSO
	Wire                        uint64
}

func snapshot(pkt *stack.PacketBuffer) snap {
	return snap{
		Link:    append([]byte(nil), pkt.LinkHeader().Slice()...),
		Network: append([]byte(nil), pkt.NetworkHeader().Slice()...),
		TCP:     append([]byte(nil), pkt.TransportHeader().Slice()...),
		Payload: pkt.Data().AsRange().ToSlice(),
		GSO:     pkt.GSOOptions,
		Wire:    gso.WireSize(pkt),
	}
}

// diffSnap returns what differs between a and b, or "".
func diffSnap(a, b snap) string {
	var d []string
	for _, f := range []struct {
		name string
		a, b []byte
	}{{"link header", a.Link, b.Link}, {"network header", a.Network, b.Network}, {"TCP header", a.TCP, b.TCP}, {"payload", a.Payload, b.Payload}} {
		if diff := diffBytes(f.a, f.b); diff != "" {
			d = append(d, f.name+": "+diff)
		}
	}
	if a.GSO != b.GSO || a.Wire != b.Wire {
		d = append(d, fmt.Sprintf("GSO options %+v, %+v; WireSize %d, %d", a.GSO, b.GSO, a.Wire, b.Wire))
	}
	return strings.Join(d, "\n")
}

// diffBytes returns where a and b differ, or "". Unlike cmp.Diff it takes
// no time on long slices.
func diffBytes(a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	at := func(x []byte) string {
		if i < len(x) {
			return fmt.Sprintf("%#02x", x[i])
		}
		return "end"
	}
	return fmt.Sprintf("%d and %d bytes, first difference at byte %d: %s, %s", len(a), len(b), i, at(a), at(b))
}

// diffFrames returns where a and b differ, or "".
func diffFrames(a, b [][]byte) string {
	for i := range min(len(a), len(b)) {
		if d := diffBytes(a[i], b[i]); d != "" {
			return fmt.Sprintf("frame %d: %s", i, d)
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d and %d frames", len(a), len(b))
	}
	return ""
}

func (s snap) hdrLen() int { return len(s.Link) + len(s.Network) + len(s.TCP) }

func (s snap) v6() bool { return s.GSO.Type == stack.GSOTCPv6 }

func (s snap) addrs() (src, dst tcpip.Address) {
	if s.v6() {
		ip := header.IPv6(s.Network)
		return ip.SourceAddress(), ip.DestinationAddress()
	}
	ip := header.IPv4(s.Network)
	return ip.SourceAddress(), ip.DestinationAddress()
}

// completeChecksum does what the host does for a CHECKSUM_PARTIAL packet:
// it sums the TCP header, whose checksum field holds the pseudo-header's
// sum, and the payload, and stores the complement.
func completeChecksum(tcp header.TCP, payload []byte) {
	xsum := checksum.Checksum(tcp, 0)
	xsum = checksum.Checksum(payload, xsum)
	tcp.SetChecksum(^xsum)
}

// hostFrames returns the frames the host sends for a packet written with a
// virtio-net header, as Linux's GSO (inet_gso_segment, tcp_gso_segment)
// makes them: a packet of at most one MSS as is, its checksum completed;
// else one frame per MSS of payload, the IPv4 ID incremented per frame, the
// sequence number advanced, FIN and PSH on the last frame only, CWR on the
// first only, and the pseudo-header sum in the checksum field adjusted from
// the packet's TCP length to the frame's before completing it.
func hostFrames(s snap) [][]byte {
	mss := int(s.GSO.MSS)
	frame := func(payload []byte) []byte {
		var f []byte
		f = append(f, s.Link...)
		f = append(f, s.Network...)
		f = append(f, s.TCP...)
		return append(f, payload...)
	}
	tcpAt := len(s.Link) + len(s.Network)
	if mss == 0 || len(s.Payload) <= mss {
		f := frame(s.Payload)
		if s.GSO.NeedsCsum {
			completeChecksum(header.TCP(f[tcpAt:tcpAt+len(s.TCP)]), s.Payload)
		}
		return [][]byte{f}
	}
	src, dst := s.addrs()
	oldLen := uint16(len(s.TCP) + len(s.Payload))
	var frames [][]byte
	for j, lo := 0, 0; lo < len(s.Payload); j, lo = j+1, lo+mss {
		hi := min(lo+mss, len(s.Payload))
		f := frame(s.Payload[lo:hi])
		segLen := len(s.TCP) + hi - lo
		if nh := f[len(s.Link):tcpAt]; s.v6() {
			header.IPv6(nh).SetPayloadLength(uint16(len(nh) - header.IPv6MinimumSize + segLen))
		} else {
			ip := header.IPv4(nh)
			ip.SetTotalLength(uint16(len(nh) + segLen))
			ip.SetID(ip.ID() + uint16(j))
			ip.SetChecksum(0)
			ip.SetChecksum(^ip.CalculateChecksum())
		}
		tcp := header.TCP(f[tcpAt : tcpAt+len(s.TCP)])
		tcp.SetSequenceNumber(tcp.SequenceNumber() + uint32(lo))
		flags := tcp.Flags()
		if hi < len(s.Payload) {
			flags &^= header.TCPFlagFin | header.TCPFlagPsh
		}
		if j > 0 {
			flags &^= header.TCPFlagCwr
		}
		tcp.SetFlags(uint8(flags))
		if s.GSO.NeedsCsum {
			xsum := checksum.Combine(tcp.Checksum(), ^oldLen)
			tcp.SetChecksum(checksum.Combine(xsum, uint16(segLen)))
			completeChecksum(tcp, s.Payload[lo:hi])
		} else {
			tcp.SetChecksum(0)
			xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(segLen))
			xsum = checksum.Checksum(s.Payload[lo:hi], xsum)
			tcp.SetChecksum(^tcp.CalculateChecksum(xsum))
		}
		frames = append(frames, f)
	}
	return frames
}

// checkFrames checks that frames, as the host sends them for a packet like
// s, have valid IP and TCP checksums and lengths.
func checkFrames(t *testing.T, s snap, frames [][]byte) {
	t.Helper()
	for _, p := range frameProblems(s, frames) {
		t.Error(p)
	}
}

// frameProblems returns what is wrong with frames, as the host sends them
// for a packet like s: IP and TCP checksums and lengths.
func frameProblems(s snap, frames [][]byte) []string {
	var problems []string
	tcpAt := len(s.Link) + len(s.Network)
	src, dst := s.addrs()
	for i, f := range frames {
		nh := f[len(s.Link):tcpAt]
		if s.v6() {
			if got, want := int(header.IPv6(nh).PayloadLength()), len(f)-len(s.Link)-header.IPv6MinimumSize; got != want {
				problems = append(problems, fmt.Sprintf("host frame %d: IPv6 payload length %d, want %d", i, got, want))
			}
		} else {
			ip := header.IPv4(nh)
			if !ip.IsValid(len(f)-len(s.Link)) || int(ip.TotalLength()) != len(f)-len(s.Link) {
				problems = append(problems, fmt.Sprintf("host frame %d: IPv4 header not valid (total length %d, frame %d)", i, ip.TotalLength(), len(f)))
			}
			if !ip.IsChecksumValid() {
				problems = append(problems, fmt.Sprintf("host frame %d: IPv4 checksum %#04x not valid", i, ip.Checksum()))
			}
		}
		tcp := header.TCP(f[tcpAt : tcpAt+len(s.TCP)])
		payload := f[tcpAt+len(s.TCP):]
		if !tcp.IsChecksumValid(src, dst, checksum.Checksum(payload, 0), uint16(len(payload))) {
			problems = append(problems, fmt.Sprintf("host frame %d: TCP checksum %#04x not valid", i, tcp.Checksum()))
		}
	}
	return problems
}

// zero returns a copy of b with the bytes at the given [from, to) ranges
// zeroed.
func zero(b []byte, ranges ...[2]int) []byte {
	c := append([]byte(nil), b...)
	for _, r := range ranges {
		clear(c[r[0]:r[1]])
	}
	return c
}

// checkSplit checks pieces, what Split(pkt, maxWire) returned for a packet
// that was orig before. Unless trusted, the packet's checksums may be
// wrong: pieces, whose checksums Split computes, then need not make the
// same frames on the wire as the packet.
func checkSplit(t *testing.T, orig snap, pkt *stack.PacketBuffer, pieces []*stack.PacketBuffer, maxWire uint64, trusted bool) {
	t.Helper()
	if diff := diffSnap(orig, snapshot(pkt)); diff != "" {
		t.Errorf("Split changed the packet:\n%s", diff)
	}
	// The caller's reference, and one each piece holds until released.
	if got := pkt.ReadRefs(); got != int64(1+len(pieces)) {
		t.Errorf("the packet has %d references after Split, want 1 and one a piece (%d)", got, 1+len(pieces))
	}
	if len(pieces) > 0 {
		p := pieces[len(pieces)-1]
		p.IncRef()
		p.DecRef()
		if got := pkt.ReadRefs(); got != int64(1+len(pieces)) {
			t.Errorf("a piece's reference taken and given back released the packet's: %d references, want %d", got, 1+len(pieces))
		}
	}
	mss := int(orig.GSO.MSS)
	perPiece := max(1, (len(orig.Payload)+mss-1)/mss)
	if orig.Wire > maxWire {
		perPiece = int(maxWire / uint64(orig.hdrLen()+mss))
	}
	if want := max(1, (len(orig.Payload)+perPiece*mss-1)/(perPiece*mss)); len(pieces) != want {
		t.Errorf("%d pieces, want %d (%d segments each)", len(pieces), want, perPiece)
	}
	src, dst := orig.addrs()
	origTCP := header.TCP(orig.TCP)
	var (
		payload []byte
		wire    uint64
		frames  [][]byte
		segs    int
	)
	for i, p := range pieces {
		first, last := i == 0, i == len(pieces)-1
		s := snapshot(p)
		if got := p.ReadRefs(); got != 1 {
			t.Errorf("piece %d has %d references, want 1", i, got)
		}
		type meta struct {
			Net       tcpip.NetworkProtocolNumber
			Trans     tcpip.TransportProtocolNumber
			Hash      uint32
			Owner     tcpip.PacketOwner
			Mark      uint32
			Route     stack.RouteInfo
			GSO       stack.GSO
			PktType   tcpip.PacketType
			NIC       tcpip.NICID
			Forwarded bool
		}
		metaOf := func(p *stack.PacketBuffer) meta {
			return meta{p.NetworkProtocolNumber, p.TransportProtocolNumber, p.Hash, p.Owner, p.Mark, p.EgressRoute, p.GSOOptions, p.PktType, p.NICID, p.NetworkPacketInfo.IsForwardedPacket}
		}
		if m, pm := metaOf(pkt), metaOf(p); m != pm {
			t.Errorf("piece %d metadata (-packet +piece):\n%s", i, cmp.Diff(m, pm, cmp.Comparer(func(a, b tcpip.PacketOwner) bool { return a == b }), cmp.Comparer(func(a, b stack.RouteInfo) bool { return a == b })))
		}
		if diff := diffBytes(orig.Link, s.Link); diff != "" {
			t.Errorf("piece %d link header (-packet +piece):\n%s", i, diff)
		}
		n := len(s.Payload)
		payload = append(payload, s.Payload...)
		if !last && n != perPiece*mss {
			t.Errorf("piece %d of %d: %d payload bytes, want %d (%d segments)", i, len(pieces), n, perPiece*mss, perPiece)
		}
		w := gso.WireSize(p)
		if w > maxWire {
			t.Errorf("piece %d: WireSize %d > %d", i, w, maxWire)
		}
		wire += w

		// Network header: the lengths, the IPv4 ID and checksum differ.
		if len(s.Network) != len(orig.Network) {
			t.Fatalf("piece %d: %d-byte network header, want %d", i, len(s.Network), len(orig.Network))
		}
		if s.v6() {
			ip := header.IPv6(s.Network)
			if got, want := int(ip.PayloadLength()), len(s.Network)-header.IPv6MinimumSize+len(s.TCP)+n; got != want {
				t.Errorf("piece %d: IPv6 payload length %d, want %d", i, got, want)
			}
			if diff := diffBytes(zero(orig.Network, [2]int{4, 6}), zero(s.Network, [2]int{4, 6})); diff != "" {
				t.Errorf("piece %d: IPv6 header beyond the payload length (-packet +piece):\n%s", i, diff)
			}
		} else {
			ip := header.IPv4(s.Network)
			if !ip.IsValid(p.Size()-len(s.Link)) || int(ip.TotalLength()) != p.Size()-len(s.Link) {
				t.Errorf("piece %d: IPv4 header not valid: total length %d, %d bytes", i, ip.TotalLength(), p.Size()-len(s.Link))
			}
			if !ip.IsChecksumValid() {
				t.Errorf("piece %d: IPv4 checksum %#04x not valid", i, ip.Checksum())
			}
			if got, want := ip.ID(), header.IPv4(orig.Network).ID()+uint16(segs); got != want {
				t.Errorf("piece %d: IPv4 ID %d, want %d (%d segments before)", i, got, want, segs)
			}
			if diff := diffBytes(zero(orig.Network, [2]int{2, 6}, [2]int{10, 12}), zero(s.Network, [2]int{2, 6}, [2]int{10, 12})); diff != "" {
				t.Errorf("piece %d: IPv4 header beyond length, ID and checksum (-packet +piece):\n%s", i, diff)
			}
		}

		// TCP header: the sequence number, flags and checksum differ.
		tcp := header.TCP(s.TCP)
		if got, want := tcp.SequenceNumber(), origTCP.SequenceNumber()+uint32(len(payload)-n); got != want {
			t.Errorf("piece %d: sequence number %d, want %d", i, got, want)
		}
		wantFlags := origTCP.Flags()
		if !last {
			wantFlags &^= header.TCPFlagFin | header.TCPFlagPsh
		}
		if !first {
			wantFlags &^= header.TCPFlagCwr
		}
		if got := tcp.Flags(); got != wantFlags {
			t.Errorf("piece %d of %d: flags %s, want %s", i, len(pieces), got, wantFlags)
		}
		if diff := diffBytes(zero(orig.TCP, [2]int{4, 8}, [2]int{13, 14}, [2]int{16, 18}), zero(s.TCP, [2]int{4, 8}, [2]int{13, 14}, [2]int{16, 18})); diff != "" {
			t.Errorf("piece %d: TCP header beyond sequence number, flags and checksum (-packet +piece):\n%s", i, diff)
		}
		full := append(header.TCP(nil), tcp...)
		if s.GSO.NeedsCsum {
			if got, want := tcp.Checksum(), header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(s.TCP)+n)); got != want {
				t.Errorf("piece %d: partial checksum %#04x, want the pseudo-header's %#04x", i, got, want)
			}
			completeChecksum(full, s.Payload)
		}
		if !full.IsChecksumValid(src, dst, checksum.Checksum(s.Payload, 0), uint16(n)) {
			t.Errorf("piece %d: TCP checksum %#04x (completed) not valid", i, full.Checksum())
		}

		pf := hostFrames(s)
		checkFrames(t, s, pf)
		frames = append(frames, pf...)
		segs += gso.Segments(p)
	}
	if diff := diffBytes(orig.Payload, payload); diff != "" {
		t.Errorf("the pieces' payloads differ from the packet's: %s", diff)
	}
	if wire != orig.Wire {
		t.Errorf("the pieces' WireSizes add up to %d, the packet's is %d", wire, orig.Wire)
	}
	// The wire is the same whether the host cuts the packet or the pieces.
	want := hostFrames(orig)
	if trusted {
		checkFrames(t, orig, want)
	} else if len(frameProblems(orig, want)) != 0 {
		return
	}
	if diff := diffFrames(want, frames); diff != "" {
		t.Errorf("the host's frames for the pieces differ from those for the packet: %s", diff)
	}
}

func TestGSOSplit(t *testing.T) {
	const (
		v4Hdr = header.EthernetMinimumSize + header.IPv4MinimumSize + header.TCPMinimumSize
		v6Hdr = header.EthernetMinimumSize + header.IPv6MinimumSize + header.TCPMinimumSize
	)
	for _, tc := range []struct {
		name    string
		s       spec
		maxWire uint64
		pieces  int
	}{
		{name: "IPv4 exact multiple", s: spec{payload: 14600, mss: 1460}, maxWire: 3 * (v4Hdr + 1460), pieces: 4},
		{name: "IPv4 remainder", s: spec{payload: 14600 + 123, mss: 1460}, maxWire: 3*(v4Hdr+1460) + 100, pieces: 4},
		{name: "IPv4 64 KiB into 16 KiB, timestamps", s: spec{payload: 65000, mss: 1448, tcpOpts: 12, flags: header.TCPFlagPsh}, maxWire: 16384, pieces: 5},
		{name: "IPv4 FIN PSH CWR ECE URG", s: spec{payload: 20000, mss: 1448, tcpOpts: 12, flags: header.TCPFlagFin | header.TCPFlagPsh | header.TCPFlagCwr | header.TCPFlagEce | header.TCPFlagUrg}, maxWire: 8000, pieces: 3},
		{name: "IPv4 SACK options, no link header", s: spec{noLink: true, payload: 30000, mss: 1420, tcpOpts: 40, flags: header.TCPFlagCwr}, maxWire: 9000, pieces: 4},
		{name: "IPv4 32 bytes of options", s: spec{payload: 30000, mss: 1428, tcpOpts: 32}, maxWire: 12000, pieces: 4},
		{name: "IPv4 option", s: spec{ipExt: true, payload: 30000, mss: 1448, tcpOpts: 12}, maxWire: 16384, pieces: 3},
		{name: "IPv4 full checksum", s: spec{noCsum: true, payload: 30001, mss: 1448, flags: header.TCPFlagPsh}, maxWire: 4000, pieces: 11},
		{name: "IPv4 ID wraps", s: spec{id: 0xfffe, payload: 14600, mss: 1460}, maxWire: 2 * (v4Hdr + 1460), pieces: 5},
		{name: "IPv4 sequence number wraps", s: spec{seq: 0xffffff00, payload: 14600, mss: 1460}, maxWire: 2 * (v4Hdr + 1460), pieces: 5},
		{name: "IPv4 one segment a piece", s: spec{payload: 7300, mss: 1460, flags: header.TCPFlagFin | header.TCPFlagCwr}, maxWire: v4Hdr + 1460, pieces: 5},
		{name: "IPv4 many views", s: spec{payload: 50000, mss: 1448, views: 37}, maxWire: 16384, pieces: 4},
		{name: "IPv4 MSS 1", s: spec{noLink: true, payload: 100, mss: 1}, maxWire: 7 * 41, pieces: 15},
		{name: "IPv4 fits", s: spec{payload: 14600, mss: 1460, flags: header.TCPFlagFin | header.TCPFlagPsh}, maxWire: 14600 + 10*v4Hdr, pieces: 1},
		{name: "IPv4 below one MSS", s: spec{payload: 1000, mss: 1460}, maxWire: 1000 + v4Hdr, pieces: 1},
		{name: "IPv4 bare ACK", s: spec{payload: 0, mss: 1460}, maxWire: v4Hdr, pieces: 1},
		{name: "IPv4 largest", s: spec{payload: 0xffff - 40, mss: 536}, maxWire: 1 << 14, pieces: 5},
		{name: "IPv6 exact multiple", s: spec{v6: true, payload: 14400, mss: 1440}, maxWire: 3 * (v6Hdr + 1440), pieces: 4},
		{name: "IPv6 remainder", s: spec{v6: true, payload: 14401, mss: 1440}, maxWire: 3 * (v6Hdr + 1440), pieces: 4},
		{name: "IPv6 64 KiB into 16 KiB, timestamps", s: spec{v6: true, payload: 65000, mss: 1428, tcpOpts: 12, flags: header.TCPFlagPsh}, maxWire: 16384, pieces: 5},
		{name: "IPv6 FIN PSH CWR", s: spec{v6: true, payload: 20000, mss: 1428, tcpOpts: 12, flags: header.TCPFlagFin | header.TCPFlagPsh | header.TCPFlagCwr}, maxWire: 8000, pieces: 3},
		{name: "IPv6 two extension headers", s: spec{v6: true, ipExt: true, ipExt2: true, payload: 30000, mss: 1400}, maxWire: 9000, pieces: 4},
		{name: "IPv6 extension header, SACK options", s: spec{v6: true, ipExt: true, payload: 30000, mss: 1400, tcpOpts: 40}, maxWire: 9000, pieces: 5},
		{name: "IPv6 full checksum, no link header", s: spec{v6: true, noLink: true, noCsum: true, payload: 30001, mss: 1428}, maxWire: 5000, pieces: 8},
		{name: "IPv6 fits", s: spec{v6: true, payload: 2000, mss: 1440}, maxWire: 1 << 16, pieces: 1},
		{name: "IPv6 largest", s: spec{v6: true, payload: 0xffff - 20, mss: 1220}, maxWire: 1 << 14, pieces: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt := build(tc.s)
			orig := snapshot(pkt)
			pieces, err := gso.Split(pkt, tc.maxWire)
			if err != nil {
				t.Fatalf("Split(%d): %v", tc.maxWire, err)
			}
			if len(pieces) != tc.pieces {
				t.Errorf("%d pieces, want %d", len(pieces), tc.pieces)
			}
			checkSplit(t, orig, pkt, pieces, tc.maxWire, true)
			if orig.Wire <= tc.maxWire && len(pieces) == 1 {
				got := snapshot(pieces[0])
				if diff := diffSnap(orig, got); diff != "" {
					t.Errorf("a packet that fits is not copied as is:\n%s", diff)
				}
			}
			for _, p := range pieces {
				p.DecRef()
			}
			pkt.DecRef()
			checkNoLeaks(t)
		})
	}
}
