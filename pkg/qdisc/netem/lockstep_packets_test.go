package netem_test

import (
	"bytes"
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
	"github.com/netqdisc/netqdisc/pkg/qdisc/netem/netemtest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// lockstepPacket is a packet FuzzNetemLockstep made: its id, the packet
// (the test's reference), and its shape as the model knows it; for a
// host-GSO packet, its MSS.
type lockstepPacket struct {
	id    uint64
	pkt   *stack.PacketBuffer
	shape netemtest.Shape
	mss   int // 0: no headers, not GSO
}

// gsoTCPHeader is the TCP header of qdisctest.GSOPacket (with its
// timestamps), where corruption's part of a segment starts.
const gsoTCPHeader = header.TCPMinimumSize + 12

// makeLockstepPacket makes packet id as op asks: below 0x80 a packet of
// 40 to 1564 bytes with no headers (all of it corruptible); else
// (0xa0-0xbf) a host-GSO TCP/IPv4 packet of 2 to 5 segments of 100 to 520
// bytes, the last short by up to 14.
func makeLockstepPacket(id uint64, op byte) *lockstepPacket {
	if op < 0x80 {
		size := uint32(40 + int(op)*12)
		return &lockstepPacket{id: id, pkt: qdisctest.MakePacket(int(size), 1, id), shape: netemtest.Shape{Size: size, Region: size}}
	}
	k := int(op - 0xa0)
	segs, mss := 2+k%4, 100+k/4*60
	payload := segs*mss - k%3*7
	pkt := qdisctest.GSOPacket(payload, mss, 1, id, uint32(id)<<20)
	sh := netemtest.Shape{Size: uint32(gso.WireSize(pkt)), Region: uint32(gsoTCPHeader + payload)}
	for off := 0; off < payload; off += mss {
		n := min(mss, payload-off)
		sh.Segs = append(sh.Segs, netemtest.Shape{Size: uint32(qdisctest.GSOHeaderLen + n), Region: uint32(gsoTCPHeader + n)})
	}
	return &lockstepPacket{id: id, pkt: pkt, shape: sh, mss: mss}
}

// bytesOf returns a copy of pkt's bytes, from its first header.
func bytesOf(pkt *stack.PacketBuffer) []byte {
	v := pkt.ToView()
	defer v.Release()
	return append([]byte(nil), v.AsSlice()...)
}

// check says what is wrong with pkt, charged size, as the model's packet
// mp (a segment of p, or p whole, perhaps corrupted), if anything.
func (p *lockstepPacket) check(pkt *stack.PacketBuffer, size uint32, mp netemtest.Packet) error {
	b := bytesOf(pkt)
	if mp.Seg == 0 {
		if p.mss != 0 && mp.Corrupt {
			return fmt.Errorf("packet %d: the model corrupts a GSO packet whole; netem cuts it first", p.id)
		}
		if mp.Corrupt {
			b[mp.Byte] ^= 1 << mp.Bit // the model's flip undone
		}
		if want := bytesOf(p.pkt); size != p.shape.Size || !bytes.Equal(b, want) {
			return fmt.Errorf("packet %d (%d bytes, the model's corrupt %v byte %d bit %d) left as %d bytes charged %d, other than sent with the model's bit flipped back", p.id, p.shape.Size, mp.Corrupt, mp.Byte, mp.Bit, len(b), size)
		}
		return nil
	}
	if p.mss == 0 || mp.Seg > len(p.shape.Segs) {
		return fmt.Errorf("packet %d: the model sends segment %d of a packet of %d", p.id, mp.Seg, len(p.shape.Segs))
	}
	seg := p.shape.Segs[mp.Seg-1]
	if size != seg.Size || uint32(len(b)) != seg.Size {
		return fmt.Errorf("packet %d segment %d: %d bytes charged %d, want %d", p.id, mp.Seg, len(b), size, seg.Size)
	}
	ipAt := header.EthernetMinimumSize
	tcpAt := ipAt + header.IPv4MinimumSize
	if mp.Corrupt {
		b[tcpAt+int(mp.Byte)] ^= 1 << mp.Bit
	}
	return p.checkSegment(b, mp, pkt.GSOOptions.NeedsCsum)
}

// checkSegment says what is wrong with b, segment mp.Seg of p with the
// model's flip undone, if anything: its IPv4 header, sequence number and
// payload must be the segment's, and its TCP checksum whole if netem
// corrupted it (it makes the checksum first), else partial as gso.Split
// leaves it for the host (needsCsum).
func (p *lockstepPacket) checkSegment(b []byte, mp netemtest.Packet, needsCsum bool) error {
	ip := header.IPv4(b[header.EthernetMinimumSize:])
	tcp := header.TCP(b[header.EthernetMinimumSize+header.IPv4MinimumSize:])
	off := (mp.Seg - 1) * p.mss
	whole, _ := qdisctest.GSOPayload(p.pkt)
	want := whole[off:min(off+p.mss, len(whole))]
	switch {
	case !ip.IsChecksumValid() || ip.ID() != uint16(p.id)+uint16(mp.Seg-1):
		return fmt.Errorf("packet %d segment %d: IPv4 header %x", p.id, mp.Seg, []byte(ip[:header.IPv4MinimumSize]))
	case tcp.SequenceNumber() != uint32(p.id)<<20+uint32(off):
		return fmt.Errorf("packet %d segment %d: sequence number %d, want %d", p.id, mp.Seg, tcp.SequenceNumber(), uint32(p.id)<<20+uint32(off))
	case !bytes.Equal(tcp[gsoTCPHeader:], want):
		return fmt.Errorf("packet %d segment %d: payload not the segment's (the model's corrupt %v byte %d bit %d)", p.id, mp.Seg, mp.Corrupt, mp.Byte, mp.Bit)
	case needsCsum == mp.Corrupt:
		return fmt.Errorf("packet %d segment %d: NeedsCsum %v, corrupted %v: netem makes the checksum of what it corrupts", p.id, mp.Seg, needsCsum, mp.Corrupt)
	}
	pseudo := header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tcp)))
	if needsCsum && tcp.Checksum() != pseudo {
		return fmt.Errorf("packet %d segment %d: partial checksum %#04x, want the pseudo-header's %#04x", p.id, mp.Seg, tcp.Checksum(), pseudo)
	}
	if !needsCsum && checksum.Checksum(tcp, pseudo) != 0xffff {
		return fmt.Errorf("packet %d segment %d: the TCP checksum of the corrupted segment is not whole once its bit is flipped back", p.id, mp.Seg)
	}
	return nil
}
