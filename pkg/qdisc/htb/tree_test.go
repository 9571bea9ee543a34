package htb

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// bySeq classifies a packet made by qdisctest.MakePacket by its sequence
// number's top 32 bits: the class.
type bySeq struct{}

func (bySeq) Classify(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) uint32 {
	return uint32(qdisctest.Seq(pkt) >> 32)
}

// drain dequeues at now until the tree hands nothing, and returns the
// sequence numbers, releasing the packets.
func drain(tr *Tree, now int64) []uint64 {
	var out []uint64
	for {
		pkt, _, ok := tr.Dequeue(now)
		if !ok {
			return out
		}
		out = append(out, qdisctest.Seq(pkt))
		pkt.DecRef()
	}
}

// TestOneClassPacing holds the simplest case to numbers worked out by
// hand: a 1 Mbit/s class with tc's default 1600-byte buckets sends two
// 1000-byte packets at once (12.8 ms of credit), then one every 8 ms.
func TestOneClassPacing(t *testing.T) {
	const mbit = 125_000
	tr, err := NewTree(Config{Default: 0x10010, Classes: []ClassConfig{{ID: 0x10010, Rate: mbit}}}, bySeq{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if !tr.Enqueue(qdisctest.MakePacket(1000, 0, 0x10010<<32|uint64(i)), 1000, 0) {
			t.Fatalf("packet %d refused", i)
		}
	}
	if got := len(drain(tr, 0)); got != 2 {
		t.Fatalf("at 0: %d packets left, want 2", got)
	}
	// Credit after two: 12.8 - 16 = -3.2 ms; the third leaves at 3.2 ms,
	// then every 8 ms.
	for i, at := range []int64{3_200_000, 11_200_000, 19_200_000} {
		if next := tr.NextEvent(); next != at {
			t.Fatalf("packet %d: next event %d, want %d", i+2, next, at)
		}
		if got := drain(tr, at-1); len(got) != 0 {
			t.Fatalf("packet %d left at %d, 1 ns early", i+2, at-1)
		}
		if got := drain(tr, at); len(got) != 1 {
			t.Fatalf("at %d: %d packets left, want 1", at, len(got))
		}
	}
	if n, _ := tr.Len(); n != 0 {
		t.Fatalf("%d packets still queued", n)
	}
}

// run keeps every class in classes backlogged with size-byte packets for
// dur ns, dequeuing whenever the tree can send, and returns the bytes
// each class sent.
func run(t *testing.T, tr *Tree, classes []uint32, size int, dur int64) map[uint32]uint64 {
	t.Helper()
	sent := map[uint32]uint64{}
	seq := uint64(0)
	refill := func(now int64) {
		for _, c := range classes {
			for tr.byID[c].leafPackets < 4 {
				seq++
				if !tr.Enqueue(qdisctest.MakePacket(size, 0, uint64(c)<<32|seq&0xffffffff), uint32(size), now) {
					t.Fatal("refused")
				}
			}
		}
	}
	for now := int64(0); now < dur; {
		refill(now)
		pkt, sz, ok := tr.Dequeue(now)
		if !ok {
			now = tr.NextEvent()
			continue
		}
		sent[uint32(qdisctest.Seq(pkt)>>32)] += uint64(sz)
		pkt.DecRef()
	}
	tr.Purge()
	return sent
}

// TestPrioTakesExcess: two 20 Mbit/s leaves under a 100 Mbit/s parent,
// both able to borrow to 100: each gets its rate, and the prio-0 leaf all
// of the excess (the kernel measured 80.27/20.44 Mbit/s).
func TestPrioTakesExcess(t *testing.T) {
	const mbit = 125_000
	tr, err := NewTree(Config{Classes: []ClassConfig{
		{ID: 0x10001, Rate: 100 * mbit},
		{ID: 0x10010, Parent: 0x10001, Rate: 20 * mbit, Ceil: 100 * mbit, Prio: 0},
		{ID: 0x10020, Parent: 0x10001, Rate: 20 * mbit, Ceil: 100 * mbit, Prio: 1},
	}}, bySeq{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sent := run(t, tr, []uint32{0x10010, 0x10020}, 1500, 1e9)
	a, b := float64(sent[0x10010])*8/1e6, float64(sent[0x10020])*8/1e6
	t.Logf("prio 0: %.2f Mbit/s, prio 1: %.2f Mbit/s", a, b)
	if a < 79 || a > 81 || b < 19.5 || b > 20.5 {
		t.Errorf("shares %.2f/%.2f Mbit/s, want 80/20", a, b)
	}
}

// TestLateWakeUpsCatchUp: a timer that fires late (here 100 µs after every
// event, more than the 12.8 µs bucket of a 1 Gbit/s class) must not cost
// the class its rate: a late dequeue sends what on-time ones would have.
func TestLateWakeUpsCatchUp(t *testing.T) {
	const gbit = 125_000_000
	const size = 65536
	sentBy := func(late int64) uint64 {
		tr, err := NewTree(Config{Default: 0x10010, Classes: []ClassConfig{{ID: 0x10010, Rate: gbit}}}, bySeq{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Purge()
		var sent uint64
		seq := uint64(0)
		for now := int64(0); now < 100_000_000; {
			for tr.byID[0x10010].leafPackets < 8 {
				seq++
				tr.Enqueue(qdisctest.MakePacket(size, 0, 0x10010<<32|seq), size, now)
			}
			pkt, sz, ok := tr.Dequeue(now)
			if !ok {
				now = tr.NextEvent() + late
				continue
			}
			sent += uint64(sz)
			pkt.DecRef()
		}
		return sent
	}
	onTime, late := sentBy(0), sentBy(100_000)
	if onTime-late > size || late > onTime {
		t.Errorf("in 100 ms: %d bytes sent with late wake-ups, %d on time; want within one packet", late, onTime)
	}
}
