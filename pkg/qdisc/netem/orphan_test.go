package netem_test

import (
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/netem"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestOrphan: as netem_enqueue orphans an skb it will hold for a time, a
// packet netem delays or rates is released by its sender's reference as
// WritePacket returns (a sender's small queues count it no longer), and
// still reaches the link, once, at its time. A change to a delay turns it
// on.
func TestOrphan(t *testing.T) {
	for _, tc := range []struct {
		words, change string
	}{
		{"delay 100ms", ""},
		{"delay 50ms 5ms", ""},
		{"rate 1mbit", ""},
		{"loss 0%", "delay 100ms"},
	} {
		t.Run(tc.words+"/"+tc.change, func(t *testing.T) {
			clock := qdisctest.NewStepClock()
			link := qdisctest.NewLink(clock)
			c, err := netem.Parse(tc.words)
			if err != nil {
				t.Fatal(err)
			}
			d, err := netem.New(link, clock, c)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if tc.change != "" {
				c, err := netem.Parse(tc.change)
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Change(c); err != nil {
					t.Fatal(err)
				}
			}
			var released atomic.Int32
			pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
				Payload:   buffer.MakeWithData(make([]byte, 1000)),
				OnRelease: func() { released.Add(1) },
			})
			if err := d.WritePacket(pkt); err != nil {
				t.Fatal(err)
			}
			pkt.DecRef()
			qdisctest.WaitQuiescent(t, d)
			if n := link.NumRecords(); n != 0 {
				t.Fatalf("%d packets on the link before their time", n)
			}
			if released.Load() != 1 {
				t.Errorf("not released as WritePacket returned, while netem holds it")
			}
			clock.Advance(time.Second)
			clock.Fire()
			qdisctest.WaitQuiescent(t, d)
			if n := link.NumRecords(); n != 1 {
				t.Fatalf("%d packets on the link, want 1", n)
			}
			if released.Load() != 1 {
				t.Errorf("released %d times once sent, want once", released.Load())
			}
		})
	}
}

// TestOrphanAsChild: netem grafted under another kind's shaper (Kind.Queue:
// an htb leaf, a tbf's child) orphans what it holds for a time as netem
// at the root does: the sender's packet, whose reference its parent's
// lane hands over, is released as it is queued, while netem holds a
// clone that leaves at its delay. A packet refused at the limit stays the
// caller's; one that needs no holding (no delay, jitter or rate) is held
// itself.
func TestOrphanAsChild(t *testing.T) {
	for _, tc := range []struct {
		words    string
		orphaned bool
	}{
		{"delay 50ms limit 1", true},
		{"rate 1mbit limit 1", true},
		{"loss 0% limit 1", false},
	} {
		t.Run(tc.words, func(t *testing.T) {
			o, err := netem.Kind.Parse(tc.words)
			if err != nil {
				t.Fatal(err)
			}
			q, err := netem.Kind.Queue(o, 1514)
			if err != nil {
				t.Fatal(err)
			}
			var released [2]atomic.Int32
			pkts := make([]*stack.PacketBuffer, 2)
			for i := range pkts {
				pkts[i] = stack.NewPacketBuffer(stack.PacketBufferOptions{
					Payload:   buffer.MakeWithData(make([]byte, 1000)),
					OnRelease: func() { released[i].Add(1) },
				})
			}
			if !q.Enqueue(pkts[0], 1000, 0) {
				t.Fatal("the first packet refused")
			}
			if got, want := released[0].Load() == 1, tc.orphaned; got != want {
				t.Errorf("the sender's packet released as it was queued: %v, want %v", got, want)
			}
			if q.Enqueue(pkts[1], 1000, 0) {
				t.Fatal("a packet past the limit of 1 queued")
			}
			if released[1].Load() != 0 {
				t.Error("a refused packet was released: it is the caller's")
			}
			pkts[1].DecRef()
			pkt, _, ok := q.Dequeue(int64(time.Second))
			if !ok {
				t.Fatal("nothing left after a second")
			}
			pkt.DecRef()
			if released[0].Load() != 1 || released[1].Load() != 1 {
				t.Errorf("released %d and %d times, want once each", released[0].Load(), released[1].Load())
			}
		})
	}
}
