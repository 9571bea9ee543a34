package fqcodel_test

import (
	"encoding/binary"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// ecnKind is a network header the ECN conformance test sends: IPv4 or
// IPv6, with one ECN codepoint (RFC 3168) in its TOS or traffic class.
type ecnKind struct {
	name  string
	proto tcpip.NetworkProtocolNumber
	nh    []byte
	// ect: ECT(0), ECT(1) or CE, which Linux's INET_ECN_set_ce marks.
	ect bool
}

var ecnKinds = []ecnKind{
	{"IPv4 Not-ECT", header.IPv4ProtocolNumber, v4Header(0x0), false},
	{"IPv4 ECT(1)", header.IPv4ProtocolNumber, v4Header(0x1), true},
	{"IPv4 ECT(0)", header.IPv4ProtocolNumber, v4Header(0x2), true},
	{"IPv4 CE", header.IPv4ProtocolNumber, v4Header(0x3), true},
	{"IPv6 Not-ECT", header.IPv6ProtocolNumber, v6Header(0x20, 7), false},
	{"IPv6 ECT(1)", header.IPv6ProtocolNumber, v6Header(0x21, 7), true},
	{"IPv6 ECT(0)", header.IPv6ProtocolNumber, v6Header(0x22, 7), true},
}

// ecnPacket returns a packet of size bytes (at least its header and 8)
// with kind's network header pushed, pkt.Hash hash, and seq in the first 8
// bytes of its payload (qdisctest.Seq reads it).
func ecnPacket(seq uint64, size, hash uint32, kind int) *stack.PacketBuffer {
	k := ecnKinds[kind]
	data := make([]byte, int(size)-len(k.nh))
	binary.BigEndian.PutUint64(data, seq)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: len(k.nh), Payload: buffer.MakeWithData(data)})
	copy(pkt.NetworkHeader().Push(len(k.nh)), k.nh)
	pkt.NetworkProtocolNumber = k.proto
	pkt.Hash = hash
	return pkt
}

// checkCE fails unless pkt, sent with kind's header, carries CE exactly
// when Linux marked it or it came as CE, and is otherwise the header it
// was sent with: the TOS or traffic class changed in its ECN bits alone,
// and IPv4's checksum still valid.
func checkCE(t *testing.T, pkt *stack.PacketBuffer, kind ecnKind, marked bool) {
	t.Helper()
	nh := pkt.NetworkHeader().Slice()
	var ce bool
	want := append([]byte(nil), kind.nh...)
	if kind.proto == header.IPv4ProtocolNumber {
		ce = nh[1]&3 == 3
		if !header.IPv4(nh).IsChecksumValid() {
			t.Fatalf("%s: IPv4 checksum invalid after CoDel: %x", kind.name, nh)
		}
		if marked {
			want[1] |= 3
			copy(want[10:12], nh[10:12]) // the checksum, checked above
		}
	} else {
		ce = (nh[1]>>4)&3 == 3
		if marked {
			want[1] |= 3 << 4
		}
	}
	if wantCE := marked || kind.name == "IPv4 CE"; ce != wantCE {
		t.Fatalf("%s: CE %v, Linux marks it: %v", kind.name, ce, marked)
	}
	if string(nh) != string(want) {
		t.Fatalf("%s: header %x after CoDel; want %x", kind.name, nh, want)
	}
}
