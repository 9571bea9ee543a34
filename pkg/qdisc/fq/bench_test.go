package fq_test

import (
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fq"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// BenchmarkFullQueue is the cost of a packet arriving at a full fq: a
// flood of one-packet flows (a UDP sender's random ports), where each
// arrival makes room from the longest of flows active, and a few bulk
// flows. fq is under its lane's lock here, so this is what a flooding
// sandbox makes its own sender pay.
func BenchmarkFullQueue(b *testing.B) {
	for _, tc := range []struct {
		name  string
		flows uint32
	}{{"4 bulk flows", 4}, {"10000 one-packet flows", 1 << 30}} {
		b.Run(tc.name, func(b *testing.B) {
			q, err := fq.NewQueue(fq.Config{FlowLimit: 10000}, mtu, nil)
			if err != nil {
				b.Fatal(err)
			}
			send := func(i int) {
				p := qdisctest.MakePacket(100, uint32(i)%tc.flows+1, uint64(i))
				q.Enqueue(p, 100, 0)
			}
			for i := range 10000 {
				send(i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				send(10000 + i)
			}
			b.StopTimer()
			q.Purge()
		})
	}
}
