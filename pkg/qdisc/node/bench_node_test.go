package node_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/node"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// BenchmarkNodeClass: the cost per packet of a sandbox's NIC as a class
// of a node of 100 busy sandboxes (the others publish as busy from a
// goroutine, as their own processes would), its qdisc runsc's fifo over
// its class's uplink, its Member stepped every Period on the real clock,
// the node's allocator too; and, as the bar, a sandbox-local tbf.
// Neither limits: the lower link discards. The timer covers the packets,
// the steps and the drain, not the node's set-up (the joins, the first
// index) nor the teardown.
func BenchmarkNodeClass(b *testing.B) {
	b.Run("node-100", func(b *testing.B) {
		tree, _ := htb.ParseScript("class root classid 1:1 rate 100000gbit")
		a, err := node.NewAllocator(tree, 128)
		if err != nil {
			b.Fatal(err)
		}
		defer a.Close()
		var others []*node.Member
		var mine *node.Member
		var mineClass htb.ClassConfig
		for i := range 100 {
			c := htb.ClassConfig{ID: 1<<16 | uint32(100+i), Parent: 1<<16 | 1, Rate: 125_000 * mbit, Ceil: 100_000_000 * mbit, Prio: uint8(i % 3)}
			_, c, f, err := a.Join(c, selfProcess{}, node.Now())
			if err != nil {
				b.Fatal(err)
			}
			seat, err := node.MapSeat(f)
			if err != nil {
				b.Fatal(err)
			}
			defer seat.Close()
			m := node.NewMember(seat, c)
			if i == 0 {
				mine, mineClass = m, c
			} else {
				others = append(others, m)
			}
		}
		publish := func() {
			for _, m := range others {
				m.Share(node.Now(), node.Counters{Busy: true})
			}
		}
		// The allocator's first step, which indexes the tree, is the
		// node's start-up, not a packet's cost: it runs before the timer.
		publish()
		stepper := node.StepEvery(a, tcpip.NewStdClock(), node.Now)
		defer stepper.Close()
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				publish()
			}
		}()
		defer func() { close(stop); <-done }()
		link := qdisctest.NewLink(nil)
		link.Discard = true
		up := node.NewUplink(link, mineClass.Rate)
		q := fifo.NewWithClock(up, tcpip.NewStdClock(), 1, 1000)
		r := node.Run(mine, up, tcpip.NewStdClock(), node.Now)
		defer r.Close()
		defer q.Close()
		b.ResetTimer()
		qdisctest.BenchWritePacket(b, q)
		qdisctest.WaitQuiescent(b, q)
		b.StopTimer()
	})
	b.Run("local-tbf", func(b *testing.B) {
		link := qdisctest.NewLink(nil)
		link.Discard = true
		q, err := tbf.New(link, tcpip.NewStdClock(), tbf.Config{Rate: 1_000_000 * mbit, Burst: 1 << 20, Limit: 1000 * 1514})
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close()
		b.ResetTimer()
		qdisctest.BenchWritePacket(b, q)
		qdisctest.WaitQuiescent(b, q)
		b.StopTimer()
	})
}
