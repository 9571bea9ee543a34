package fqcodel_test

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// withNetworkHeader returns a packet whose network header, as pushed on the
// send path, is exactly nh, followed by 8 bytes of payload.
func withNetworkHeader(proto tcpip.NetworkProtocolNumber, nh []byte) *stack.PacketBuffer {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: len(nh), Payload: buffer.MakeWithData(make([]byte, 8))})
	copy(pkt.NetworkHeader().Push(len(nh)), nh)
	pkt.NetworkProtocolNumber = proto
	return pkt
}

// v4Header is a valid 20-byte IPv4 header with the given TOS, and its
// checksum.
func v4Header(tos uint8) []byte {
	b := make([]byte, header.IPv4MinimumSize)
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{TOS: tos, TotalLength: 28, TTL: 64, Protocol: 17,
		SrcAddr: tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), DstAddr: tcpip.AddrFrom4([4]byte{10, 0, 0, 2})})
	ip.SetChecksum(^ip.CalculateChecksum())
	return b
}

// v6Header is a valid IPv6 header with the given traffic class and flow
// label.
func v6Header(tc uint8, label uint32) []byte {
	b := make([]byte, header.IPv6MinimumSize)
	header.IPv6(b).Encode(&header.IPv6Fields{TrafficClass: tc, FlowLabel: label, PayloadLength: 8, TransportProtocol: 17, HopLimit: 64,
		SrcAddr: tcpip.AddrFrom16([16]byte{0xfd, 15: 1}), DstAddr: tcpip.AddrFrom16([16]byte{0xfd, 15: 2})})
	return b
}

// with returns b with byte i set to v.
func with(b []byte, i int, v byte) []byte {
	b = bytes.Clone(b)
	b[i] = v
	return b
}

// TestMarkCEHeaders: CE marking reads and writes only a header that is
// there and well formed. A well-formed ECN-capable header is marked in its
// ECN bits alone (IPv4's checksum kept valid, IPv6's version and flow label
// kept); anything else is left untouched and reported not ECN-capable, so
// CoDel drops it instead.
func TestMarkCEHeaders(t *testing.T) {
	ce4 := v4Header(0x3)
	badSum := with(v4Header(0x2), 10, v4Header(0x2)[10]^0x55)
	for _, tc := range []struct {
		name   string
		proto  tcpip.NetworkProtocolNumber
		nh     []byte
		marked bool
		want   []byte // the header after; nil: unchanged
	}{
		{"IPv4 ECT(0)", header.IPv4ProtocolNumber, v4Header(0x2), true, ce4},
		{"IPv4 ECT(1)", header.IPv4ProtocolNumber, v4Header(0x1), true, ce4},
		{"IPv4 CE already", header.IPv4ProtocolNumber, ce4, true, nil},
		{"IPv4 Not-ECT", header.IPv4ProtocolNumber, v4Header(0x0), false, nil},
		{"IPv4 IHL 15 with a 20-byte header", header.IPv4ProtocolNumber, with(v4Header(0x2), 0, 0x4f), false, nil},
		{"IPv4 IHL 4", header.IPv4ProtocolNumber, with(v4Header(0x2), 0, 0x44), false, nil},
		{"IPv4 version 6", header.IPv4ProtocolNumber, with(v4Header(0x2), 0, 0x65), false, nil},
		{"IPv4 short", header.IPv4ProtocolNumber, v4Header(0x2)[:19], false, nil},
		{"IPv4 bad checksum stays bad", header.IPv4ProtocolNumber, badSum, true, nil},
		{"IPv6 ECT(0)", header.IPv6ProtocolNumber, v6Header(0xa2, 0xbcdef), true, v6Header(0xa3, 0xbcdef)},
		{"IPv6 Not-ECT", header.IPv6ProtocolNumber, v6Header(0xa0, 0xbcdef), false, nil},
		{"IPv6 version 4", header.IPv6ProtocolNumber, with(v6Header(0x02, 1), 0, 0x40), false, nil},
		{"IPv6 short", header.IPv6ProtocolNumber, v6Header(0x02, 1)[:39], false, nil},
		{"ARP", header.ARPProtocolNumber, v4Header(0x2), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkt := withNetworkHeader(tc.proto, tc.nh)
			defer pkt.DecRef()
			if got := fqcodel.MarkCE(pkt); got != tc.marked {
				t.Errorf("MarkCE = %v, want %v", got, tc.marked)
			}
			want := tc.want
			if want == nil {
				want = tc.nh
			}
			got := pkt.NetworkHeader().Slice()
			if tc.name == "IPv4 bad checksum stays bad" {
				if got[1]&3 != 3 || header.IPv4(got).IsChecksumValid() {
					t.Errorf("header %x: want CE set and the checksum still bad", got)
				}
				return
			}
			if !bytes.Equal(got, want) {
				t.Errorf("header after is %x, want %x", got, want)
			}
		})
	}
}

// FuzzMarkCE: CE marking never panics, whatever the header's bytes, length
// and claimed protocol; it changes nothing but a well-formed header's ECN
// bits (and IPv4's checksum, whose validity it keeps).
func FuzzMarkCE(f *testing.F) {
	f.Add(uint8(0), v4Header(0x2))
	f.Add(uint8(0), with(v4Header(0x2), 0, 0x4f))
	f.Add(uint8(1), v6Header(0x2, 7))
	f.Add(uint8(1), with(v6Header(0x2, 7), 0, 0x40))
	f.Add(uint8(2), []byte{})
	f.Fuzz(func(t *testing.T, which uint8, nh []byte) {
		if len(nh) > 256 {
			nh = nh[:256]
		}
		proto := []tcpip.NetworkProtocolNumber{header.IPv4ProtocolNumber, header.IPv6ProtocolNumber, header.ARPProtocolNumber}[which%3]
		pkt := withNetworkHeader(proto, nh)
		defer pkt.DecRef()
		marked := fqcodel.MarkCE(pkt)
		got := pkt.NetworkHeader().Slice()
		if !marked {
			if !bytes.Equal(got, nh) {
				t.Fatalf("not marked, but the header changed: %x -> %x", nh, got)
			}
			return
		}
		changed := map[int]bool{1: true}
		if proto == header.IPv4ProtocolNumber {
			changed[10], changed[11] = true, true
			ihl := int(nh[0]&0xf) * 4
			if nh[0]>>4 != 4 || ihl < 20 || ihl > len(nh) {
				t.Fatalf("marked a malformed IPv4 header %x", nh)
			}
			if got[1]&3 != 3 || got[1]&^3 != nh[1]&^3 {
				t.Fatalf("TOS %#x -> %#x: want only the ECN bits set to CE", nh[1], got[1])
			}
			if checksum.Checksum(nh[:ihl], 0) == 0xffff && checksum.Checksum(got[:ihl], 0) != 0xffff {
				t.Fatalf("a valid checksum became invalid: %x -> %x", nh, got)
			}
		} else {
			if proto != header.IPv6ProtocolNumber || len(nh) < 40 || nh[0]>>4 != 6 {
				t.Fatalf("marked a malformed header %x as %d", nh, proto)
			}
			if (got[1]>>4)&3 != 3 || got[1]&^0x30 != nh[1]&^0x30 {
				t.Fatalf("byte 1 %#x -> %#x: want only the ECN bits set to CE", nh[1], got[1])
			}
		}
		for i := range nh {
			if got[i] != nh[i] && !changed[i] {
				t.Fatalf("byte %d changed: %x -> %x", i, nh, got)
			}
		}
	})
}
