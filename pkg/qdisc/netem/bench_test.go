package netem_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/netem"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// BenchmarkPerPacket is netem's cost per packet with no delay, beside
// fifo's, as the NIC's qdisc over a link that discards (issue 49: at most
// 1.3 times fifo's).
func BenchmarkPerPacket(b *testing.B) {
	for _, tc := range []struct {
		name string
		make func(link *qdisctest.Link) (stack.QueueingDiscipline, error)
	}{
		{"fifo", func(link *qdisctest.Link) (stack.QueueingDiscipline, error) {
			return fifo.New(link, 1, 1000), nil
		}},
		{"netem", func(link *qdisctest.Link) (stack.QueueingDiscipline, error) {
			c, err := netem.Parse("")
			if err != nil {
				return nil, err
			}
			return netem.New(link, tcpip.NewStdClock(), c)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			q, err := tc.make(link)
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
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

// BenchmarkHeld is a packet's enqueue and dequeue with 1,000, 10,000 and
// 100,000 packets held 100 ms, with and without jitter (the heap), and
// its allocations: constant without jitter, logarithmic in what is held
// with it, and none once the queue has grown.
func BenchmarkHeld(b *testing.B) {
	for _, delay := range []string{"delay 100ms", "delay 100ms 50ms"} {
		for _, held := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/%d", delay, held), func(b *testing.B) {
				benchHeld(b, delay, held)
			})
		}
	}
}

// benchHeld runs BenchmarkHeld with held packets held by delay.
func benchHeld(b *testing.B, delay string, held int) {
	c, err := netem.Parse(fmt.Sprintf("limit %d %s seed 1", 2*held, delay))
	if err != nil {
		b.Fatal(err)
	}
	q, err := netem.NewQueue(c)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Purge()
	pkt := qdisctest.MakePacket(1500, 1, 0)
	defer pkt.DecRef()
	step := int64(100*time.Millisecond) / int64(held) // held within the delay
	now := int64(0)
	for range held {
		q.Enqueue(pkt.IncRef(), 1500, now)
		now += step
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		q.Enqueue(pkt.IncRef(), 1500, now)
		now += step
		for {
			p, _, ok := q.Dequeue(now)
			if !ok {
				break
			}
			p.DecRef()
		}
	}
	b.StopTimer()
	if n, _ := q.Len(); n < held/2 {
		b.Fatalf("%d held, want about %d", n, held)
	}
}
