// Package packetbuf holds the bounded ring in which a qdisc queues packets.
//
// A Ring counts both packets and bytes (the sum of the sizes the packets
// were pushed with: what the qdisc charges each, as Linux's qdisc_pkt_len,
// such as gso.WireSize on the send path), so a qdisc can bound its backlog
// in bytes as Linux's bfifo and tbf do, not only in packets as gVisor's
// upstream PacketBufferCircularList does. Each packet's size is stored
// beside it, so a qdisc that looks at the head packet's length many times
// (tbf) computes it once, and the bytes it admitted a packet for are the
// bytes it counts as queued and as sent.
//
// The ring's slots are allocated lazily: Init fixes the most packets it may
// hold, and the slot array grows by doubling, up to that bound, only when a
// push finds it full. A qdisc whose bound is set in bytes needs room for
// many small packets (1.5 MB of 54-byte ACKs is 28,000 slots) but seldom
// uses it; growth stops once the ring has seen its peak, so a warm ring
// never allocates.
//
// Each packet may also carry a time stamp: its arrival, for a qdisc that
// reads the clock as packets arrive.
//
// A Ring is not safe for concurrent use: the qdisc that owns it locks it.
package packetbuf

import (
	"math"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Unstamped is the stamp of a packet pushed without one.
const Unstamped = qdisc.Unstamped

// initialSlots is the slot array's size before the first growth.
const initialSlots = 64

// Ring is a first-in, first-out ring of packets with O(1) push and pop. The zero Ring holds
// nothing; call Init first.
type Ring struct {
	pkts   []*stack.PacketBuffer
	sizes  []uint32
	stamps []int64
	head   int // index of the front packet
	n      int // packets queued
	max    int // most packets the ring may hold
	bytes  uint64
	// maxBytes, if not 0, is the most bytes the ring may hold.
	maxBytes uint64
}

// Init empties the ring and sets the most packets it may hold (at least 1).
// It must not be called while packets are queued.
func (r *Ring) Init(capacity int) {
	if capacity < 1 {
		capacity = 1
	}
	slots := min(capacity, initialSlots)
	*r = Ring{
		pkts:   make([]*stack.PacketBuffer, slots),
		sizes:  make([]uint32, slots),
		stamps: make([]int64, slots),
		max:    capacity,
	}
}

// Cap returns the most packets the ring may hold.
func (r *Ring) Cap() int { return r.max }

// Len returns the number of packets queued.
func (r *Ring) Len() int { return r.n }

// Bytes returns the sum of the sizes of the packets queued.
func (r *Ring) Bytes() uint64 { return r.bytes }

// IsEmpty reports whether no packet is queued.
func (r *Ring) IsEmpty() bool { return r.n == 0 }

// HasSpace reports whether one more packet fits.
func (r *Ring) HasSpace() bool { return r.n < r.max }

// SetMaxBytes bounds the bytes the ring holds (0: only its packets).
func (r *Ring) SetMaxBytes(b uint64) { r.maxBytes = b }

// PushBack queues pkt at the back, Unstamped, and takes the caller's
// reference to it. size is what the qdisc charges pkt (a size past
// 2^32-1 is kept as 2^32-1); it counts in Bytes until the packet is
// removed. It reports false, and takes nothing, when the ring is full:
// in packets, or in bytes past SetMaxBytes's bound.
func (r *Ring) PushBack(pkt *stack.PacketBuffer, size uint64) bool {
	return r.PushBackAt(pkt, size, Unstamped)
}

// PushBackAt is PushBack with a time stamp.
func (r *Ring) PushBackAt(pkt *stack.PacketBuffer, size uint64, stamp int64) bool {
	sz := uint32(min(size, math.MaxUint32))
	if r.maxBytes != 0 && r.bytes+uint64(sz) > r.maxBytes {
		return false
	}
	if r.n >= r.max {
		return false
	}
	if r.n == len(r.pkts) {
		r.grow()
	}
	i := r.head + r.n
	if i >= len(r.pkts) {
		i -= len(r.pkts)
	}
	r.pkts[i] = pkt
	r.sizes[i] = sz
	r.stamps[i] = stamp
	r.n++
	r.bytes += uint64(sz)
	return true
}

// grow doubles the slot array, up to max, keeping the packets in order.
func (r *Ring) grow() {
	slots := min(2*len(r.pkts), r.max)
	r.pkts = regrow(r.pkts, r.head, slots)
	r.sizes = regrow(r.sizes, r.head, slots)
	r.stamps = regrow(r.stamps, r.head, slots)
	r.head = 0
}

// regrow returns a slice of n slots holding old's ring contents from head,
// unwrapped.
func regrow[T any](old []T, head, n int) []T {
	s := make([]T, n)
	k := copy(s, old[head:])
	copy(s[k:], old[:head])
	return s
}

// FrontStamp returns the front packet's stamp (Unstamped when empty).
func (r *Ring) FrontStamp() int64 {
	if r.n == 0 {
		return Unstamped
	}
	return r.stamps[r.head]
}

// Front writes the sizes and stamps of the first packets, front to back,
// up to len(sizes) (stamps as long), and returns how many it wrote.
func (r *Ring) Front(sizes []uint32, stamps []int64) int {
	n := min(len(sizes), r.n)
	// The n packets are in one run of slots, or two when they wrap around
	// the end of the arrays.
	first := min(n, len(r.pkts)-r.head)
	copy(sizes, r.sizes[r.head:r.head+first])
	copy(sizes[first:n], r.sizes[:n-first])
	copy(stamps, r.stamps[r.head:r.head+first])
	copy(stamps[first:n], r.stamps[:n-first])
	return n
}

// FrontSizes writes the sizes of the first packets, front to back, up to
// len(sizes), and returns how many it wrote.
func (r *Ring) FrontSizes(sizes []uint32) int {
	n := min(len(sizes), r.n)
	first := min(n, len(r.pkts)-r.head)
	copy(sizes, r.sizes[r.head:r.head+first])
	copy(sizes[first:n], r.sizes[:n-first])
	return n
}

// FrontSize returns the size of the front packet; ok is false when the
// ring is empty.
func (r *Ring) FrontSize() (size uint32, ok bool) {
	if r.n == 0 {
		return 0, false
	}
	return r.sizes[r.head], true
}

// StampUnstamped stamps the packets at the back that have no stamp with
// stamp. It finds them by walking back from the last packet to the first
// that has one: a qdisc that stamps what it has seen each time it looks
// keeps the unstamped packets a suffix of the ring, so each packet is
// visited once.
func (r *Ring) StampUnstamped(stamp int64) {
	for k := r.n - 1; k >= 0; k-- {
		i := r.head + k
		if i >= len(r.pkts) {
			i -= len(r.pkts)
		}
		if r.stamps[i] != Unstamped {
			return
		}
		r.stamps[i] = stamp
	}
}

// PeekFront returns the front packet and the size it was queued with,
// without removing it, or nil and 0 when the ring is empty. The ring keeps
// its reference.
func (r *Ring) PeekFront() (*stack.PacketBuffer, uint32) {
	if r.n == 0 {
		return nil, 0
	}
	return r.pkts[r.head], r.sizes[r.head]
}

// RemoveFront removes the front packet and hands its reference to the
// caller, with the size it was queued with; nil and 0 when empty.
func (r *Ring) RemoveFront() (*stack.PacketBuffer, uint32) {
	if r.n == 0 {
		return nil, 0
	}
	pkt, size := r.pkts[r.head], r.sizes[r.head]
	r.pkts[r.head] = nil
	r.head++
	if r.head == len(r.pkts) {
		r.head = 0
	}
	r.n--
	r.bytes -= uint64(size)
	return pkt, size
}

// RemoveFrontTo removes the first n packets (all of them when fewer are
// queued) and appends them to pkts, front to back, handing over their
// references: n RemoveFront calls. It returns how many it removed and
// their bytes.
func (r *Ring) RemoveFrontTo(pkts *stack.PacketBufferList, n int) (int, uint64) {
	n = min(n, r.n)
	// The n packets are in one run of slots, or two when they wrap around
	// the end of the arrays.
	first := min(n, len(r.pkts)-r.head)
	bytes := moveTo(pkts, r.pkts[r.head:r.head+first], r.sizes[r.head:r.head+first])
	bytes += moveTo(pkts, r.pkts[:n-first], r.sizes[:n-first])
	if r.head += n; r.head >= len(r.pkts) {
		r.head -= len(r.pkts)
	}
	r.n -= n
	r.bytes -= bytes
	return n, bytes
}

// moveTo appends slots to pkts and empties them, and returns the sum of
// their sizes.
func moveTo(pkts *stack.PacketBufferList, slots []*stack.PacketBuffer, sizes []uint32) uint64 {
	for _, pkt := range slots {
		pkts.PushBack(pkt)
	}
	clear(slots)
	var bytes uint64
	for _, size := range sizes {
		bytes += uint64(size)
	}
	return bytes
}

// Purge releases the reference of every queued packet, exactly once, and
// empties the ring. It returns how many packets and bytes it dropped.
func (r *Ring) Purge() (packets int, bytes uint64) {
	packets, bytes = r.n, r.bytes
	for r.n > 0 {
		pkt, _ := r.RemoveFront()
		pkt.DecRef()
	}
	r.head = 0
	return packets, bytes
}

// SetCap changes the most packets the ring may hold (at least 1), as
// SetMaxBytes changes its bytes: packets already queued past a lower
// bound stay, and pushes fail until the ring is under it.
func (r *Ring) SetCap(capacity int) { r.max = max(capacity, 1) }
