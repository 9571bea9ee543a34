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

func TestStamps(t *testing.T) {
	var r Ring
	r.Init(1000)
	if r.FrontStamp() != Unstamped {
		t.Fatalf("empty ring's FrontStamp = %d", r.FrontStamp())
	}
	var held []*stack.PacketBuffer
	push := func(stamp int64) {
		pkt := qdisctest.MakePacket(100, 0, uint64(len(held)))
		held = append(held, pkt)
		r.PushBackAt(pkt.IncRef(), 100, stamp)
	}
	// Stamped, then unstamped (a suffix), across a growth and a wrap.
	for i := 0; i < 50; i++ {
		push(int64(i))
	}
	for i := 0; i < 30; i++ {
		pkt, _ := r.RemoveFront()
		pkt.DecRef()
	}
	for i := 0; i < 60; i++ {
		r.PushBack(held[i%len(held)].IncRef(), 100)
	}
	next := int64(1000)
	r.StampUnstamped(func(size uint32) int64 { next++; return next }) // front to back
	r.StampUnstamped(func(uint32) int64 { return -5 })                // nothing left unstamped
	var want []int64
	for i := 30; i < 50; i++ {
		want = append(want, int64(i))
	}
	for i := 0; i < 60; i++ {
		want = append(want, 1001+int64(i))
	}
	for k, w := range want {
		if got := r.FrontStamp(); got != w {
			t.Fatalf("packet %d: stamp %d, want %d", k, got, w)
		}
		pkt, _ := r.RemoveFront()
		pkt.DecRef()
	}
	for _, pkt := range held {
		pkt.DecRef()
	}
}

// TestStampFront: StampFront books the unstamped packets among the first
// n, after the stamped ones, with their sizes in order, and leaves the
// rest unstamped; with every one of the first n stamped it books nothing.
func TestStampFront(t *testing.T) {
	for _, tc := range []struct {
		name               string
		stamped, unstamped int
		n                  int
		wantBooked         int
	}{
		{"all unstamped, more than n", 0, 10, 4, 4},
		{"all unstamped, fewer than n", 0, 3, 4, 3},
		{"stamped prefix, then unstamped", 2, 10, 5, 3},
		{"n within the stamped prefix", 5, 10, 4, 0},
		{"empty", 0, 0, 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Ring
			r.Init(100)
			defer r.Purge()
			for i := 0; i < tc.stamped+tc.unstamped; i++ {
				pkt := qdisctest.MakePacket(100+i, 0, uint64(i))
				if i < tc.stamped {
					r.PushBackAt(pkt, uint64(100+i), int64(i))
				} else {
					r.PushBack(pkt, uint64(100+i))
				}
			}
			sizes, stamps := make([]uint32, tc.n), make([]int64, tc.n)
			var booked []uint32
			r.StampFront(sizes, stamps, func(sizes []uint32, stamps []int64) {
				booked = append(booked, sizes...)
				for i := range stamps {
					stamps[i] = 1000 + int64(i)
				}
			})
			if len(booked) != tc.wantBooked {
				t.Fatalf("booked %d packets, want %d", len(booked), tc.wantBooked)
			}
			for i := 0; i < tc.stamped+tc.unstamped; i++ {
				want := int64(Unstamped)
				switch {
				case i < tc.stamped:
					want = int64(i)
				case i < tc.stamped+tc.wantBooked:
					want = 1000 + int64(i-tc.stamped)
					if booked[i-tc.stamped] != uint32(100+i) {
						t.Errorf("packet %d booked with size %d, want %d", i, booked[i-tc.stamped], 100+i)
					}
				}
				if got := r.FrontStamp(); got != want {
					t.Errorf("packet %d: stamp %d, want %d", i, got, want)
				}
				pkt, _ := r.RemoveFront()
				pkt.DecRef()
			}
		})
	}
}
