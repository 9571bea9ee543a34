package classify_test

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

// pk describes a test packet.
type pk struct {
	src, dst     string // addresses; IPv6 if they contain ':'
	proto        uint8
	sport, dport uint16
	dscp         uint8
	fragOffset   uint16 // bytes, a multiple of 8
	more         bool   // more fragments follow
	payload      int    // bytes after the transport header
}

// bytes returns p's bytes, built with gVisor's header package: the network
// header, a TCP (20 bytes), UDP (8) or other (8 bytes of zeros) transport
// header, and the payload. An IPv6 fragment has a fragment header.
func (p pk) bytes() []byte {
	var l4 []byte
	switch p.proto {
	case 6:
		l4 = make([]byte, header.TCPMinimumSize)
		header.TCP(l4).Encode(&header.TCPFields{SrcPort: p.sport, DstPort: p.dport, DataOffset: header.TCPMinimumSize})
	case 17, 136:
		l4 = make([]byte, header.UDPMinimumSize)
		header.UDP(l4).Encode(&header.UDPFields{SrcPort: p.sport, DstPort: p.dport, Length: uint16(8 + p.payload)})
	case 132:
		l4 = make([]byte, 12)
		binary.BigEndian.PutUint16(l4[0:], p.sport)
		binary.BigEndian.PutUint16(l4[2:], p.dport)
	default:
		l4 = make([]byte, 8)
	}
	l4 = append(l4, make([]byte, p.payload)...)
	src, dst := netip.MustParseAddr(p.src), netip.MustParseAddr(p.dst)
	if src.Is4() {
		b := make([]byte, header.IPv4MinimumSize+len(l4))
		var flags uint8
		if p.more {
			flags = header.IPv4FlagMoreFragments
		}
		header.IPv4(b).Encode(&header.IPv4Fields{
			TOS:            p.dscp<<2 | 1, // and ECT(1), which must not matter
			TotalLength:    uint16(len(b)),
			TTL:            64,
			Protocol:       p.proto,
			Flags:          flags,
			FragmentOffset: p.fragOffset,
			SrcAddr:        tcpip.AddrFrom4(src.As4()),
			DstAddr:        tcpip.AddrFrom4(dst.As4()),
		})
		copy(b[header.IPv4MinimumSize:], l4)
		return b
	}
	next := p.proto
	if p.more || p.fragOffset != 0 {
		frag := make([]byte, 8)
		frag[0] = p.proto
		v := p.fragOffset &^ 7
		if p.more {
			v |= 1
		}
		binary.BigEndian.PutUint16(frag[2:], v)
		l4 = append(frag, l4...)
		next = 44
	}
	b := make([]byte, header.IPv6MinimumSize+len(l4))
	header.IPv6(b).Encode(&header.IPv6Fields{
		TrafficClass:      p.dscp<<2 | 2,
		PayloadLength:     uint16(len(l4)),
		TransportProtocol: tcpip.TransportProtocolNumber(next),
		HopLimit:          64,
		SrcAddr:           tcpip.AddrFrom16(src.As16()),
		DstAddr:           tcpip.AddrFrom16(dst.As16()),
	})
	copy(b[header.IPv6MinimumSize:], l4)
	return b
}

func (p pk) protocol() tcpip.NetworkProtocolNumber {
	if netip.MustParseAddr(p.src).Is4() {
		return header.IPv4ProtocolNumber
	}
	return header.IPv6ProtocolNumber
}

// layout is one way a qdisc may find a packet's bytes b in its
// PacketBuffer; k is a split point it may use (a header's length).
type layout struct {
	name string
	make func(b []byte, k int) *stack.PacketBuffer
}

var layouts = []layout{
	// As a link hands a packet up: all in Data.
	{"unparsed", func(b []byte, _ int) *stack.PacketBuffer {
		return stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(bytes.Clone(b))})
	}},
	// As an Ethernet link hands a packet up, or as a packet socket's
	// frame reaches the qdisc (nic.writeRawPacketWithLinkHeaderInPayload):
	// its link header consumed, the rest in Data.
	{"link-consumed", func(b []byte, _ int) *stack.PacketBuffer {
		frame := append(bytes.Repeat([]byte{0xee}, 14), b...)
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(frame)})
		pkt.LinkHeader().Consume(14)
		return pkt
	}},
	// As the receive path parses it: the first k bytes consumed as the
	// network header.
	{"consumed", func(b []byte, k int) *stack.PacketBuffer {
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(bytes.Clone(b))})
		pkt.NetworkHeader().Consume(min(k, len(b)))
		return pkt
	}},
	// As the send path builds it: k bytes pushed as the network header,
	// up to 20 more as the transport header, and a link header in front.
	{"pushed", func(b []byte, k int) *stack.PacketBuffer {
		k = min(k, len(b))
		t := min(20, len(b)-k)
		if k == 0 {
			t = 0 // a transport header with no network header is not read
		}
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 14 + k + t, Payload: buffer.MakeWithData(bytes.Clone(b[k+t:]))})
		if t > 0 {
			copy(pkt.TransportHeader().Push(t), b[k:k+t])
		}
		if k > 0 {
			copy(pkt.NetworkHeader().Push(k), b[:k])
		}
		copy(pkt.LinkHeader().Push(14), bytes.Repeat([]byte{0xee}, 14))
		return pkt
	}},
	// As a raw IP socket's packet reaches the qdisc: its network header
	// consumed when the stack checked it, then a link header pushed.
	{"raw-ip", func(b []byte, k int) *stack.PacketBuffer {
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 14, Payload: buffer.MakeWithData(bytes.Clone(b))})
		pkt.NetworkHeader().Consume(min(k, len(b)))
		copy(pkt.LinkHeader().Push(14), bytes.Repeat([]byte{0xee}, 14))
		return pkt
	}},
	// All in Data, in views of 3 bytes: every read spans views.
	{"scattered", func(b []byte, _ int) *stack.PacketBuffer {
		var buf buffer.Buffer
		for i := 0; i < len(b); i += 3 {
			buf.Append(buffer.NewViewWithData(b[i:min(i+3, len(b))]))
		}
		return stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buf})
	}},
	// A network header of k bytes consumed, the rest in views of 5 bytes.
	{"consumed-scattered", func(b []byte, k int) *stack.PacketBuffer {
		var buf buffer.Buffer
		k = min(k, len(b))
		if k > 0 {
			buf.Append(buffer.NewViewWithData(b[:k]))
		}
		for i := k; i < len(b); i += 5 {
			buf.Append(buffer.NewViewWithData(b[i:min(i+5, len(b))]))
		}
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buf})
		pkt.NetworkHeader().Consume(k)
		return pkt
	}},
}

// layoutNamed returns the layout called name.
func layoutNamed(name string) layout {
	for _, l := range layouts {
		if l.name == name {
			return l
		}
	}
	panic(name)
}

// netHeaderLen is where the transport header of b starts, or the whole of
// b if that cannot be told: the split a stack would use.
func netHeaderLen(protocol tcpip.NetworkProtocolNumber, b []byte) int {
	if protocol == header.IPv4ProtocolNumber && len(b) > 0 {
		return min(int(b[0]&0xf)*4, len(b))
	}
	return min(header.IPv6MinimumSize, len(b))
}
