package gso_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/refs"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// TestMain turns on gVisor's reference leak checker, which tests run with
// checkNoLeaks, except for benchmarks, which it would slow down.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		refs.SetLeakMode(refs.LeaksPanic)
	}
	os.Exit(m.Run())
}

// checkNoLeaks fails t if a packet buffer or buffer chunk created since
// TestMain is still referenced.
func checkNoLeaks(t testing.TB) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("references leaked: %v", r)
		}
	}()
	refs.DoRepeatedLeakCheck()
}

var (
	srcMAC = tcpip.LinkAddress("\x02\x00\x00\x00\x00\x01")
	dstMAC = tcpip.LinkAddress("\x02\x00\x00\x00\x00\x02")
	src4   = tcpip.AddrFrom4([4]byte{10, 0, 0, 1})
	dst4   = tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
	src6   = tcpip.AddrFrom16([16]byte{0xfd, 15: 1})
	dst6   = tcpip.AddrFrom16([16]byte{0xfd, 15: 2})
)

// owner is a tcpip.PacketOwner.
type owner struct{ uid, gid uint32 }

func (o *owner) KUID() uint32 { return o.uid }
func (o *owner) KGID() uint32 { return o.gid }

var theOwner = &owner{uid: 1000, gid: 1001}

// spec describes a host-GSO TCP packet as gVisor's TCP and IP build it.
type spec struct {
	v6 bool
	// noLink leaves out the Ethernet header.
	noLink bool
	// ipExt adds what gVisor adds for an experiment option value: an IPv4
	// option or an IPv6 extension header.
	ipExt bool
	// ipExt2 adds a second IPv6 extension header.
	ipExt2 bool
	// tcpOpts is 0, 12 (timestamps), 32 or 40 (timestamps and SACK
	// blocks) bytes of TCP options.
	tcpOpts int
	// flags are TCP flags besides ACK.
	flags   header.TCPFlags
	seq     uint32
	id      uint16
	mss     uint16
	payload int
	// views is the number of views the payload is in (1 if 0).
	views int
	// noCsum builds the packet without NeedsCsum: full TCP checksum.
	noCsum bool
}

// payloadBytes returns n bytes that differ from one MSS to the next.
func payloadBytes(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// tcpOptions returns n bytes of TCP options.
func tcpOptions(n int) []byte {
	b := make([]byte, n)
	off := 0
	if n >= 12 {
		off += header.EncodeNOP(b[off:])
		off += header.EncodeNOP(b[off:])
		off += header.EncodeTSOption(0x01020304, 0x05060708, b[off:])
	}
	if n > 12 {
		off += header.EncodeNOP(b[off:])
		off += header.EncodeNOP(b[off:])
		blocks := make([]header.SACKBlock, (n-off-2)/8)
		for i := range blocks {
			blocks[i] = header.SACKBlock{Start: 1000 * 9, End: 1000*9 + 500}
		}
		off += header.EncodeSACKBlocks(blocks, b[off:])
	}
	for ; off < n; off++ {
		b[off] = header.TCPOptionNOP
	}
	return b
}

func addrs(v6 bool) (src, dst tcpip.Address) {
	if v6 {
		return src6, dst6
	}
	return src4, dst4
}

// build returns a packet as gVisor's TCP (buildTCPHdr), IP (addIPHeader)
// and Ethernet push it for a host-GSO link (initHostGSO's GSO options).
func build(s spec) *stack.PacketBuffer {
	data := payloadBytes(s.payload)
	var buf buffer.Buffer
	views := max(s.views, 1)
	for i := 0; i < views; i++ {
		lo, hi := i*len(data)/views, (i+1)*len(data)/views
		if hi > lo {
			buf.Append(buffer.NewViewWithData(data[lo:hi]))
		}
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: header.EthernetMinimumSize + header.IPv4MaximumHeaderSize + header.TCPHeaderMaximumSize + 16,
		Payload:            buf,
		Mark:               7,
	})
	src, dst := addrs(s.v6)

	opts := tcpOptions(s.tcpOpts)
	tcp := header.TCP(pkt.TransportHeader().Push(header.TCPMinimumSize + len(opts)))
	pkt.TransportProtocolNumber = header.TCPProtocolNumber
	tcp.Encode(&header.TCPFields{
		SrcPort:    40000,
		DstPort:    80,
		SeqNum:     s.seq,
		AckNum:     0xabcdef01,
		DataOffset: uint8(header.TCPMinimumSize + len(opts)),
		Flags:      header.TCPFlagAck | s.flags,
		WindowSize: 512,
	})
	copy(tcp[header.TCPMinimumSize:], opts)
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(pkt.Size()))
	if !s.noCsum {
		tcp.SetChecksum(xsum)
	} else {
		xsum = checksum.Combine(xsum, pkt.Data().Checksum())
		tcp.SetChecksum(^tcp.CalculateChecksum(xsum))
	}

	var proto tcpip.NetworkProtocolNumber
	if s.v6 {
		proto = header.IPv6ProtocolNumber
		var ext header.IPv6ExtHdrSerializer
		if s.ipExt {
			ext = header.IPv6ExtHdrSerializer{&header.IPv6ExperimentExtHdr{Value: 0x1234}}
		}
		if s.ipExt2 {
			ext = append(ext, &header.IPv6ExperimentExtHdr{Value: 0x5678})
		}
		length := pkt.Size() + ext.Length()
		header.IPv6(pkt.NetworkHeader().Push(header.IPv6MinimumSize + ext.Length())).Encode(&header.IPv6Fields{
			PayloadLength:     uint16(length),
			TransportProtocol: header.TCPProtocolNumber,
			HopLimit:          64,
			TrafficClass:      0x10,
			SrcAddr:           src,
			DstAddr:           dst,
			ExtensionHeaders:  ext,
		})
	} else {
		proto = header.IPv4ProtocolNumber
		var ipOpts header.IPv4OptionsSerializer
		if s.ipExt {
			ipOpts = header.IPv4OptionsSerializer{&header.IPv4SerializableExperimentOption{Tag: 0x1234}}
		}
		ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize + int(ipOpts.Length())))
		ip.Encode(&header.IPv4Fields{
			TotalLength: uint16(pkt.Size()),
			ID:          s.id,
			Flags:       header.IPv4FlagDontFragment,
			TTL:         64,
			TOS:         0x10,
			Protocol:    uint8(header.TCPProtocolNumber),
			SrcAddr:     src,
			DstAddr:     dst,
			Options:     ipOpts,
		})
		ip.SetChecksum(^ip.CalculateChecksum())
	}
	pkt.NetworkProtocolNumber = proto

	if !s.noLink {
		header.Ethernet(pkt.LinkHeader().Push(header.EthernetMinimumSize)).Encode(&header.EthernetFields{
			SrcAddr: srcMAC,
			DstAddr: dstMAC,
			Type:    proto,
		})
	}

	pkt.GSOOptions = stack.GSO{
		Type:       stack.GSOTCPv4,
		NeedsCsum:  !s.noCsum,
		CsumOffset: header.TCPChecksumOffset,
		MSS:        s.mss,
		L3HdrLen:   header.IPv4MinimumSize,
		MaxSize:    1 << 16,
	}
	if s.v6 {
		pkt.GSOOptions.Type = stack.GSOTCPv6
		pkt.GSOOptions.L3HdrLen = header.IPv6MinimumSize
	}
	pkt.Hash = 0xfeedface
	pkt.Owner = theOwner
	pkt.EgressRoute.RemoteLinkAddress = dstMAC
	pkt.EgressRoute.LocalLinkAddress = srcMAC
	pkt.EgressRoute.LocalAddress = src
	pkt.EgressRoute.RemoteAddress = dst
	pkt.EgressRoute.NetProto = proto
	pkt.PktType = tcpip.PacketOutgoing
	pkt.NICID = 3
	return pkt
}

// hdrLen returns the header bytes of a packet of spec s.
func (s spec) hdrLen() int {
	n := header.TCPMinimumSize + s.tcpOpts
	if !s.noLink {
		n += header.EthernetMinimumSize
	}
	if s.v6 {
		n += header.IPv6MinimumSize
		if s.ipExt {
			n += header.IPv6ExperimentHdrLength
		}
		if s.ipExt2 {
			n += header.IPv6ExperimentHdrLength
		}
	} else {
		n += header.IPv4MinimumSize
		if s.ipExt {
			n += 4
		}
	}
	return n
}

func TestGSOBuild(t *testing.T) {
	for _, s := range []spec{
		{payload: 3000, mss: 1000},
		{v6: true, ipExt: true, tcpOpts: 40, payload: 3000, mss: 1000},
		{ipExt: true, noLink: true, tcpOpts: 12, payload: 3000, mss: 1000},
	} {
		pkt := build(s)
		if got, want := pkt.Size()-pkt.Data().Size(), s.hdrLen(); got != want {
			t.Errorf("%+v: %d header bytes, want %d", s, got, want)
		}
		pkt.DecRef()
	}
	checkNoLeaks(t)
}

func TestGSOWireSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    spec
		// edit changes the packet after build.
		edit func(*stack.PacketBuffer)
		segs int
	}{
		{name: "payload below MSS", s: spec{payload: 1000, mss: 1460}, segs: 1},
		{name: "payload of one MSS", s: spec{payload: 1460, mss: 1460}, segs: 1},
		{name: "one byte above MSS", s: spec{payload: 1461, mss: 1460}, segs: 2},
		{name: "ten MSS", s: spec{payload: 14600, mss: 1460}, segs: 10},
		{name: "ten MSS and a byte", s: spec{payload: 14601, mss: 1460}, segs: 11},
		{name: "64 KiB IPv6 options", s: spec{v6: true, ipExt: true, tcpOpts: 12, payload: 65000, mss: 1428}, segs: 46},
		{name: "bare ACK", s: spec{payload: 0, mss: 1460}, segs: 1},
		{name: "MSS 0", s: spec{payload: 14600}, segs: 1},
		{name: "MSS 1", s: spec{payload: 300, mss: 1, noLink: true}, segs: 300},
		{name: "GSONone", s: spec{payload: 14600, mss: 1460}, edit: func(p *stack.PacketBuffer) { p.GSOOptions.Type = stack.GSONone }, segs: 1},
		{name: "GSOGvisor", s: spec{payload: 14600, mss: 1460}, edit: func(p *stack.PacketBuffer) { p.GSOOptions.Type = stack.GSOGvisor }, segs: 1},
		{name: "unknown GSO type", s: spec{payload: 14600, mss: 1460}, edit: func(p *stack.PacketBuffer) { p.GSOOptions.Type = 99 }, segs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt := build(tc.s)
			defer pkt.DecRef()
			if tc.edit != nil {
				tc.edit(pkt)
			}
			if got := gso.Segments(pkt); got != tc.segs {
				t.Errorf("Segments = %d, want %d", got, tc.segs)
			}
			want := uint64(tc.s.payload + tc.segs*tc.s.hdrLen())
			if got := gso.WireSize(pkt); got != want {
				t.Errorf("WireSize = %d, want %d", got, want)
			}
			if tc.segs > 1 {
				// The host's frames add up to WireSize.
				var n uint64
				for _, f := range hostFrames(snapshot(pkt)) {
					n += uint64(len(f))
				}
				if n != want {
					t.Errorf("the host's %d segments hold %d bytes, WireSize %d", tc.segs, n, want)
				}
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		if got := gso.WireSize(nil); got != 0 {
			t.Errorf("WireSize(nil) = %d", got)
		}
		if got := gso.Segments(nil); got != 0 {
			t.Errorf("Segments(nil) = %d", got)
		}
	})
	t.Run("no headers", func(t *testing.T) {
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(make([]byte, 5000))})
		defer pkt.DecRef()
		pkt.GSOOptions = stack.GSO{Type: stack.GSOTCPv4, MSS: 1000}
		if got := gso.WireSize(pkt); got != 5000 {
			t.Errorf("WireSize = %d, want 5000 (5 segments of no headers)", got)
		}
	})
	checkNoLeaks(t)
}

// sink keeps the compiler from dropping what the allocation test measures.
var sink uint64

func TestGSOWireSizeAllocs(t *testing.T) {
	pkts := []*stack.PacketBuffer{
		build(spec{payload: 65000, mss: 1448, tcpOpts: 12}),
		build(spec{v6: true, payload: 500, mss: 1448}),
		build(spec{payload: 14600}),
	}
	none := stack.NewPacketBuffer(stack.PacketBufferOptions{})
	pkts = append(pkts, none)
	if got := testing.AllocsPerRun(1000, func() {
		for _, p := range pkts {
			sink += gso.WireSize(p) + uint64(gso.Segments(p))
		}
		sink += gso.WireSize(nil)
	}); got != 0 {
		t.Errorf("WireSize and Segments allocate %v times a run", got)
	}
	for _, p := range pkts {
		p.DecRef()
	}
	checkNoLeaks(t)
}

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
	if got := pkt.ReadRefs(); got != 1 {
		t.Errorf("the packet has %d references after Split, want 1", got)
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
