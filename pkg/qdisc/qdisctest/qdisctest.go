// Package qdisctest has what the qdisc tests share: a packet maker whose
// packets carry a sequence number and a checkable payload, and a lower link
// endpoint that records, or just counts, what a qdisc hands it.
package qdisctest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// MakePacket returns a packet of exactly size bytes (pkt.Size() == size)
// with pkt.Hash set to hash. Its payload starts with seq (as much of its 8
// bytes as fit) and is filled with bytes derived from seq, so that Check
// can tell a packet's content was kept. The caller owns the one reference.
func MakePacket(size int, hash uint32, seq uint64) *stack.PacketBuffer {
	data := make([]byte, size)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seq)
	n := copy(data, b[:])
	// The fill is made on the stack and copied out a chunk at a time:
	// under -race every store to data would be a call to the race
	// detector.
	var chunk [fillChunk]byte
	for off := n; off < size; off += fillChunk {
		k := min(fillChunk, size-off)
		for i := range k {
			chunk[i] = fill(seq, off+i)
		}
		copy(data[off:], chunk[:k])
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(data)})
	pkt.Hash = hash
	return pkt
}

func fill(seq uint64, i int) byte { return byte(seq*31 + uint64(i)*7) }

// fillChunk is how many bytes of fill MakePacket and Check make at a time.
const fillChunk = 512

// Seq returns the sequence number MakePacket put in pkt.
func Seq(pkt *stack.PacketBuffer) uint64 {
	data := pkt.Data().AsRange().Capped(8).ToSlice()
	var b [8]byte
	copy(b[:], data)
	return binary.BigEndian.Uint64(b[:])
}

// Check returns an error if pkt's payload is not what MakePacket made for
// its sequence number.
func Check(pkt *stack.PacketBuffer) error {
	data := pkt.Data().AsRange().ToSlice()
	seq := Seq(pkt)
	// Compared a chunk at a time against fill made on the stack (data is
	// the test's own copy, so the race detector loses nothing).
	var want [fillChunk]byte
	for off := 8; off < len(data); off += fillChunk {
		k := min(fillChunk, len(data)-off)
		for i := range k {
			want[i] = fill(seq, off+i)
		}
		if bytes.Equal(data[off:off+k], want[:k]) {
			continue
		}
		for i := off; i < off+k; i++ {
			if data[i] != fill(seq, i) {
				return fmt.Errorf("packet %d: byte %d is %#x, want %#x", seq, i, data[i], fill(seq, i))
			}
		}
	}
	return nil
}

// Record is what Link saw of one packet.
type Record struct {
	Seq  uint64
	Size int
	Hash uint32
	// At is the link's clock when the packet was written.
	At tcpip.MonotonicTime
	// Write numbers the WritePackets call that carried the packet, from 0.
	Write int
}

// Link is a lower link endpoint for tests: an Ethernet-like link with an
// MTU and a header length that records every packet written to it (or,
// with Discard, only counts them). As a stack.NetworkDispatcher it records
// the packets delivered to it the same way. Set its exported fields before handing
// it to a qdisc. It borrows the packets' references, as a real link does:
// the qdisc releases them after WritePackets returns.
type Link struct {
	// MTU and HeaderLength are what the link reports; NewLink sets 1500 and
	// 14.
	LinkMTU      uint32
	HeaderLength uint16
	// GSO and GSOMax are what the link reports as a stack.GSOEndpoint.
	GSO    stack.SupportedGSO
	GSOMax uint32
	// Discard makes the link count packets without recording them.
	Discard bool
	// AcceptAtMost, when positive, makes WritePackets accept only that many
	// packets of each call and report Refusal for the rest.
	AcceptAtMost int
	// Full, while set, makes WritePackets accept nothing and report
	// Refusal.
	Full atomic.Bool
	// Refusal is what WritePackets reports for what it does not accept
	// (nil: ErrWouldBlock, a full socket buffer).
	Refusal tcpip.Error
	// OnWrite, when set, is called at the start of every WritePackets.
	OnWrite func()
	// Inspect, when set, is called with every packet written or
	// delivered, while the link borrows it.
	Inspect func(*stack.PacketBuffer)

	clock tcpip.Clock

	packets atomic.Uint64
	bytes   atomic.Uint64

	mu sync.Mutex
	// +checklocks:mu
	records []Record
	// +checklocks:mu
	writes int
	// +checklocks:mu
	bad error
}

var _ stack.LinkEndpoint = (*Link)(nil)
var _ stack.NetworkDispatcher = (*Link)(nil)
var _ stack.GSOEndpoint = (*Link)(nil)

// NewLink returns a recording link with MTU 1500 and a 14-byte header that
// stamps packets with clock (nil: no time stamps).
func NewLink(clock tcpip.Clock) *Link {
	return &Link{LinkMTU: 1500, HeaderLength: header.EthernetMinimumSize, clock: clock}
}

// WritePackets implements stack.LinkWriter.WritePackets.
func (l *Link) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	if l.OnWrite != nil {
		l.OnWrite()
	}
	list := pkts.AsSlice()
	n := len(list)
	var err tcpip.Error
	if l.AcceptAtMost > 0 && n > l.AcceptAtMost {
		n = l.AcceptAtMost
	}
	if l.Full.Load() {
		n = 0
	}
	if n < len(list) {
		err = l.Refusal
		if err == nil {
			err = &tcpip.ErrWouldBlock{}
		}
	}
	l.record(list[:n])
	return n, err
}

// DeliverNetworkPacket implements stack.NetworkDispatcher: a Link attached
// above a receive-path shaper records what it delivers, as it records what
// a qdisc writes to it.
func (l *Link) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	l.record([]*stack.PacketBuffer{pkt})
}

// DeliverLinkPacket implements stack.NetworkDispatcher; it records nothing.
func (*Link) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// record counts pkts and, unless Discard, records them as one write.
func (l *Link) record(pkts []*stack.PacketBuffer) {
	var bytes uint64
	for _, pkt := range pkts {
		bytes += uint64(pkt.Size())
		if l.Inspect != nil {
			l.Inspect(pkt)
		}
	}
	l.packets.Add(uint64(len(pkts)))
	l.bytes.Add(bytes)
	if l.Discard {
		return
	}
	var at tcpip.MonotonicTime
	if l.clock != nil {
		at = l.clock.NowMonotonic()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, pkt := range pkts {
		if e := Check(pkt); e != nil && l.bad == nil {
			l.bad = e
		}
		l.records = append(l.records, Record{Seq: Seq(pkt), Size: pkt.Size(), Hash: pkt.Hash, At: at, Write: l.writes})
	}
	l.writes++
}

// Records returns a copy of what the link has recorded.
func (l *Link) Records() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Record(nil), l.records...)
}

// NumRecords returns how many packets the link has recorded:
// len(Records()) without the copy, for a check after every step of a
// long run.
func (l *Link) NumRecords() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.records)
}

// Err returns the first packet whose content was not what MakePacket made.
func (l *Link) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bad
}

// Count returns how many packets and bytes the link accepted.
func (l *Link) Count() (packets, bytes uint64) {
	return l.packets.Load(), l.bytes.Load()
}

// MTU implements stack.NetworkLinkEndpoint.MTU.
func (l *Link) MTU() uint32 { return l.LinkMTU }

// SetMTU implements stack.NetworkLinkEndpoint.SetMTU.
func (l *Link) SetMTU(mtu uint32) { l.LinkMTU = mtu }

// MaxHeaderLength implements stack.NetworkLinkEndpoint.MaxHeaderLength.
func (l *Link) MaxHeaderLength() uint16 { return l.HeaderLength }

// LinkAddress implements stack.NetworkLinkEndpoint.LinkAddress.
func (*Link) LinkAddress() tcpip.LinkAddress { return "\x02\x00\x00\x00\x00\x01" }

// SetLinkAddress implements stack.NetworkLinkEndpoint.SetLinkAddress.
func (*Link) SetLinkAddress(tcpip.LinkAddress) {}

// Capabilities implements stack.NetworkLinkEndpoint.Capabilities.
func (*Link) Capabilities() stack.LinkEndpointCapabilities { return 0 }

// Attach implements stack.NetworkLinkEndpoint.Attach.
func (*Link) Attach(stack.NetworkDispatcher) {}

// IsAttached implements stack.NetworkLinkEndpoint.IsAttached.
func (*Link) IsAttached() bool { return true }

// Wait implements stack.NetworkLinkEndpoint.Wait.
func (*Link) Wait() {}

// ARPHardwareType implements stack.NetworkLinkEndpoint.ARPHardwareType.
func (*Link) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareEther }

// AddHeader implements stack.NetworkLinkEndpoint.AddHeader.
func (*Link) AddHeader(*stack.PacketBuffer) {}

// ParseHeader implements stack.NetworkLinkEndpoint.ParseHeader.
func (*Link) ParseHeader(*stack.PacketBuffer) bool { return true }

// Close implements stack.NetworkLinkEndpoint.Close.
func (*Link) Close() {}

// SetOnCloseAction implements stack.NetworkLinkEndpoint.SetOnCloseAction.
func (*Link) SetOnCloseAction(func()) {}

// GSOMaxSize implements stack.GSOEndpoint.GSOMaxSize.
func (l *Link) GSOMaxSize() uint32 { return l.GSOMax }

// SupportedGSO implements stack.GSOEndpoint.SupportedGSO.
func (l *Link) SupportedGSO() stack.SupportedGSO { return l.GSO }
