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
// its class's uplink, its Member stepped every Period on the real clock;
// and, as the bar, a sandbox-local tbf. Neither limits: the lower link
// discards. The timer covers the packets, the steps and the drain, not
// the node's set-up (the board, the joins, the others' first step) nor
// the teardown.
func BenchmarkNodeClass(b *testing.B) {
	b.Run("node-100", func(b *testing.B) {
		mem := alignedMem(node.Size(128))
		board, err := node.Format(mem, 128)
		if err != nil {
			b.Fatal(err)
		}
		tree, _ := htb.ParseScript("class root classid 1:1 rate 100000gbit")
		if err := board.SetTree(tree); err != nil {
			b.Fatal(err)
		}
		var others []*node.Member
		var mine *node.Member
		var mineClass htb.ClassConfig
		for i := range 100 {
			c := htb.ClassConfig{ID: 1<<16 | uint32(100+i), Parent: 1<<16 | 1, Rate: 125_000 * mbit, Ceil: 100_000_000 * mbit, Prio: uint8(i % 3)}
			slot, err := board.Join(c, uint64(i+1), node.Now(), int64(node.Stale))
			if err != nil {
				b.Fatal(err)
			}
			m, err := node.NewMember(board, slot, uint64(i+1), c)
			if err != nil {
				b.Fatal(err)
			}
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
		// The others' first step, which reads and indexes the tree (tens
		// of milliseconds for the 99), is their start-up, not a packet's
		// cost: it runs before the timer.
		publish()
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
