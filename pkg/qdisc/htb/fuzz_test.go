package htb

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// departure is a packet a tree handed over: its sequence number and size.
type departure struct {
	seq  uint64
	size uint32
}

// qdiscBatch is a lane's batch.
const qdiscBatch = qdisc.BatchSize

// randomTree builds a valid random class tree of up to 8 classes from
// src: parents before children, no deeper than MaxDepth, rates from 1
// Mbit/s to 1 Gbit/s, ceils at or above them, any prio, quantum, burst,
// some quotas, small leaf queues so that they overflow, and a default
// that may be missing (the direct queue).
func randomTree(src qdisctest.Source) Config {
	const mbit = 125_000
	n := 1 + src.IntN(8)
	cfg := Config{LeafLimit: uint32(1 + src.IntN(16)), DirectQLen: uint32(1 + src.IntN(16))}
	depth := map[uint32]int{}
	for i := range n {
		id := uint32(0x10001 + i)
		c := ClassConfig{ID: id, Rate: uint64(1+src.IntN(1000)) * mbit, Prio: uint8(src.IntN(NumPrio))}
		if i > 0 && src.IntN(3) != 0 {
			p := cfg.Classes[src.IntN(i)].ID
			if depth[p] < MaxDepth-2 {
				c.Parent, depth[id] = p, depth[p]+1
			}
		}
		c.Ceil = c.Rate + uint64(src.IntN(4))*c.Rate
		if src.IntN(2) == 0 {
			c.Burst, c.CBurst = uint32(1+src.IntN(100_000)), uint32(1+src.IntN(100_000))
		}
		if src.IntN(3) == 0 {
			c.Quantum = uint32(1 + src.IntN(100_000))
		}
		if src.IntN(5) == 0 {
			c.Quota = &Quota{Bytes: uint64(1 + src.IntN(200_000)), Period: time.Duration(1+src.IntN(100)) * time.Millisecond, Rate: uint64(src.IntN(3)) * mbit}
		}
		cfg.Classes = append(cfg.Classes, c)
	}
	if src.IntN(4) != 0 {
		cfg.Default = cfg.Classes[src.IntN(n)].ID
	}
	return cfg
}

// FuzzTree drives random class trees with random traffic, changes and
// purges on a step clock: no panic; every packet accepted is dequeued,
// queued or purged, and every one refused counted (conservation); the tree
// never hands over a packet while it says it waits, nor, when a dequeue
// found nothing, waits for a time already past; and every reference comes back (TestMain's leak check).
// A twin of the tree, given the same packets, changes and purges, is
// drained by DequeueBatch, in batches of random sizes, as a lane drains
// it: it hands over the same packets in the same order, and its classes
// end every step as the tree's do.
func FuzzTree(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x03\x01\x02\x05\x00\x07\x10\x20\x30\x40\x50\x60\x70\x80\x90\xa0"))
	f.Add([]byte("\x07\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\xff\xfe\xfd\xfc\xfb\xfa"))
	f.Fuzz(fuzzTree)
}

// fuzzTree is FuzzTree's body.
func fuzzTree(t *testing.T, data []byte) {
	{
		src := qdisctest.NewInput(data)
		cfg := randomTree(src)
		tr, err := NewTree(cfg, bySeq{}, 0)
		if err != nil {
			t.Fatalf("a valid random tree was refused: %v\n%+v", err, cfg)
		}
		tw, err := NewTree(cfg, bySeq{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer tw.Purge()
		// twinDrain dequeues from tw as a lane does, a batch at a time,
		// up to len(want) packets, or, if all, until it hands over
		// nothing, and fails t unless it hands over the packets want (by
		// seq and size).
		twinDrain := func(now int64, want []departure, all bool) {
			var got []departure
			for all || len(got) < len(want) {
				var pkts stack.PacketBufferList
				sizes := make([]uint32, 1+src.IntN(2*qdiscBatch))
				if !all {
					sizes = sizes[:min(len(sizes), len(want)-len(got))]
				}
				n := tw.DequeueBatch(now, &pkts, sizes)
				i := 0
				for _, pkt := range pkts.AsSlice() {
					got = append(got, departure{qdisctest.Seq(pkt), sizes[i]})
					i++
				}
				pkts.Reset()
				if i != n {
					t.Fatalf("DequeueBatch returned %d, appended %d packets", n, i)
				}
				if n < len(sizes) {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("at %d ns, DequeueBatch handed over %v, Dequeue %v", now, got, want)
			}
		}
		var accepted, refused, sent, purged, purges int
		changed := false
		// through counts the bytes each leaf sent, to hold it to its ceil.
		through := map[uint32]uint64{}
		leafOf := func(pkt *stack.PacketBuffer) uint32 {
			id := uint32(qdisctest.Seq(pkt) >> 32)
			if cl, ok := tr.byID[id]; ok && cl.level == 0 {
				return id
			}
			if id != 0x10000 && tr.def != nil {
				return tr.def.id
			}
			return 0 // the direct queue
		}
		var now int64
		held := map[*stack.PacketBuffer]bool{}
		seq := uint64(0)
		for op := 0; op < 400 && (op < 50 || src.Len() > 0); op++ {
			switch src.IntN(8) {
			case 0, 1, 2: // a packet to a class, a missing one, an inner one or X:0
				id := uint32(0x10000 + src.IntN(len(cfg.Classes)+2))
				size := 64 + src.IntN(65536)
				seq++
				pkt := qdisctest.MakePacket(64, 0, uint64(id)<<32|seq)
				twin := qdisctest.MakePacket(64, 0, uint64(id)<<32|seq)
				ok := tr.Enqueue(pkt, uint32(size), now)
				if ok {
					accepted++
					held[pkt] = true
				} else {
					refused++
					pkt.DecRef()
				}
				if tw.Enqueue(twin, uint32(size), now) != ok {
					t.Fatalf("the twin took packet %d (%d bytes) where the tree did not, or the other way", seq, size)
				} else if !ok {
					twin.DecRef()
				}
			case 3, 4: // time passes
				now += int64(src.IntN(20_000_000))
			case 5: // the dequeues a qdisc_run makes, or some of them
				var out []departure
				limit, all := 1+src.IntN(64), src.IntN(2) == 0
				empty := false // the last Dequeue handed over nothing
				for all || len(out) < limit {
					pkt, size, ok := tr.Dequeue(now)
					if empty = !ok; empty {
						break
					}
					if !held[pkt] {
						t.Fatal("dequeued a packet the tree was not holding")
					}
					through[leafOf(pkt)] += uint64(size)
					delete(held, pkt)
					sent++
					out = append(out, departure{qdisctest.Seq(pkt), size})
					pkt.DecRef()
				}
				twinDrain(now, out, empty)
				if n, _ := tr.Len(); empty && n > 0 && tr.armed && tr.NextEvent() <= now {
					t.Fatalf("holds %d packets, waiting for %d, not after now %d", n, tr.NextEvent(), now)
				}
			case 6: // a change in place
				c := cfg.Classes[src.IntN(len(cfg.Classes))]
				c.Rate = uint64(1+src.IntN(1000)) * 125_000
				c.Ceil = c.Rate * uint64(1+src.IntN(3))
				c.Prio = uint8(src.IntN(NumPrio))
				changed = true
				if err := tr.ChangeClass(c, now); err != nil {
					t.Fatalf("ChangeClass(%+v): %v", c, err)
				}
				if err := tw.ChangeClass(c, now); err != nil {
					t.Fatalf("the twin's ChangeClass(%+v): %v", c, err)
				}
			case 7:
				if src.IntN(8) == 0 {
					n, _ := tr.Purge()
					tw.Purge()
					purged += n
					purges++
					for pkt := range held {
						delete(held, pkt) // released by Purge
					}
				}
			}
			if !changed {
				checkCeils(t, tr, through, now, purges)
			}
			n, _ := tr.Len()
			if n != accepted-sent-purged || n != len(held) {
				t.Fatalf("after op %d: Len %d, want accepted %d - sent %d - purged %d (held %d)", op, n, accepted, sent, purged, len(held))
			}
			if d := tr.Drops(); d != uint64(refused) {
				t.Fatalf("Drops %d, %d refused", d, refused)
			}
			if diff := cmp.Diff(tr.Classes(), tw.Classes()); diff != "" {
				t.Fatalf("after op %d, the classes of the tree drained by Dequeue and of its twin drained by DequeueBatch differ (-Dequeue +DequeueBatch):\n%s", op, diff)
			}
		}
		// Everything queued leaves in the end (no class is starved forever:
		// the longest wait is a quota's period or mbuffer).
		for i := 0; len(held) > 0; i++ {
			if i > 100_000 {
				t.Fatalf("%d packets never left", len(held))
			}
			pkt, _, ok := tr.Dequeue(now)
			if !ok {
				now = tr.NextEvent()
				continue
			}
			delete(held, pkt)
			pkt.DecRef()
		}
		if n, b := tr.Len(); n != 0 || b != 0 {
			t.Fatalf("empty tree reports %d packets %d bytes", n, b)
		}
		_ = fmt.Sprint(tr.Classes())
	}
}

// checkCeils fails t if a leaf sent more by now than its ceil allows: its
// cburst, what the ceil sends in the time, and the one packet that may
// overdraw the bucket (at most 65600 bytes here), and one more after each
// of purges purges: htb_reset makes every class CanSend, whatever its
// debt, so it sends a packet before its next charge puts it back.
func checkCeils(t *testing.T, tr *Tree, through map[uint32]uint64, now int64, purges int) {
	t.Helper()
	for _, cl := range tr.classes {
		if cl.level != 0 {
			continue
		}
		allowed := uint64(cl.cfg.CBurst) + cl.cfg.Ceil*uint64(now)/1e9 + uint64(1+purges)*65600
		if through[cl.id] > allowed {
			t.Fatalf("leaf %x sent %d bytes by %d ns, over its ceil's %d", cl.id, through[cl.id], now, allowed)
		}
	}
}
