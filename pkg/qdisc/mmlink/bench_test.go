package mmlink_test

import (
	"runtime"
	"sync/atomic"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// BenchmarkPerPacket is mmlink's cost per packet as the NIC's qdisc over
// a link that discards, beside fifo's, on a trace fast enough (50,000
// opportunities a ms, fastLink) that the trace is not what limits it.
func BenchmarkPerPacket(b *testing.B) {
	for _, tc := range []struct {
		name string
		make func(b *testing.B) stack.QueueingDiscipline
	}{
		{"fifo", func(*testing.B) stack.QueueingDiscipline {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			q := fifo.New(link, 1, 1000)
			b.Cleanup(q.Close)
			return q
		}},
		{"mmlink", func(b *testing.B) stack.QueueingDiscipline { return fastLink(b) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			q := tc.make(b)
			b.ReportAllocs()
			var hash atomic.Uint32
			b.RunParallel(func(pb *testing.PB) {
				pkt := qdisctest.MakePacket(1500, hash.Add(1), 0)
				defer pkt.DecRef()
				for pb.Next() {
					for q.WritePacket(pkt) != nil {
						runtime.Gosched() // full: let the dispatcher drain it
					}
				}
			})
		})
	}
}

// BenchmarkQueue is a packet's way through the queue alone, on a manual
// time: its enqueue, the opportunity that carries it, its dequeue, with
// held packets waiting (one opportunity a ms, one packet a ms). It
// allocates nothing.
func BenchmarkQueue(b *testing.B) {
	for _, held := range []int{1, 100, 10_000} {
		b.Run("held="+itoa(held), func(b *testing.B) {
			tr, err := mmlink.NewTrace("1ms", []uint32{1})
			if err != nil {
				b.Fatal(err)
			}
			q, err := mmlink.NewQueue(mmlink.Config{Trace: tr, Limit: uint32(held) + 1}, 1500, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer q.Purge()
			pkt := qdisctest.MakePacket(1500, 1, 0)
			defer pkt.DecRef()
			for range held {
				q.Enqueue(pkt.IncRef(), 1500, 0)
			}
			now := int64(0)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				now += 1_000_000
				if !q.Enqueue(pkt.IncRef(), 1500, now) {
					pkt.DecRef()
				}
				for {
					p, _, ok := q.Dequeue(now)
					if !ok {
						break
					}
					p.DecRef()
				}
			}
			b.StopTimer()
			if n, _ := q.Len(); n < held {
				b.Fatalf("%d held, want %d", n, held)
			}
		})
	}
}

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		if n /= 10; n == 0 {
			return s
		}
	}
}
