package gso_test

import (
	"flag"
	"os"
	"testing"

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
