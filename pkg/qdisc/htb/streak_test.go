package htb_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb/htbtest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// bySeq classifies a packet by its sequence number.
type bySeq map[uint64]uint32

// Classify implements htb.Classifier.
func (c bySeq) Classify(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) uint32 {
	return c[qdisctest.Seq(pkt)]
}

// step is one step of a streak case: n packets of size bytes queued for
// class at ns after the start, or, with class 0, n single dequeues there.
type step struct {
	at    int64
	class uint32
	n     int
}

// TestStreakYields holds the tree's shortcut for the leaf that sent last
// (Dequeue takes from it again without htb_dequeue's walk while nothing
// the walk looks at has changed) to the model, one dequeue at a time,
// where a walk would pick another: a class of a lower prio, or the direct
// queue, queued between dequeues at one time; a class of a lower prio
// whose event falls due by a later dequeue. (A leaf's first packet
// spends its deficit, which starts at 0, and moves the round on: the
// shortcut starts with its second.)
func TestStreakYields(t *testing.T) {
	const (
		a = c10 // prio 1, never limiting
		b = c20 // prio 0
	)
	never := htb.ClassConfig{Rate: 10_000 * mbps, Burst: 100 * 1500, CBurst: 100 * 1500}
	tree := func(bc htb.ClassConfig) htb.Config {
		ac := never
		ac.ID, ac.Prio = a, 1
		bc.ID, bc.Prio = b, 0
		return htb.Config{Default: a, Classes: []htb.ClassConfig{ac, bc}}
	}
	// slowB sends three 1500-byte packets at once (at 0 tokens a class
	// still sends), then one every 1.2 ms.
	slowB := htb.ClassConfig{Rate: 10 * mbps, Burst: 3000, CBurst: 3000}
	for _, tc := range []struct {
		name  string
		cfg   htb.Config
		steps []step
	}{
		{"a lower prio queued between dequeues", tree(never), []step{
			{0, a, 4}, {0, 0, 2}, {0, b, 1}, {0, 0, 5},
		}},
		{"the direct queue queued between dequeues", tree(never), []step{
			{0, a, 4}, {0, 0, 2}, {0, handle, 1}, {0, 0, 5},
		}},
		{"a lower prio's event due by a later dequeue", tree(slowB), []step{
			{0, b, 4}, {0, a, 4}, {0, 0, 5}, {2 * ms, 0, 5},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const start = 1000 * sec
			named := bySeq{}
			tr, err := htb.NewTree(tc.cfg, named, start)
			if err != nil {
				t.Fatal(err)
			}
			m, err := htbtest.NewModel(tc.cfg, start)
			if err != nil {
				t.Fatal(err)
			}
			var seq uint64
			var got []htbtest.Departure
			for _, s := range tc.steps {
				now := start + s.at
				for range s.n {
					if s.class != 0 {
						pkt := qdisctest.MakePacket(1500, 0, seq)
						named[seq] = s.class
						if !tr.Enqueue(pkt, 1500, now) {
							pkt.DecRef()
						}
						m.Enqueue(now, seq, s.class, 1500)
						seq++
						continue
					}
					m.DequeueOne(now)
					if pkt, size, ok := tr.Dequeue(now); ok {
						got = append(got, htbtest.Departure{Seq: qdisctest.Seq(pkt), Class: m.ClassOf(named[qdisctest.Seq(pkt)]), Size: size, At: now})
						pkt.DecRef()
					}
				}
			}
			tr.Purge()
			if len(got) != len(m.Sent) {
				t.Errorf("the tree sent %d packets, Linux %d:\ntree  %v\nLinux %v", len(got), len(m.Sent), got, m.Sent)
			}
			for i := range min(len(got), len(m.Sent)) {
				if got[i] != m.Sent[i] {
					t.Errorf("departure %d: tree %+v, Linux %+v", i, got[i], m.Sent[i])
				}
			}
		})
	}
}

// heldLeaf is a leaf qdisc that holds its packets back, as a tbf leaf
// does between departures, counting how often it is asked.
type heldLeaf struct {
	q     []*stack.PacketBuffer
	asked int
}

func (h *heldLeaf) Enqueue(pkt *stack.PacketBuffer, _ uint32, _ int64) bool {
	h.q = append(h.q, pkt)
	return true
}
func (h *heldLeaf) Peek(int64, []uint32, []int64) int { return 0 }
func (h *heldLeaf) Dequeue(int64) (*stack.PacketBuffer, uint32, bool) {
	h.asked++
	return nil, 0, false
}
func (h *heldLeaf) Purge() (int, uint64) {
	n := len(h.q)
	for _, pkt := range h.q {
		pkt.DecRef()
	}
	h.q = nil
	return n, uint64(n) * 1500
}
func (h *heldLeaf) Len() (int, uint64) { return len(h.q), uint64(len(h.q)) * 1500 }
func (h *heldLeaf) Drops() uint64      { return 0 }

// TestStreakAsksHeldLeaf: a leaf of a lower prio whose qdisc holds its
// packets back is asked again at every dequeue, as htb_dequeue's walk
// asks it before it comes to the leaf that sends, even while that leaf
// sends packet after packet at one time.
func TestStreakAsksHeldLeaf(t *testing.T) {
	held := &heldLeaf{}
	cfg := htb.Config{Default: c10, Classes: []htb.ClassConfig{
		{ID: c10, Prio: 1, Rate: 10_000 * mbps, Burst: 100 * 1500, CBurst: 100 * 1500},
		{ID: c20, Prio: 0, Rate: 10_000 * mbps, Burst: 100 * 1500, CBurst: 100 * 1500, Leaf: held},
	}}
	named := bySeq{}
	const now = 1000 * sec
	tr, err := htb.NewTree(cfg, named, now)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Purge()
	for seq := range uint64(6) {
		named[seq] = c10
		if seq == 0 {
			named[seq] = c20
		}
		if !tr.Enqueue(qdisctest.MakePacket(1500, 0, seq), 1500, now) {
			t.Fatalf("packet %d refused", seq)
		}
	}
	dequeues := 0
	for {
		pkt, _, ok := tr.Dequeue(now)
		dequeues++
		if !ok {
			break
		}
		pkt.DecRef()
	}
	if held.asked != dequeues {
		t.Errorf("the held leaf was asked %d times in %d dequeues; htb_dequeue asks it at each", held.asked, dequeues)
	}
}

// TestStreakRunGiants: the packets of a streak's run that are longer than
// their class's burst count as giants, as many as one dequeue at a time
// counts, whatever their lengths. At 10 Tbit/s a 1250-byte burst is 1 ns
// of credit, what a 1500-byte packet costs, and a 600-byte one costs 0
// ns: a run that starts with a full bucket takes a giant and the packets
// after it up to the next giant, which ends it. Dequeues 1, 2 and 3 ns
// apart, with a giant every second and every third packet.
func TestStreakRunGiants(t *testing.T) {
	const tbit = 1_000_000 * mbps
	cfg := htb.Config{Default: c10, Classes: []htb.ClassConfig{
		{ID: c10, Rate: 10 * tbit, Burst: 1250, CBurst: 1250},
	}}
	const start, packets = 1000 * sec, 40
	for _, every := range []uint64{2, 3} {
		for _, step := range []int64{1, 2, 3} {
			var stats [2]htb.ClassStats
			giants := uint64(0)
			for i, batch := range []bool{false, true} {
				tr, err := htb.NewTree(cfg, bySeq{}, start)
				if err != nil {
					t.Fatal(err)
				}
				giants = 0
				for seq := range uint64(packets) {
					size := 600
					if seq%every == 1 {
						size = 1500
						giants++
					}
					if !tr.Enqueue(qdisctest.MakePacket(size, 0, seq), uint32(size), start) {
						t.Fatalf("packet %d refused", seq)
					}
				}
				sent := 0
				for now := start; sent < packets && now < start+sec; now += step {
					for {
						var pkts stack.PacketBufferList
						if batch {
							tr.DequeueBatch(now, &pkts, make([]uint32, 8))
						} else if pkt, _, ok := tr.Dequeue(now); ok {
							pkts.PushBack(pkt)
						}
						n := pkts.Len()
						pkts.DecRef()
						if sent += n; n == 0 {
							break
						}
					}
				}
				if sent != packets {
					t.Fatalf("batch %v: %d packets sent of %d", batch, sent, packets)
				}
				stats[i] = tr.Classes()[0]
			}
			if stats[0].Giants != giants {
				t.Errorf("a giant every %d packets, dequeues %d ns apart, one at a time: %d giants, want %d", every, step, stats[0].Giants, giants)
			}
			if stats[1] != stats[0] {
				t.Errorf("a giant every %d packets, dequeues %d ns apart, DequeueBatch: class %+v, one dequeue at a time %+v", every, step, stats[1], stats[0])
			}
		}
	}
}
