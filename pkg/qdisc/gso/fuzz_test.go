package gso_test

import (
	"bytes"
	"errors"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// Fix-ups fuzzPacket makes, so that mutated inputs still reach Split's
// cutting as well as its checks.
const (
	// fixIP sets the IP version, the IPv4 IHL and total length (and
	// clears the fragment fields) or the IPv6 payload length to agree with
	// the packet.
	fixIP = 1 << iota
	// fixTCP sets the TCP data offset to the header's length and clears
	// SYN.
	fixTCP
	// fixProto sets the IPv4 protocol or the IPv6 next header (of a
	// header without extension headers) to TCP.
	fixProto
)

// fuzzPacket returns a packet whose link, network and TCP headers are the
// first linkLen, netLen and tcpLen bytes of data (as far as there are
// bytes) and whose payload is the rest, pushed as gVisor pushes them, with
// the given protocol numbers, GSO options and fix-ups.
func fuzzPacket(data []byte, linkLen, netLen, tcpLen uint8, netProto uint16, transProto uint8, gsoType uint8, needsCsum bool, mss uint16, fix uint8) *stack.PacketBuffer {
	take := func(n uint8) []byte {
		l := min(int(n), len(data))
		b := data[:l]
		data = data[l:]
		return b
	}
	link, network, tcp := take(linkLen), take(netLen), take(tcpLen)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: len(link) + len(network) + len(tcp),
		Payload:            buffer.MakeWithData(data),
	})
	th := header.TCP(pkt.TransportHeader().Push(len(tcp)))
	copy(th, tcp)
	nh := pkt.NetworkHeader().Push(len(network))
	copy(nh, network)
	copy(pkt.LinkHeader().Push(len(link)), link)
	pkt.NetworkProtocolNumber = tcpip.NetworkProtocolNumber(netProto)
	pkt.TransportProtocolNumber = tcpip.TransportProtocolNumber(transProto)
	pkt.GSOOptions = stack.GSO{
		Type:       stack.GSOType(gsoType % 5),
		NeedsCsum:  needsCsum,
		CsumOffset: header.TCPChecksumOffset,
		MSS:        mss,
		L3HdrLen:   uint16(len(network)),
		MaxSize:    1 << 16,
	}
	l4 := len(tcp) + len(data)
	switch pkt.NetworkProtocolNumber {
	case header.IPv4ProtocolNumber:
		if len(nh) >= header.IPv4MinimumSize {
			ip := header.IPv4(nh)
			if fix&fixIP != 0 {
				nh[0] = header.IPv4Version<<4 | byte(len(nh)/4)&0xf
				ip.SetTotalLength(uint16(len(nh) + l4))
				ip.SetFlagsFragmentOffset(ip.Flags()&^header.IPv4FlagMoreFragments, 0)
			}
			if fix&fixProto != 0 {
				nh[9] = uint8(header.TCPProtocolNumber)
			}
		}
	case header.IPv6ProtocolNumber:
		if len(nh) >= header.IPv6MinimumSize {
			ip := header.IPv6(nh)
			if fix&fixIP != 0 {
				nh[0] = header.IPv6Version<<4 | nh[0]&0xf
				ip.SetPayloadLength(uint16(len(nh) - header.IPv6MinimumSize + l4))
			}
			if fix&fixProto != 0 && len(nh) == header.IPv6MinimumSize {
				ip.SetNextHeader(uint8(header.TCPProtocolNumber))
			}
		}
	}
	if fix&fixTCP != 0 && len(th) >= header.TCPMinimumSize {
		th[header.TCPDataOffset] = byte(len(th)/4)<<4 | th[header.TCPDataOffset]&0xf
		th.SetFlags(uint8(th.Flags() &^ header.TCPFlagSyn))
	}
	return pkt
}

// fuzzSeed is one FuzzGSOSplit input.
type fuzzSeed struct {
	data                    []byte
	linkLen, netLen, tcpLen uint8
	netProto                uint16
	transProto, gsoType     uint8
	needsCsum               bool
	mss                     uint16
	maxWire                 uint64
	fix                     uint8
}

// seedOf returns the input that makes a packet like build(s).
func seedOf(s spec, maxWire uint64, fix uint8) fuzzSeed {
	pkt := build(s)
	defer pkt.DecRef()
	sn := snapshot(pkt)
	var data []byte
	for _, b := range [][]byte{sn.Link, sn.Network, sn.TCP, sn.Payload} {
		data = append(data, b...)
	}
	return fuzzSeed{
		data:       data,
		linkLen:    uint8(len(sn.Link)),
		netLen:     uint8(len(sn.Network)),
		tcpLen:     uint8(len(sn.TCP)),
		netProto:   uint16(pkt.NetworkProtocolNumber),
		transProto: uint8(pkt.TransportProtocolNumber),
		gsoType:    uint8(pkt.GSOOptions.Type),
		needsCsum:  pkt.GSOOptions.NeedsCsum,
		mss:        pkt.GSOOptions.MSS,
		maxWire:    maxWire,
		fix:        fix,
	}
}

// fuzzSeeds are the seeds FuzzGSOSplit adds besides testdata's.
func fuzzSeeds() []fuzzSeed {
	return []fuzzSeed{
		seedOf(spec{payload: 3000, mss: 500, tcpOpts: 12, flags: header.TCPFlagPsh | header.TCPFlagFin}, 1200, 0),
		seedOf(spec{v6: true, ipExt: true, payload: 2000, mss: 300, flags: header.TCPFlagCwr}, 1000, fixIP|fixTCP),
		seedOf(spec{noLink: true, ipExt: true, noCsum: true, payload: 1000, mss: 100}, 450, fixIP|fixTCP|fixProto),
	}
}

// FuzzGSOSplit splits packets made of arbitrary bytes (headers and
// payload) with arbitrary protocol numbers, GSO options and maxWire, and
// checks that Split never panics and either fails, leaving nothing behind,
// or returns pieces that pass checkSplit: payloads that concatenate to the
// packet's, each piece's WireSize within maxWire and their sum the
// packet's, valid headers and checksums, and the same frames on the wire
// after the host's segmentation as for the packet. Every reference is
// released at the end.
func FuzzGSOSplit(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.data, s.linkLen, s.netLen, s.tcpLen, s.netProto, s.transProto, s.gsoType, s.needsCsum, s.mss, s.maxWire, s.fix)
	}
	f.Fuzz(func(t *testing.T, data []byte, linkLen, netLen, tcpLen uint8, netProto uint16, transProto, gsoType uint8, needsCsum bool, mss uint16, maxWire uint64, fix uint8) {
		pkt := fuzzPacket(data, linkLen, netLen, tcpLen, netProto, transProto, gsoType, needsCsum, mss, fix)
		orig := snapshot(pkt)
		pieces, err := gso.Split(pkt, maxWire)
		if err != nil {
			if pieces != nil {
				t.Errorf("Split returned %d pieces with error %v", len(pieces), err)
			}
			if !errors.Is(err, gso.ErrNotHostGSO) && !errors.Is(err, gso.ErrMalformed) && !errors.Is(err, gso.ErrTooSmall) {
				t.Errorf("Split's error %v wraps none of ErrNotHostGSO, ErrMalformed, ErrTooSmall", err)
			}
			if diff := diffSnap(orig, snapshot(pkt)); diff != "" {
				t.Errorf("Split changed the packet:\n%s", diff)
			}
			if got := pkt.ReadRefs(); got != 1 {
				t.Errorf("the packet has %d references after Split, want 1", got)
			}
		} else {
			checkSplit(t, orig, pkt, pieces, maxWire, false)
		}
		for _, p := range pieces {
			p.DecRef()
		}
		pkt.DecRef()
		checkNoLeaks(t)
	})
}

// TestGSOFuzzSeedsSplit checks that the seeds reach Split's cutting, not
// just its checks.
func TestGSOFuzzSeedsSplit(t *testing.T) {
	for i, s := range fuzzSeeds() {
		pkt := fuzzPacket(s.data, s.linkLen, s.netLen, s.tcpLen, s.netProto, s.transProto, s.gsoType, s.needsCsum, s.mss, s.fix)
		pieces, err := gso.Split(pkt, s.maxWire)
		if err != nil || len(pieces) < 2 {
			t.Errorf("seed %d: Split = %d pieces, %v; want at least 2", i, len(pieces), err)
		}
		for _, p := range pieces {
			p.DecRef()
		}
		pkt.DecRef()
	}
	checkNoLeaks(t)
}

// Fix-ups receivedFuzzPacket makes, so that mutated inputs still reach
// ReceivedWireSize's counting as well as its checks.
const (
	// rxFixIP sets the IP version, an IPv4 IHL of at least 5, the IPv4
	// total length (and clears the fragment fields) or the IPv6 payload
	// length to agree with the packet.
	rxFixIP = 1 << iota
	// rxFixProto sets the IPv4 protocol or the IPv6 next header to TCP.
	rxFixProto
	// rxFixTCP sets a TCP data offset below 5 words, or past the packet,
	// to 5.
	rxFixTCP
)

// receivedFuzzInput returns the link header and IP packet of a
// FuzzGSOReceivedWireSize input: the first linkLen bytes of data (as far as
// there are bytes) and the rest, with the fix-ups made for proto.
func receivedFuzzInput(data []byte, linkLen uint8, proto uint16, fix uint8) (link, network []byte) {
	l := min(int(linkLen), len(data))
	link, network = data[:l], append([]byte(nil), data[l:]...)
	n := len(network)
	ipLen := 0
	switch tcpip.NetworkProtocolNumber(proto) {
	case header.IPv4ProtocolNumber:
		if n < header.IPv4MinimumSize {
			return link, network
		}
		if fix&rxFixIP != 0 {
			network[0] = header.IPv4Version<<4 | max(network[0]&0xf, 5)
			ip := header.IPv4(network)
			ip.SetTotalLength(uint16(n))
			ip.SetFlagsFragmentOffset(ip.Flags()&^header.IPv4FlagMoreFragments, 0)
		}
		if fix&rxFixProto != 0 {
			network[9] = uint8(header.TCPProtocolNumber)
		}
		ipLen = int(network[0]&0xf) * 4
	case header.IPv6ProtocolNumber:
		if n < header.IPv6MinimumSize {
			return link, network
		}
		if fix&rxFixIP != 0 {
			network[0] = header.IPv6Version<<4 | network[0]&0xf
			header.IPv6(network).SetPayloadLength(uint16(n - header.IPv6MinimumSize))
		}
		if fix&rxFixProto != 0 {
			header.IPv6(network).SetNextHeader(uint8(header.TCPProtocolNumber))
		}
		ipLen = header.IPv6MinimumSize
	}
	if fix&rxFixTCP != 0 && ipLen >= header.IPv4MinimumSize && n >= ipLen+header.TCPMinimumSize {
		if off := int(network[ipLen+12]>>4) * 4; off < header.TCPMinimumSize || ipLen+off > n {
			network[ipLen+12] = 5<<4 | network[ipLen+12]&0xf
		}
	}
	return link, network
}

// receivedFuzzSeed is one FuzzGSOReceivedWireSize input.
type receivedFuzzSeed struct {
	data       []byte
	linkLen    uint8
	proto, mtu uint16
	cut1, cut2 uint16
	fix        uint8
	// segments says the input is charged as more than one segment.
	segments bool
}

// receivedSeedOf returns the input that makes the packet a receiver's GRO
// makes of what the host sends for a packet of spec s, cut into views at
// cut1 and cut2.
func receivedSeedOf(s spec, mtu uint16, cut1, cut2 uint16, fix uint8, segments bool) receivedFuzzSeed {
	link, network, proto := rxBytes(s)
	return receivedFuzzSeed{append(append([]byte(nil), link...), network...), uint8(len(link)), uint16(proto), mtu, cut1, cut2, fix, segments}
}

// receivedFuzzSeeds are the seeds FuzzGSOReceivedWireSize adds besides
// testdata's.
func receivedFuzzSeeds() []receivedFuzzSeed {
	return []receivedFuzzSeed{
		receivedSeedOf(spec{tcpOpts: 12, payload: 3*448 + 7, mss: 448}, 500, 20, 40, 0, true),
		receivedSeedOf(spec{v6: true, tcpOpts: 40, payload: 1500, mss: 400}, 500, 0, 60, 0, true),
		receivedSeedOf(spec{noLink: true, ipExt: true, payload: 1000, mss: 100}, 200, 3, 500, rxFixIP|rxFixProto|rxFixTCP, true),
		receivedSeedOf(spec{v6: true, ipExt: true, payload: 1000, mss: 420}, 500, 0, 0, 0, false),
		receivedSeedOf(spec{tcpOpts: 12, payload: 400, mss: 1448}, 1500, 0, 0, 0, false),
	}
}

// FuzzGSOReceivedWireSize charges packets made of arbitrary bytes (a link
// header and an IP packet, cut into up to three views), delivered as
// arbitrary protocols, at arbitrary MTUs, and checks that ReceivedWireSize
// never panics, agrees with rxWant (the same rules read by byte offsets
// from the flat bytes), charges at least the packet's size and only that
// for a packet within the MTU, and leaves the packet as it was, its views
// too; and that SplitReceived, asked to cut it below what it stands for,
// never panics and either refuses or cuts it into pieces that each fit
// and together stand for what it did. Every reference is released at the
// end.
func FuzzGSOReceivedWireSize(f *testing.F) {
	for _, s := range receivedFuzzSeeds() {
		f.Add(s.data, s.linkLen, s.proto, s.mtu, s.cut1, s.cut2, s.fix)
	}
	f.Fuzz(func(t *testing.T, data []byte, linkLen uint8, proto, mtu, cut1, cut2 uint16, fix uint8) {
		link, network := receivedFuzzInput(data, linkLen, proto, fix)
		pkt := rxPacket(link, network, tcpip.NetworkProtocolNumber(proto), int(min(cut1, cut2)), int(max(cut1, cut2)))
		defer checkNoLeaks(t)
		defer pkt.DecRef()
		views := func() (n int) {
			l, _ := pkt.AsViewList()
			for v := l.Front(); v != nil; v = v.Next() {
				n++
			}
			return n
		}
		before := views()
		got, size := gso.ReceivedWireSize(pkt, uint32(mtu)), uint64(len(link)+len(network))
		if want := rxWant(link, network, tcpip.NetworkProtocolNumber(proto), uint32(mtu)); got != want {
			t.Errorf("ReceivedWireSize = %d, the same rules by byte offsets %d", got, want)
		}
		if got < size || (len(network) <= int(mtu) && got != size) {
			t.Errorf("ReceivedWireSize = %d for %d bytes (%d of IP) at MTU %d", got, size, len(network), mtu)
		}
		// Cut to stand for less than it does (as a bucket of its size
		// would cut it), the pieces stand for what it did, each for no
		// more than the bound, or it is refused.
		pkt.RXChecksumValidated = true // arbitrary bytes have no good checksums
		bound := max(size, got-1)
		pieces, err := gso.SplitReceived(pkt, uint32(mtu), bound)
		if err == nil && got > bound && len(pieces) < 2 {
			t.Errorf("SplitReceived cut a packet standing for %d bytes, above %d, into %d pieces", got, bound, len(pieces))
		}
		var sum uint64
		for _, p := range pieces {
			w := gso.ReceivedWireSize(p, uint32(mtu))
			if w > bound {
				t.Errorf("a piece of %d bytes stands for %d, above %d", p.Size(), w, bound)
			}
			sum += w
			p.DecRef()
		}
		if len(pieces) > 0 && sum != got {
			t.Errorf("the pieces stand for %d bytes, the packet for %d", sum, got)
		}
		if after := views(); after != before {
			t.Errorf("%d views became %d", before, after)
		}
		if !bytes.Equal(pkt.Data().AsRange().ToSlice(), network) || !bytes.Equal(pkt.LinkHeader().Slice(), link) {
			t.Errorf("the packet changed")
		}
	})
}

// TestGSOFuzzSeedsReceived checks that the seeds that should reach
// ReceivedWireSize's counting do, and the others are charged their size.
func TestGSOFuzzSeedsReceived(t *testing.T) {
	for i, s := range receivedFuzzSeeds() {
		link, network := receivedFuzzInput(s.data, s.linkLen, s.proto, s.fix)
		pkt := rxPacket(link, network, tcpip.NetworkProtocolNumber(s.proto), int(s.cut1), int(s.cut2))
		if got, size := gso.ReceivedWireSize(pkt, uint32(s.mtu)), uint64(pkt.Size()); (got > size) != s.segments {
			t.Errorf("seed %d: ReceivedWireSize = %d for %d bytes; want it charged as segments: %t", i, got, size, s.segments)
		}
		pkt.DecRef()
	}
	checkNoLeaks(t)
}
