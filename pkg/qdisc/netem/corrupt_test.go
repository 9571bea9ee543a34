package netem

import (
	"bytes"
	"fmt"
	"math/bits"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// csumKind is how a test packet's transport checksum is left.
type csumKind int

const (
	csumWhole   csumKind = iota // made
	csumPartial                 // the pseudo-header's, for the host (NeedsCsum)
	csumZero                    // 0: left to a link that makes it
)

// testPacket is a packet made for a corruption test, and what a receiver
// would check it against.
type testPacket struct {
	pkt *stack.PacketBuffer
	// l4 is where its transport header starts in its bytes.
	l4 int
	// whole is its bytes with its transport checksum made.
	whole []byte
	v6    bool
}

var (
	srcV4, dstV4 = tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
	srcV6, dstV6 = tcpip.AddrFrom16([16]byte{0xfd, 15: 1}), tcpip.AddrFrom16([16]byte{0xfd, 15: 2})
)

// makeTestPacket makes a packet as gVisor hands one to a qdisc on the send
// path (Ethernet, IP and TCP or UDP headers pushed; payload bytes made
// from seq), or, with rx, as a link delivers one (the link header
// consumed, the rest data, the link's checksum check said done).
func makeTestPacket(v6 bool, proto tcpip.TransportProtocolNumber, payload int, csum csumKind, seq byte, rx bool) testPacket {
	data := make([]byte, payload)
	for i := range data {
		data[i] = seq + byte(i*7)
	}
	l4Len := header.UDPMinimumSize
	if proto == header.TCPProtocolNumber {
		l4Len = header.TCPMinimumSize
	}
	ipLen := header.IPv4MinimumSize
	src, dst := srcV4, dstV4
	if v6 {
		ipLen, src, dst = header.IPv6MinimumSize, srcV6, dstV6
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: header.EthernetMinimumSize + ipLen + l4Len, Payload: buffer.MakeWithData(data)})
	l4 := pkt.TransportHeader().Push(l4Len)
	segLen := uint16(l4Len + payload)
	if proto == header.TCPProtocolNumber {
		header.TCP(l4).Encode(&header.TCPFields{SrcPort: 4000, DstPort: 5001, SeqNum: uint32(seq), AckNum: 1, DataOffset: uint8(l4Len), Flags: header.TCPFlagAck, WindowSize: 4096})
	} else {
		header.UDP(l4).Encode(&header.UDPFields{SrcPort: 4000, DstPort: 5001, Length: segLen})
	}
	pkt.TransportProtocolNumber = proto
	net := pkt.NetworkHeader().Push(ipLen)
	if v6 {
		header.IPv6(net).Encode(&header.IPv6Fields{PayloadLength: segLen, TransportProtocol: proto, HopLimit: 64, SrcAddr: src, DstAddr: dst})
		pkt.NetworkProtocolNumber = header.IPv6ProtocolNumber
	} else {
		ip := header.IPv4(net)
		ip.Encode(&header.IPv4Fields{TotalLength: uint16(ipLen) + segLen, ID: uint16(seq), TTL: 64, Protocol: uint8(proto), SrcAddr: src, DstAddr: dst})
		ip.SetChecksum(^ip.CalculateChecksum())
		pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	}
	eth := header.Ethernet(pkt.LinkHeader().Push(header.EthernetMinimumSize))
	eth.Encode(&header.EthernetFields{SrcAddr: "\x02\x00\x00\x00\x00\x01", DstAddr: "\x02\x00\x00\x00\x00\x02", Type: pkt.NetworkProtocolNumber})
	at := header.EthernetMinimumSize + ipLen
	pseudo := header.PseudoHeaderChecksum(proto, src, dst, segLen)
	csumAt := l4[6:8]
	if proto == header.TCPProtocolNumber {
		csumAt = l4[header.TCPChecksumOffset : header.TCPChecksumOffset+2]
	}
	whole := wholeChecksum(l4, data, pseudo)
	switch csum {
	case csumWhole:
		checksum.Put(csumAt, whole)
	case csumPartial:
		checksum.Put(csumAt, pseudo)
		pkt.GSOOptions = stack.GSO{Type: stack.GSOTCPv4, NeedsCsum: true, CsumOffset: header.TCPChecksumOffset, MSS: 1460, L3HdrLen: uint16(ipLen)}
	}
	tp := testPacket{pkt: pkt, l4: at, v6: v6}
	tp.whole = packetBytes(pkt)
	checksum.Put(tp.whole[at+csumOffset(proto):], whole)
	if rx {
		b := packetBytes(pkt)
		pkt.DecRef()
		tp.pkt = stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
		tp.pkt.LinkHeader().Consume(header.EthernetMinimumSize)
		tp.pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
		if v6 {
			tp.pkt.NetworkProtocolNumber = header.IPv6ProtocolNumber
		}
		tp.pkt.RXChecksumValidated = true
	}
	return tp
}

// csumOffset is where a transport header's checksum is.
func csumOffset(proto tcpip.TransportProtocolNumber) int {
	if proto == header.TCPProtocolNumber {
		return header.TCPChecksumOffset
	}
	return 6
}

// wholeChecksum is the transport checksum of l4 (its checksum field 0)
// and data after the pseudo-header's sum.
func wholeChecksum(l4, data []byte, pseudo uint16) uint16 {
	hdr := append([]byte(nil), l4...)
	return ^checksum.Checksum(data, checksum.Checksum(hdr, pseudo))
}

// receiverAccepts reports whether a receiver's checks pass on b, the
// bytes of an Ethernet frame tp made (perhaps changed): the IPv4 header's
// checksum, and the transport checksum over the pseudo-header.
func (tp testPacket) receiverAccepts(b []byte) bool {
	ipb := b[header.EthernetMinimumSize:]
	var src, dst tcpip.Address
	var proto tcpip.TransportProtocolNumber
	if tp.v6 {
		ip := header.IPv6(ipb)
		src, dst, proto = ip.SourceAddress(), ip.DestinationAddress(), tcpip.TransportProtocolNumber(ip.NextHeader())
	} else {
		ip := header.IPv4(ipb)
		if !ip.IsChecksumValid() {
			return false
		}
		src, dst, proto = ip.SourceAddress(), ip.DestinationAddress(), tcpip.TransportProtocolNumber(ip.Protocol())
	}
	seg := b[tp.l4:]
	return checksum.Checksum(seg, header.PseudoHeaderChecksum(proto, src, dst, uint16(len(seg)))) == 0xffff
}

// oneBitFlipped says what is wrong with got against want, if they do not
// differ in exactly one bit at or after from.
func oneBitFlipped(got, want []byte, from int) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d bytes, want %d", len(got), len(want))
	}
	flipped, at := 0, -1
	for i := range got {
		if d := bits.OnesCount8(got[i] ^ want[i]); d > 0 {
			flipped += d
			at = i
		}
	}
	if flipped != 1 || at < from {
		return fmt.Errorf("%d bits differ (the last at byte %d), want 1 at byte %d or after", flipped, at, from)
	}
	return nil
}

// TestCorrupt: with corrupt 100%, every packet that leaves is a copy of
// the one given with exactly one bit flipped in its transport part, after
// its transport checksum was made where the link was to make it (a
// partial checksum the host completes, a 0 left to a link that offloads
// checksums, one the receiving link vouched for): an IPv4 or IPv6, TCP or
// UDP packet fails the receiver's checksum check. The packet given, and
// a clone sharing its views, keep their bytes; the copy asks no link to
// make its checksum and no receiver to skip its check; every reference
// is released once (the rig checks).
func TestCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		v6    bool
		proto tcpip.TransportProtocolNumber
		csum  csumKind
		p     path
		rx    bool
	}{
		{"IPv4/TCP", false, header.TCPProtocolNumber, csumWhole, path{}, false},
		{"IPv4/UDP", false, header.UDPProtocolNumber, csumWhole, path{}, false},
		{"IPv6/TCP", true, header.TCPProtocolNumber, csumWhole, path{}, false},
		{"IPv6/UDP", true, header.UDPProtocolNumber, csumWhole, path{}, false},
		{"IPv4/TCP partial", false, header.TCPProtocolNumber, csumPartial, path{}, false},
		{"IPv4/UDP left to the link", false, header.UDPProtocolNumber, csumZero, path{txOffload: true}, false},
		{"IPv6/TCP left to the link", true, header.TCPProtocolNumber, csumZero, path{txOffload: true}, false},
		{"IPv4/TCP received", false, header.TCPProtocolNumber, csumWhole, path{rx: true, mtu: 1500}, true},
		{"IPv6/UDP received", true, header.UDPProtocolNumber, csumWhole, path{rx: true, mtu: 1500}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, "corrupt 100% seed 3")
			r.q.path = tc.p
			for seq := range byte(40) {
				tp := makeTestPacket(tc.v6, tc.proto, 10+int(seq)*13, tc.csum, seq, tc.rx)
				r.all = append(r.all, tp.pkt)
				before := packetBytes(tp.pkt)
				other := tp.pkt.Clone() // another holder of its views
				if !r.q.Enqueue(tp.pkt.IncRef(), uint32(tp.pkt.Size()), 0) {
					t.Fatalf("packet %d refused", seq)
				}
				out, _, ok := r.q.Dequeue(0)
				if !ok {
					t.Fatalf("packet %d did not leave", seq)
				}
				got := packetBytes(out)
				switch err := oneBitFlipped(got, tp.whole, tp.l4); {
				case out == tp.pkt:
					t.Errorf("packet %d: the packet given left, not a copy", seq)
				case err != nil:
					t.Errorf("packet %d (%d bytes): %v", seq, len(got), err)
				case tp.receiverAccepts(got):
					t.Errorf("packet %d: a receiver accepts the corrupted packet", seq)
				case !tp.receiverAccepts(tp.whole):
					t.Fatalf("packet %d: the test's own whole packet fails its check", seq)
				case out.GSOOptions.NeedsCsum || out.RXChecksumValidated:
					t.Errorf("packet %d: NeedsCsum %v RXChecksumValidated %v, want both false", seq, out.GSOOptions.NeedsCsum, out.RXChecksumValidated)
				}
				if !bytes.Equal(packetBytes(tp.pkt), before) || !bytes.Equal(packetBytes(other), before) {
					t.Errorf("packet %d: the packet given, or a clone of it, changed", seq)
				}
				out.DecRef()
				other.DecRef()
			}
		})
	}
}

// TestCorruptGSO: a host-GSO packet picked for corruption is cut into its
// segments first, as netem_segment cuts it, and the first corrupted; the
// others are queued after it as packets of their own (with corrupt 100%,
// each is corrupted in turn): each segment that leaves is the one
// gso.Split makes, with its checksum made and one bit of its transport
// part flipped, and the packet given keeps its bytes.
func TestCorruptGSO(t *testing.T) {
	const mss, payload = 500, 1400
	r := newRig(t, "corrupt 100% seed 5")
	pkt := qdisctest.GSOPacket(payload, mss, 1, 9, 1000)
	r.all = append(r.all, pkt)
	before := packetBytes(pkt)
	whole := qdisctest.GSOPacket(payload, mss, 1, 9, 1000)
	defer whole.DecRef()
	whole.GSOOptions.NeedsCsum = false // Split makes each piece's checksum
	want, err := gso.Split(whole, qdisctest.GSOHeaderLen+mss)
	if err != nil {
		t.Fatal(err)
	}
	if !r.q.Enqueue(pkt.IncRef(), uint32(gso.WireSize(pkt)), 0) {
		t.Fatal("refused")
	}
	tp := testPacket{l4: header.EthernetMinimumSize + header.IPv4MinimumSize}
	for i, w := range want {
		out, size, ok := r.q.Dequeue(0)
		if !ok {
			t.Fatalf("segment %d of %d did not leave", i+1, len(want))
		}
		got := packetBytes(out)
		if err := oneBitFlipped(got, packetBytes(w), tp.l4); err != nil {
			t.Errorf("segment %d: %v", i+1, err)
		}
		if tp.receiverAccepts(got) || out.GSOOptions.NeedsCsum || int(size) != w.Size() {
			t.Errorf("segment %d: accepted %v, NeedsCsum %v, charged %d of %d bytes", i+1, tp.receiverAccepts(got), out.GSOOptions.NeedsCsum, size, w.Size())
		}
		out.DecRef()
		w.DecRef()
	}
	if n, _ := r.q.Len(); n != 0 {
		t.Errorf("%d left after the %d segments", n, len(want))
	}
	if !bytes.Equal(packetBytes(pkt), before) {
		t.Error("the GSO packet given changed")
	}
}

// TestCorruptLimitAndDuplicate: past the limit a packet picked for
// corruption is refused and its copy released, the caller keeping its
// own; a duplicate is the packet as it came, corrupted (or not) on its
// own. The rig checks every reference is released once.
func TestCorruptLimitAndDuplicate(t *testing.T) {
	r := newRig(t, "limit 1 delay 1s corrupt 100%")
	if !r.send(200, 0) || r.send(200, 0) {
		t.Fatal("want the first taken and the second refused at limit 1")
	}
	d := newRig(t, "duplicate 100% corrupt 100% seed 2")
	d.send(300, 0)
	sent := d.all[0]
	var outs [][]byte
	for {
		out, _, ok := d.q.Dequeue(0)
		if !ok {
			break
		}
		outs = append(outs, packetBytes(out))
		out.DecRef()
	}
	if len(outs) != 2 {
		t.Fatalf("%d left, want the packet and its duplicate", len(outs))
	}
	for i, b := range outs {
		if err := oneBitFlipped(b, packetBytes(sent), 0); err != nil {
			t.Errorf("departure %d: %v", i, err)
		}
	}
}

// TestCorruptPath: netem knows its path: on the send path whether the
// lower link makes transport checksums, on the receive path the link's
// MTU (to cut GRO's aggregates).
func TestCorruptPath(t *testing.T) {
	clock := qdisctest.NewStepClock()
	link := &offloadLink{qdisctest.NewLink(clock)}
	d, err := New(link, clock, Config{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in, err := NewTo(link, link, clock, Config{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if want := (path{txOffload: true}); d.q.path != want {
		t.Errorf("send path %+v, want %+v", d.q.path, want)
	}
	if want := (path{rx: true, mtu: link.MTU()}); in.q.path != want {
		t.Errorf("receive path %+v, want %+v", in.q.path, want)
	}
}

// offloadLink is a link that makes transport checksums.
type offloadLink struct{ *qdisctest.Link }

func (*offloadLink) Capabilities() stack.LinkEndpointCapabilities {
	return stack.CapabilityTXChecksumOffload
}
