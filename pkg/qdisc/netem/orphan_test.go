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
