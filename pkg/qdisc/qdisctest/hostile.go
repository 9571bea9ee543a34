package qdisctest

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Hostile packets: what a sandboxed program, or a peer on the network, can
// hand a qdisc. Their size is anything from 0 to 65535 bytes; their header
// bytes are random or a real protocol's layout with lying fields (an IPv4
// IHL of 15 over a 20-byte header, an IPv6 payload length that is not the
// packet's, an ECN-capable TOS); and the PacketBuffer's own view of them is
// any of the three a qdisc may meet (layout), with NetworkProtocolNumber
// set to IPv4, IPv6, ARP or anything else regardless of what the bytes
// say. No qdisc may crash on one, lose one, or keep a reference to one.

// Source is where the hostile packet maker draws its choices: a seeded
// *rand.Rand (math/rand/v2) in tests, or a fuzzer's input (Input), so that
// the fuzzer steers every choice.
type Source interface {
	// IntN returns a number in [0, n); n > 0.
	IntN(n int) int
}

// Input is a Source that reads a fuzzer's input: each choice takes as few
// bytes as its range needs, and once the input is used up every choice is
// 0.
type Input struct{ b []byte }

// NewInput returns an Input reading b.
func NewInput(b []byte) *Input { return &Input{b: b} }

// IntN implements Source.IntN.
func (in *Input) IntN(n int) int {
	var v uint64
	for span := uint64(1); span < uint64(n) && len(in.b) > 0; span <<= 8 {
		v = v<<8 | uint64(in.b[0])
		in.b = in.b[1:]
	}
	return int(v % uint64(n))
}

// Len returns how many bytes of the input are left.
func (in *Input) Len() int { return len(in.b) }

// layout is how a hostile packet's bytes sit in its PacketBuffer.
type layout int

const (
	// unparsed: every byte in Data, no header set (a link handing a frame
	// up before the stack parses it).
	unparsed layout = iota
	// pushed: a network header of 0 to 60 bytes pushed with
	// NetworkHeader().Push, perhaps a transport header pushed before it and
	// a link header after, as the send path builds a packet; its length
	// need not be the one its bytes claim.
	pushed
	// consumed: headers consumed from Data with NetworkHeader().Consume
	// (perhaps the link's before it and the transport's after), as the
	// receive path parses a packet.
	consumed
	numLayouts
)

// HostileSize draws a packet size from 0 to 65535: empty, tiny, the usual
// sizes, the edges (a link's MTU and header, a jumbo frame, the largest IP
// packet), or anything.
func HostileSize(src Source) int {
	switch src.IntN(8) {
	case 0:
		return 0
	case 1:
		return src.IntN(64)
	case 2:
		edges := [...]int{1, 14, 20, 28, 40, 60, 1500, 1514, 1515, 9000, 9014, 65535}
		return edges[src.IntN(len(edges))]
	case 3, 4:
		return 64 + src.IntN(1514-64+1)
	case 5:
		return src.IntN(9015)
	default:
		return src.IntN(65536)
	}
}

// HostileProtocol draws a network protocol number: IPv4, IPv6, ARP, or
// another (0 included).
func HostileProtocol(src Source) tcpip.NetworkProtocolNumber {
	switch src.IntN(6) {
	case 0, 1:
		return header.IPv4ProtocolNumber
	case 2, 3:
		return header.IPv6ProtocolNumber
	case 4:
		return header.ARPProtocolNumber
	default:
		return tcpip.NetworkProtocolNumber(src.IntN(1 << 16))
	}
}

// HostilePacket returns a packet of exactly size bytes (pkt.Size() ==
// size) whose bytes, layout (all in Data; headers pushed as the send path
// does; or consumed from Data as the receive path does),
// NetworkProtocolNumber and Hash are drawn from src. Sometimes the network header ends where its storage does, so that
// reading past the header's length (an IHL that claims more) panics
// rather than reading the next header's bytes. The caller owns the one
// reference.
func HostilePacket(src Source, size int) *stack.PacketBuffer {
	data := make([]byte, size)
	hostileBytes(src, data)
	var pkt *stack.PacketBuffer
	switch layout(src.IntN(int(numLayouts))) {
	case unparsed:
		pkt = stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(data)})
	case pushed:
		// Link, network and transport headers in that order in the bytes;
		// pushed transport first, as the stack does.
		n := src.IntN(min(header.IPv4MaximumHeaderSize, size) + 1)
		var tr, link int
		if src.IntN(2) == 0 {
			tr = src.IntN(min(header.TCPHeaderMaximumSize, size-n) + 1)
		}
		if src.IntN(4) == 0 {
			link = min(header.EthernetMinimumSize, size-n-tr)
		}
		hdrs := link + n + tr
		reserve := hdrs
		switch src.IntN(3) {
		case 1:
			reserve += 8 // room left unpushed
		case 2:
			// A whole chunk (64 bytes, or a power of two above): the
			// headers end where their storage does (the network header
			// itself, when no transport header follows it).
			reserve = 64
			for reserve < hdrs {
				reserve *= 2
			}
		}
		pkt = stack.NewPacketBuffer(stack.PacketBufferOptions{
			ReserveHeaderBytes: reserve,
			Payload:            buffer.MakeWithData(data[hdrs:]),
		})
		if tr > 0 {
			copy(pkt.TransportHeader().Push(tr), data[link+n:hdrs])
		}
		copy(pkt.NetworkHeader().Push(n), data[link:link+n])
		if link > 0 {
			copy(pkt.LinkHeader().Push(link), data[:link])
		}
	case consumed:
		var link int
		if src.IntN(4) == 0 {
			link = min(header.EthernetMinimumSize, size)
		}
		n := src.IntN(min(header.IPv4MaximumHeaderSize, size-link) + 1)
		var payload buffer.Buffer
		if tight := link + n; tight > 0 && tight <= 64 && src.IntN(2) == 0 {
			// The link and network headers at the end of a 64-byte
			// chunk of their own, the rest in another.
			v := buffer.NewViewSize(64)
			v.TrimFront(64 - tight)
			copy(v.AsSlice(), data[:tight])
			payload = buffer.MakeWithView(v)
			if size > tight {
				payload.Append(buffer.NewViewWithData(data[tight:]))
			}
		} else {
			payload = buffer.MakeWithData(data)
		}
		pkt = stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: payload})
		if link > 0 {
			pkt.LinkHeader().Consume(link)
		}
		pkt.NetworkHeader().Consume(n)
		if src.IntN(2) == 0 {
			pkt.TransportHeader().Consume(src.IntN(min(header.TCPHeaderMaximumSize, size-link-n) + 1))
		}
	}
	pkt.NetworkProtocolNumber = HostileProtocol(src)
	if src.IntN(2) == 1 {
		pkt.Hash = uint32(src.IntN(1 << 32))
	}
	return pkt
}

// hostileBytes fills b with a header layout drawn from src over noise: a
// real protocol's, with fields that lie, or only noise.
func hostileBytes(src Source, b []byte) {
	// Noise, from a small seed (a fuzzer need not spell out every byte).
	// It is made in a buffer on the stack and copied out a chunk at a
	// time: under -race every store to b would be a call to the race
	// detector, and packets are up to 64 KiB.
	x := uint32(src.IntN(1<<16))*0x9e3779b9 | 1
	var chunk [512]byte
	for off := 0; off < len(b); off += len(chunk) {
		n := min(len(chunk), len(b)-off)
		for i := range n {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			chunk[i] = byte(x)
		}
		copy(b[off:], chunk[:n])
	}
	var h [header.IPv4MaximumHeaderSize + 8]byte // the longest layout: IPv4 with options, and ports
	copy(h[:], b)
	var n int // bytes of h that were laid out
	switch src.IntN(5) {
	case 0: // noise only
	case 1, 2: // IPv4: any IHL, an ECN codepoint, lying lengths
		h[0] = 0x40 | byte(src.IntN(16))
		h[1] = byte(src.IntN(4)) | h[1]&^3
		binary.BigEndian.PutUint16(h[2:], uint16(hostileLength(src, len(b))))
		h[6] = [...]byte{0, 0x20, 0x40, 0x1f}[src.IntN(4)] // none, MF, DF, an offset
		h[9] = hostileTransport(src)
		// A source port where the IHL says the transport header starts, or
		// just after 20 bytes whatever it says.
		ihl := int(h[0]&0xf) * 4
		port := max(ihl, header.IPv4MinimumSize)
		if src.IntN(2) == 0 {
			port = header.IPv4MinimumSize
		}
		binary.BigEndian.PutUint16(h[port:], uint16(src.IntN(1<<16)))
		n = max(ihl, header.IPv4MinimumSize) + 4
	case 3: // IPv6: an ECN codepoint, lying payload length, ND or not
		h[0] = 0x60 | h[0]&0xf
		h[1] = byte(src.IntN(4))<<4 | h[1]&0xcf
		binary.BigEndian.PutUint16(h[4:], uint16(hostileLength(src, len(b)-header.IPv6MinimumSize)))
		h[6] = hostileTransport(src)
		h[7] = [...]byte{255, 64, 1}[src.IntN(3)]
		if h[6] == byte(header.ICMPv6ProtocolNumber) {
			h[header.IPv6MinimumSize] = byte(133 + src.IntN(8)) // 133-137: ND
			h[header.IPv6MinimumSize+1] = byte(src.IntN(2))
		}
		n = header.IPv6MinimumSize + header.ICMPv6MinimumSize
	case 4: // ARP for IPv4 over Ethernet, perhaps with a lying length
		binary.BigEndian.PutUint16(h[0:], 1)
		binary.BigEndian.PutUint16(h[2:], uint16(header.IPv4ProtocolNumber))
		h[4], h[5] = 6, byte(4+src.IntN(2)*12)
		binary.BigEndian.PutUint16(h[6:], uint16(1+src.IntN(3)))
		n = header.ARPSize
	}
	copy(b, h[:min(n, len(h))])
}

// hostileLength draws a length field: the truth (size), or a lie.
func hostileLength(src Source, size int) int {
	switch src.IntN(3) {
	case 0:
		return max(size, 0)
	case 1:
		return max(size+src.IntN(41)-20, 0)
	}
	return src.IntN(1 << 16)
}

// hostileTransport draws a transport protocol number: TCP, UDP, ICMP,
// ICMPv6, an IPv6 extension header, or any.
func hostileTransport(src Source) byte {
	ps := [...]byte{6, 17, 1, 58, 0, 43, 44, 60, 136, 132}
	if i := src.IntN(len(ps) + 1); i < len(ps) {
		return ps[i]
	}
	return byte(src.IntN(256))
}

// Offered counts the packets a test offered a qdisc and how the qdisc
// answered, and keeps the test's reference to each, so that after Close it
// can check that the qdisc let go of every one.
type Offered struct {
	// Pkts is every packet offered, in order.
	Pkts []*stack.PacketBuffer
	// Accepted counts the packets queued (answered nil) and their bytes;
	// Refused those refused and counted as drops (ErrNoBufferSpace,
	// ErrMessageTooLong).
	Accepted, Refused int
	AcceptedBytes     uint64
}

// Offer records that pkt was offered and the qdisc answered err. Any
// answer but nil, ErrNoBufferSpace and ErrMessageTooLong fails t.
func (o *Offered) Offer(t testing.TB, pkt *stack.PacketBuffer, err tcpip.Error) {
	t.Helper()
	o.Pkts = append(o.Pkts, pkt)
	switch err.(type) {
	case nil:
		o.Accepted++
		o.AcceptedBytes += uint64(pkt.Size())
	case *tcpip.ErrNoBufferSpace, *tcpip.ErrMessageTooLong:
		o.Refused++
	default:
		t.Fatalf("packet %d (%d bytes): qdisc answered %v", len(o.Pkts)-1, pkt.Size(), err)
	}
}

// CheckConserved fails t unless every packet offered is accounted for once
// in st: sent, dropped (refused, or dropped later), or queued.
func (o *Offered) CheckConserved(t testing.TB, st qdisc.Stats) {
	t.Helper()
	if st.Packets+st.Drops+st.BacklogPackets != uint64(o.Accepted+o.Refused) {
		t.Fatalf("%d packets accepted + %d refused, but Stats says %d sent + %d dropped + %d queued\n%v",
			o.Accepted, o.Refused, st.Packets, st.Drops, st.BacklogPackets, st)
	}
}

// Release fails t for every packet offered that does not hold exactly one
// reference, the test's own, and then drops the test's references. Call
// it after the qdisc's Close.
func (o *Offered) Release(t testing.TB) {
	t.Helper()
	CheckReleased(t, o.Pkts)
	o.Pkts = nil
}

// CheckReleased fails t for every packet of pkts that does not hold
// exactly one reference, the test's own (none: released twice; more: a
// reference leaked), and then drops the test's references.
func CheckReleased(t testing.TB, pkts []*stack.PacketBuffer) {
	t.Helper()
	bad := 0
	for i, pkt := range pkts {
		n := pkt.ReadRefs()
		if n != 1 {
			if bad++; bad <= 10 {
				t.Errorf("packet %d (%d bytes): %d references, want the test's own 1", i, pkt.Size(), n)
			}
		}
		if n > 0 {
			pkt.DecRef()
		}
	}
	if bad > 10 {
		t.Errorf("... %d packets in all with the wrong reference count", bad)
	}
}

// WaitGoroutines fails t if, after a grace period for timer callbacks to
// return, more goroutines run than before (a qdisc's dispatcher left
// behind after Close).
func WaitGoroutines(t testing.TB, before int) {
	t.Helper()
	if err := waitGoroutines(before); err != nil {
		t.Error(err)
	}
}

// Plug holds a qdisc's dispatchers inside the lower link's WritePackets
// while a test fills the qdisc's queues (and moves its clock on), without
// racing the dispatchers, then lets them drain: the way to a full queue,
// or a standing one for CoDel, at will. Set a Link's OnWrite to its Wait.
type Plug struct {
	mu    sync.Mutex // locked while held
	held  atomic.Bool
	stuck atomic.Int32
}

// Wait is the Link's OnWrite: it returns at once unless the plug is held,
// and otherwise when it is released.
func (p *Plug) Wait() {
	if !p.held.Load() {
		return
	}
	p.stuck.Add(1)
	p.mu.Lock()
	p.mu.Unlock()
	p.stuck.Add(-1)
}

// While holds the dispatchers' writes while f runs, and releases them when
// it returns (or fails its test). f may call WaitStuck.
func (p *Plug) While(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held.Store(true)
	defer p.held.Store(false)
	f()
}

// WaitStuck waits until at least n dispatchers wait in the plug; it fails
// t if that takes more than a minute.
func (p *Plug) WaitStuck(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for i := 0; p.stuck.Load() < int32(n); i++ {
		if i%1024 == 0 && time.Now().After(deadline) {
			t.Fatalf("%d of %d dispatchers in the plug after a minute", p.stuck.Load(), n)
		}
		runtime.Gosched()
	}
}
