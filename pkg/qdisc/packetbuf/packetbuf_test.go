package packetbuf

import (
	"math"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

func TestRingAccounting(t *testing.T) {
	for _, capacity := range []int{1, 3, 64, 65, 200} {
		var r Ring
		r.Init(capacity)
		var want []uint64
		var bytes uint64
		next := uint64(0)
		// Fill, half drain, refill: wraps the ring and grows it.
		for round := 0; round < 3; round++ {
			for r.HasSpace() {
				size := 40 + int(next%1500)
				if !r.PushBack(qdisctest.MakePacket(size, 0, next), uint64(size)) {
					t.Fatalf("cap %d: PushBack refused with HasSpace", capacity)
				}
				want = append(want, next)
				bytes += uint64(size)
				next++
			}
			extra := qdisctest.MakePacket(100, 0, 999)
			if r.PushBack(extra, 100) {
				t.Fatalf("cap %d: PushBack accepted a packet into a full ring", capacity)
			}
			if n := extra.ReadRefs(); n != 1 {
				t.Fatalf("refused packet has %d references", n)
			}
			extra.DecRef()
			if r.Len() != capacity || r.Bytes() != bytes {
				t.Fatalf("cap %d: Len %d Bytes %d, want %d and %d", capacity, r.Len(), r.Bytes(), capacity, bytes)
			}
			for k := 0; k < (capacity+1)/2; k++ {
				front, fsize := r.PeekFront()
				pkt, size := r.RemoveFront()
				if pkt != front || size != fsize || qdisctest.Seq(pkt) != want[0] || int(size) != pkt.Size() {
					t.Fatalf("cap %d: removed %d (%d bytes), want %d", capacity, qdisctest.Seq(pkt), size, want[0])
				}
				want = want[1:]
				bytes -= uint64(size)
				pkt.DecRef()
			}
		}
		var held []*stack.PacketBuffer
		for i := 0; i < r.Len(); i++ {
			pkt, size := r.RemoveFront()
			r.PushBack(pkt.IncRef(), uint64(size))
			held = append(held, pkt)
		}
		packets, purged := r.Purge()
		if packets != len(want) || purged != bytes || !r.IsEmpty() || r.Bytes() != 0 {
			t.Fatalf("cap %d: Purge dropped %d packets (%d bytes), want %d (%d); left %d", capacity, packets, purged, len(want), bytes, r.Len())
		}
		// Purge released the ring's reference, exactly once: ours is left.
		for _, pkt := range held {
			if n := pkt.ReadRefs(); n != 1 {
				t.Fatalf("after Purge a packet has %d references, want 1", n)
			}
			pkt.DecRef()
		}
		if pkt, size := r.RemoveFront(); pkt != nil || size != 0 {
			t.Fatalf("RemoveFront on an empty ring: %v, %d", pkt, size)
		}
		if pkt, _ := r.PeekFront(); pkt != nil {
			t.Fatalf("PeekFront on an empty ring: %v", pkt)
		}
	}
}

// TestRingCountsCallersSizes: the ring counts each packet as the size it
// was pushed with (what the qdisc charges it, not pkt.Size()), hands that
// size back with the packet, and keeps a size past 2^32-1 as 2^32-1.
func TestRingCountsCallersSizes(t *testing.T) {
	var r Ring
	r.Init(10)
	pkt := qdisctest.MakePacket(1514, 0, 0)
	defer pkt.DecRef()
	sizes := []uint64{68130, 0, 1 << 40}
	want := []uint32{68130, 0, math.MaxUint32}
	for i, size := range sizes {
		r.PushBackAt(pkt.IncRef(), size, int64(i))
	}
	if got, w := r.Bytes(), uint64(68130+math.MaxUint32); got != w {
		t.Fatalf("Bytes = %d, want %d", got, w)
	}
	for i, w := range want {
		if _, size := r.PeekFront(); size != w {
			t.Errorf("packet %d: PeekFront's size %d, want %d", i, size, w)
		}
		p, size := r.RemoveFront()
		if size != w {
			t.Errorf("packet %d: RemoveFront's size %d, want %d", i, size, w)
		}
		p.DecRef()
	}
	if r.Bytes() != 0 {
		t.Errorf("Bytes = %d once empty", r.Bytes())
	}
}

func TestRingGrowsLazily(t *testing.T) {
	var r Ring
	r.Init(1 << 20)
	if len(r.pkts) > initialSlots {
		t.Fatalf("Init(1<<20) allocated %d slots up front", len(r.pkts))
	}
	for i := 0; i < 1000; i++ {
		r.PushBack(qdisctest.MakePacket(60, 0, uint64(i)), 60)
	}
	if len(r.pkts) != 1024 || r.Cap() != 1<<20 {
		t.Fatalf("1000 packets in %d slots, want 1024", len(r.pkts))
	}
	for i := 0; i < 1000; i++ {
		pkt, _ := r.RemoveFront()
		if qdisctest.Seq(pkt) != uint64(i) {
			t.Fatalf("packet %d out of order after growth", i)
		}
		pkt.DecRef()
	}
	// The ring holds references without touching them, so one packet can
	// stand in for a thousand.
	pkt := qdisctest.MakePacket(60, 0, 0)
	defer pkt.DecRef()
	if n := testing.AllocsPerRun(100, func() {
		for i := 0; i < 1000; i++ {
			r.PushBack(pkt, 60)
		}
		for !r.IsEmpty() {
			r.RemoveFront()
		}
	}); n != 0 {
		t.Errorf("a warm ring allocated %.1f times per round", n)
	}
}

// TestFront: Front copies the sizes and stamps of the first packets, front
// to back, across a growth and a wrap of the slots, and no more than are
// queued.
func TestFront(t *testing.T) {
	var r Ring
	r.Init(1000)
	defer r.Purge()
	sizes, stamps := make([]uint32, 200), make([]int64, 200)
	if n := r.Front(sizes, stamps); n != 0 {
		t.Fatalf("empty ring: Front = %d", n)
	}
	// 50 pushed, 30 removed, 60 more (unstamped): the ring grew and wraps.
	for i := 0; i < 50; i++ {
		r.PushBackAt(qdisctest.MakePacket(100, 0, uint64(i)), uint64(100+i), int64(i))
	}
	for i := 0; i < 30; i++ {
		pkt, _ := r.RemoveFront()
		pkt.DecRef()
	}
	for i := 50; i < 110; i++ {
		r.PushBack(qdisctest.MakePacket(100, 0, uint64(i)), uint64(100+i))
	}
	for _, n := range []int{0, 1, 20, 21, 80, 200} {
		got := r.Front(sizes[:n], stamps[:n])
		if want := min(n, 80); got != want {
			t.Fatalf("Front of %d = %d, want %d", n, got, want)
		}
		for k := 0; k < got; k++ {
			i := 30 + k
			wantStamp := int64(i)
			if i >= 50 {
				wantStamp = Unstamped
			}
			if sizes[k] != uint32(100+i) || stamps[k] != wantStamp {
				t.Fatalf("Front of %d: packet %d has size %d stamp %d, want %d and %d", n, k, sizes[k], stamps[k], 100+i, wantStamp)
			}
		}
	}
}

// TestRemoveFrontTo: FrontSizes reads the sizes of the packets at the
// front, and RemoveFrontTo hands them over in order, as many RemoveFront
// calls would, across the end of the slot array too, leaving the slots
// empty and the counts right.
func TestRemoveFrontTo(t *testing.T) {
	var r Ring
	r.Init(1000)
	defer r.Purge()
	// 64 slots: 50 pushed, 30 removed, 40 more: the last 24 wrap around.
	for i := range 50 {
		r.PushBack(qdisctest.MakePacket(100, 0, uint64(i)), uint64(100+i))
	}
	for range 30 {
		pkt, _ := r.RemoveFront()
		pkt.DecRef()
	}
	for i := 50; i < 90; i++ {
		r.PushBack(qdisctest.MakePacket(100, 0, uint64(i)), uint64(100+i))
	}
	if len(r.pkts) != 64 || r.head+r.n <= len(r.pkts) {
		t.Fatalf("the packets do not wrap around: %d slots, head %d, %d packets", len(r.pkts), r.head, r.n)
	}
	sizes := make([]uint32, 100)
	next, bytes := 30, r.Bytes()
	for _, n := range []int{0, 1, 20, 13, 100} {
		if got, want := r.FrontSizes(sizes[:n]), min(n, r.Len()); got != want {
			t.Fatalf("FrontSizes of %d = %d, want %d", n, got, want)
		}
		for k := range min(n, r.Len()) {
			if sizes[k] != uint32(100+next+k) {
				t.Fatalf("FrontSizes of %d: packet %d has size %d, want %d", n, k, sizes[k], 100+next+k)
			}
		}
		var pkts stack.PacketBufferList
		got, b := r.RemoveFrontTo(&pkts, n)
		if want := min(n, 90-next); got != want || pkts.Len() != want {
			t.Fatalf("RemoveFrontTo of %d = %d, handed over %d, want %d", n, got, pkts.Len(), want)
		}
		var want uint64
		for k, pkt := range pkts.AsSlice() {
			if s := qdisctest.Seq(pkt); s != uint64(next+k) {
				t.Fatalf("RemoveFrontTo of %d: packet %d is %d, want %d", n, k, s, next+k)
			}
			want += uint64(100 + next + k)
		}
		pkts.DecRef()
		next += got
		bytes -= want
		if b != want || r.Len() != 90-next || r.Bytes() != bytes {
			t.Fatalf("RemoveFrontTo of %d: %d bytes, left %d packets, %d bytes; want %d, %d, %d", n, b, r.Len(), r.Bytes(), want, 90-next, bytes)
		}
	}
	for i, pkt := range r.pkts {
		if pkt != nil {
			t.Fatalf("slot %d still holds a packet once the ring is empty", i)
		}
	}
	// And the ring goes on from where the removals left it.
	r.PushBack(qdisctest.MakePacket(100, 0, 90), 190)
	if pkt, size := r.RemoveFront(); qdisctest.Seq(pkt) != 90 || size != 190 {
		t.Fatalf("after RemoveFrontTo, RemoveFront = %d, %d bytes; want 90, 190", qdisctest.Seq(pkt), size)
	} else {
		pkt.DecRef()
	}
}

// TestQueueBounds: a Queue refuses, and counts, a packet past its packet or
// byte bound, taking nothing, and hands packets back in order with their
// sizes.
func TestQueueBounds(t *testing.T) {
	for _, tc := range []struct {
		name            string
		packets         int
		bytes           uint64
		sizes           []uint32
		wantQueued      int
		wantQueuedBytes uint64
	}{
		{"packet bound", 2, 0, []uint32{100, 100, 100}, 2, 200},
		{"byte bound", 10, 250, []uint32{100, 100, 100}, 2, 200},
		{"byte bound exactly met", 10, 300, []uint32{100, 100, 100}, 3, 300},
		{"a small packet after a refused large one", 10, 250, []uint32{100, 200, 100}, 2, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f Queue
			f.Init(tc.packets, tc.bytes)
			for i, size := range tc.sizes {
				pkt := qdisctest.MakePacket(int(size), 0, uint64(i))
				if !f.Enqueue(pkt.IncRef(), size, int64(i)) {
					pkt.DecRef()
				}
				if n := pkt.ReadRefs(); n != 1 && !(n == 2 && f.hasPacket(pkt)) {
					t.Fatalf("packet %d has %d references", i, n)
				}
				pkt.DecRef()
			}
			n, b := f.Len()
			if n != tc.wantQueued || b != tc.wantQueuedBytes || f.Drops() != uint64(len(tc.sizes)-tc.wantQueued) {
				t.Fatalf("Len = %d, %d; Drops = %d; want %d, %d and %d", n, b, f.Drops(), tc.wantQueued, tc.wantQueuedBytes, len(tc.sizes)-tc.wantQueued)
			}
			last := int64(-1)
			for {
				pkt, size, ok := f.Dequeue(0)
				if !ok {
					break
				}
				if seq := int64(qdisctest.Seq(pkt)); seq <= last || size != tc.sizes[seq] {
					t.Fatalf("dequeued packet %d (size %d) after %d", seq, size, last)
				}
				last = int64(qdisctest.Seq(pkt))
				pkt.DecRef()
			}
		})
	}
}

// hasPacket reports whether pkt is queued.
func (f *Queue) hasPacket(pkt *stack.PacketBuffer) bool {
	for i := 0; i < f.ring.n; i++ {
		if f.ring.pkts[(f.ring.head+i)%len(f.ring.pkts)] == pkt {
			return true
		}
	}
	return false
}
