package qdisctest

import (
	"runtime"
	"sync/atomic"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Feed writes pkt to q n times, yielding to q's dispatchers until each
// write is accepted (a full ring answers ErrNoBufferSpace until the
// dispatcher drains it). The qdisc borrows a reference each time and
// releases it once the lower link has the packet.
func Feed(q stack.QueueingDiscipline, pkt *stack.PacketBuffer, n int) {
	for i := 0; i < n; i++ {
		for q.WritePacket(pkt) != nil {
			yield()
		}
	}
}

// AllocsPerPacket warms q up, then returns the average number of heap
// allocations, on every goroutine, for one packet written to q and
// dispatched to its lower link.
func AllocsPerPacket(t testing.TB, q stack.QueueingDiscipline, quiet Quiescer) float64 {
	t.Helper()
	pkt := MakePacket(1514, 0, 0)
	defer pkt.DecRef()
	Feed(q, pkt, 10000)
	WaitQuiescent(t, quiet)
	const batch = 1000
	return testing.AllocsPerRun(20, func() {
		Feed(q, pkt, batch)
		WaitQuiescent(t, quiet)
	}) / batch
}

func yield() { runtime.Gosched() }

// BenchWritePacket measures q's cost per packet: b.RunParallel's
// goroutines (one per P, with -cpu) each write one 1500-byte packet of
// their own hash over and over, yielding while q's queue is full. It
// reports allocations.
func BenchWritePacket(b *testing.B, q stack.QueueingDiscipline) {
	runProducers(b, func(pkt *stack.PacketBuffer, pb *testing.PB) {
		for pb.Next() {
			Feed(q, pkt, 1)
		}
	})
}

// MixedLengths is the lengths BenchWritePacketMixed's producers write in
// turn, and htb's mixed-length benchmark too: full-size packets between
// shorter ones, so that no two packets in a row are as long.
var MixedLengths = [...]int{1500, 600}

// BenchWritePacketMixed is BenchWritePacket with packets of MixedLengths
// in turn: each producer writes one packet of each length, over and over.
func BenchWritePacketMixed(b *testing.B, q stack.QueueingDiscipline) {
	b.ReportAllocs()
	var hash atomic.Uint32
	b.RunParallel(func(pb *testing.PB) {
		h := hash.Add(1)
		var pkts [len(MixedLengths)]*stack.PacketBuffer
		for i, n := range MixedLengths {
			pkts[i] = MakePacket(n, h, 0)
			defer pkts[i].DecRef()
		}
		for i := 0; pb.Next(); i++ {
			Feed(q, pkts[i%len(pkts)], 1)
		}
	})
}

// BenchWritePacketPaced is BenchWritePacket for a qdisc that takes every
// packet and drops at its own limit (cake, fq_codel): each producer
// yields to the dispatchers every YieldEvery packets, as a full queue
// makes BenchWritePacket's producers do, so that the producers do not
// outrun the dispatcher and the benchmark measures the path to the lower
// link, not the overflow path (ReportDrops says which it measured).
func BenchWritePacketPaced(b *testing.B, q stack.QueueingDiscipline) {
	runProducers(b, func(pkt *stack.PacketBuffer, pb *testing.PB) {
		for i := 1; pb.Next(); i++ {
			Feed(q, pkt, 1)
			if i%YieldEvery == 0 {
				yield()
			}
		}
	})
}

// runProducers runs write in b.RunParallel's goroutines, each with a
// 1500-byte packet of its own hash, and reports allocations. The loop is
// write's own, so that each benchmark's per-packet path is only its own.
func runProducers(b *testing.B, write func(pkt *stack.PacketBuffer, pb *testing.PB)) {
	b.ReportAllocs()
	var hash atomic.Uint32
	b.RunParallel(func(pb *testing.PB) {
		pkt := MakePacket(1500, hash.Add(1), 0)
		defer pkt.DecRef()
		write(pkt, pb)
	})
}

// YieldEvery is how many packets BenchWritePacketPaced's producers write
// between yields: few enough that a dispatcher given the CPU drains them
// long before any limit, many enough that the yield's cost per packet is
// small.
const YieldEvery = 64

// ReportDrops reports, as drops/op, the packets q dropped per packet
// written: a benchmark of a qdisc that never limits measures the path to
// the lower link only while this stays near 0 (a producer that outruns
// the dispatcher measures the overflow path instead). Call it after
// WaitQuiescent.
func ReportDrops(b *testing.B, q interface{ Stats() qdisc.Stats }) {
	b.ReportMetric(float64(q.Stats().Drops)/float64(b.N), "drops/op")
}
