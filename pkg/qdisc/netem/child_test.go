package netem

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestChildTimedByParent holds netem built as a child under a shaper
// (Kind.Queue: an htb class's leaf) to the times its parent passes: it
// asks for them (not ArrivalBlind), each packet is due its delay after
// the now Enqueue was given, not a nanosecond before, NextEvent names that
// time, and every packet's reference comes back once, sent or purged.
func TestChildTimedByParent(t *testing.T) {
	for _, tc := range []struct {
		words    string
		arrivals []int64
		// due are the departures when the parent dequeues at each
		// NextEvent.
		due []int64
	}{
		{"delay 100ms", []int64{0, 5 * ms}, []int64{100 * ms, 105 * ms}},
		{"delay 10ms limit 5", []int64{3 * ms}, []int64{13 * ms}},
		{"limit 10", []int64{0, 1}, []int64{0, 0}}, // no delay: due at once
	} {
		t.Run(tc.words, func(t *testing.T) {
			o, err := Kind.Parse(tc.words)
			if err != nil {
				t.Fatal(err)
			}
			cq, err := Kind.Queue(o, 1514)
			if err != nil {
				t.Fatal(err)
			}
			if b, ok := cq.(qdisc.ArrivalBlind); ok && b.ArrivalBlind() {
				t.Fatal("a child netem has no clock of its own, yet says its parent need not read one")
			}
			sh := cq.(qdisc.Shaper)
			var pkts []*stack.PacketBuffer
			for i, at := range tc.arrivals {
				p := qdisctest.MakePacket(1000, 0, uint64(i))
				p.IncRef() // the test's own, for CheckReleased
				pkts = append(pkts, p)
				if !cq.Enqueue(p, 1000, at) {
					t.Fatalf("packet %d refused", i)
				}
			}
			now := tc.arrivals[0]
			for i, due := range tc.due {
				pkt, _, ok := cq.Dequeue(now)
				if !ok {
					next := sh.NextEvent()
					if next != due {
						t.Fatalf("packet %d: NextEvent %d, want %d", i, next, due)
					}
					if _, _, ok := cq.Dequeue(next - 1); ok {
						t.Fatalf("packet %d left at %d, 1 ns early", i, next-1)
					}
					now = next
					if pkt, _, ok = cq.Dequeue(now); !ok {
						t.Fatalf("packet %d not sent at its NextEvent %d", i, now)
					}
				}
				if now != due {
					t.Fatalf("packet %d left at %d, want %d", i, now, due)
				}
				pkt.DecRef()
			}
			cq.Purge()
			qdisctest.CheckReleased(t, pkts)
		})
	}
}
