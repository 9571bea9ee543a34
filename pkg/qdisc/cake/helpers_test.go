package cake

import (
	"encoding/binary"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

// pk describes a packet as the send path hands it to a qdisc: a link
// header of link bytes (none by default), an IPv4 (or IPv6) header and a
// TCP (proto 6, the default) or UDP header pushed, payload bytes of data.
type pk struct {
	v6         bool
	src, dst   uint16 // hosts 10.0.x.y / fd00::x:y
	proto      uint8
	sport      uint16
	dport      uint16
	tos        uint8 // the whole DS field: DSCP<<2 | ECN
	flags      header.TCPFlags
	ack        uint32
	opts       []byte
	payload    int
	link       int
	hash       uint32
	arp        bool
	seq        uint64 // last 8 bytes of the payload, if it has them
	notParsed  bool   // headers in the data, as on the receive path
	totalDelta int    // added to IPv4's total length / IPv6's payload length
}

func (p pk) build() *stack.PacketBuffer {
	if p.arp {
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(make([]byte, header.ARPSize))})
		pkt.NetworkProtocolNumber = header.ARPProtocolNumber
		return pkt
	}
	proto := p.proto
	if proto == 0 {
		proto = uint8(header.TCPProtocolNumber)
	}
	var th []byte
	if proto == uint8(header.TCPProtocolNumber) {
		n := header.TCPMinimumSize + (len(p.opts)+3)/4*4
		th = make([]byte, n)
		flags := p.flags
		if flags == 0 {
			flags = header.TCPFlagAck
		}
		header.TCP(th).Encode(&header.TCPFields{SrcPort: p.sport, DstPort: p.dport, SeqNum: uint32(p.seq), AckNum: p.ack, DataOffset: uint8(n), Flags: flags, WindowSize: 1000})
		copy(th[header.TCPMinimumSize:], p.opts)
	} else {
		th = make([]byte, header.UDPMinimumSize)
		header.UDP(th).Encode(&header.UDPFields{SrcPort: p.sport, DstPort: p.dport, Length: uint16(8 + p.payload)})
	}
	data := make([]byte, p.payload)
	var sb [8]byte
	binary.BigEndian.PutUint64(sb[:], p.seq)
	if len(data) >= 8 {
		copy(data[len(data)-8:], sb[:])
	}
	var nh []byte
	var netProto tcpip.NetworkProtocolNumber
	if p.v6 {
		nh = make([]byte, header.IPv6MinimumSize)
		header.IPv6(nh).Encode(&header.IPv6Fields{TrafficClass: p.tos, PayloadLength: uint16(len(th) + p.payload + p.totalDelta), TransportProtocol: tcpip.TransportProtocolNumber(proto), HopLimit: 64,
			SrcAddr: tcpip.AddrFrom16([16]byte{0xfd, 14: byte(p.src >> 8), 15: byte(p.src)}), DstAddr: tcpip.AddrFrom16([16]byte{0xfd, 1: 1, 14: byte(p.dst >> 8), 15: byte(p.dst)})})
		netProto = header.IPv6ProtocolNumber
	} else {
		nh = make([]byte, header.IPv4MinimumSize)
		ip := header.IPv4(nh)
		ip.Encode(&header.IPv4Fields{TOS: p.tos, TotalLength: uint16(len(nh) + len(th) + p.payload + p.totalDelta), TTL: 64, Protocol: proto,
			SrcAddr: tcpip.AddrFrom4([4]byte{10, 0, byte(p.src >> 8), byte(p.src)}), DstAddr: tcpip.AddrFrom4([4]byte{10, 1, byte(p.dst >> 8), byte(p.dst)})})
		ip.SetChecksum(^ip.CalculateChecksum())
		netProto = header.IPv4ProtocolNumber
	}
	if p.notParsed {
		all := append(append(append([]byte{}, nh...), th...), data...)
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(all)})
		pkt.NetworkProtocolNumber = netProto
		pkt.Hash = p.hash
		return pkt
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: p.link + len(nh) + len(th), Payload: buffer.MakeWithData(data)})
	copy(pkt.TransportHeader().Push(len(th)), th)
	copy(pkt.NetworkHeader().Push(len(nh)), nh)
	if p.link > 0 {
		pkt.LinkHeader().Push(p.link)
	}
	pkt.NetworkProtocolNumber = netProto
	pkt.TransportProtocolNumber = tcpip.TransportProtocolNumber(proto)
	pkt.Hash = p.hash
	return pkt
}

// testSched returns a Sched of cfg on a 1514-byte link at time 0, with
// fixed seeds.
func testSched(t testing.TB, cfg Config) *Sched {
	t.Helper()
	s, err := newSched(cfg, 1514, 0, flowhash.WithSeed(1), 1)
	if err != nil {
		t.Fatalf("newSched(%v): %v", cfg, err)
	}
	t.Cleanup(func() { s.Purge() })
	return s
}

// enqueue queues p built, charged its size.
func enqueue(t testing.TB, s *Sched, p pk, now int64) {
	t.Helper()
	pkt := p.build()
	if !s.Enqueue(pkt, uint32(pkt.Size()), now) {
		pkt.DecRef()
		t.Fatalf("Enqueue(%+v) refused", p)
	}
}

// seqOf reads the sequence number pk put at the end of the payload.
func seqOf(pkt *stack.PacketBuffer) uint64 {
	d := pkt.Data().AsRange().ToSlice()
	if len(d) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(d[len(d)-8:])
}

// checkInvariants checks what every state of a Sched holds: the packets
// and bytes counted are those in the flows (and the peeked one), the
// memory counted is theirs, the flow counts are the
// flows in each set.
func checkInvariants(t testing.TB, s *Sched) {
	t.Helper()
	var n int
	var bytes, mem uint64
	for ti := range s.tins {
		b := &s.tins[ti]
		var sparse, bulk, decaying uint16
		var tinBytes uint32
		for fi := range flowsOf(b) {
			f := &b.flows[fi]
			var fb uint32
			for i := f.head; i != none; i = s.pool.e[i].next {
				n++
				fb += s.pool.e[i].size
				mem += uint64(s.pool.e[i].mem)
			}
			if fb != b.backlogs[fi] {
				t.Fatalf("tin %d flow %d: backlog %d, packets of %d bytes", ti, fi, b.backlogs[fi], fb)
			}
			tinBytes += fb
			bytes += uint64(fb)
			switch f.set {
			case setSparse, setSparseWait:
				sparse++
			case setBulk:
				bulk++
			case setDecaying:
				decaying++
			case setNone:
				if f.head != none {
					t.Fatalf("tin %d flow %d holds packets in no set", ti, fi)
				}
			}
		}
		if tinBytes != b.backlog || sparse != b.sparse || bulk != b.bulk || decaying != b.decaying {
			t.Fatalf("tin %d: backlog %d sparse %d bulk %d decaying %d; counted %d %d %d %d", ti, b.backlog, b.sparse, b.bulk, b.decaying, tinBytes, sparse, bulk, decaying)
		}
	}
	if s.hasPeeked {
		n++
		bytes += uint64(s.pool.e[s.peeked].size)
	}
	if n != s.qlen || bytes != s.backlog || mem != s.bufferUsed {
		t.Fatalf("qlen %d backlog %d memory %d; counted %d %d %d", s.qlen, s.backlog, s.bufferUsed, n, bytes, mem)
	}
}

// checkMemory checks that the memory queued is within the limit, as it is
// after every Enqueue (a Change that lowers the limit takes effect at the
// next).
func checkMemory(t testing.TB, s *Sched) {
	t.Helper()
	if s.bufferUsed > s.bufferLimit {
		t.Fatalf("memory %d over the limit %d", s.bufferUsed, s.bufferLimit)
	}
}

// flowsOf returns b's flows: none before its cake's first packet.
func flowsOf(b *tin) []flow {
	if b.flowTable == nil {
		return nil
	}
	return b.flows[:]
}
