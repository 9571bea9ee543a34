package ingress_test

import (
	"runtime"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// BenchmarkDeliver is the receive path's cost per packet, from Deliver
// to the stack (a link that discards), through a bucket that never limits
// (10 Tbit/s): full-size TCP frames, and 64 KiB GRO aggregates of 45
// segments, which are charged as those segments.
func BenchmarkDeliver(b *testing.B) {
	for _, tc := range []struct {
		name string
		pkt  func() *stack.PacketBuffer
	}{
		{"frame", func() *stack.PacketBuffer { return received(false, 1448, 1) }},
		{"aggregate", func() *stack.PacketBuffer { return received(false, 45*1448, 1) }},
		{"aggregateIPv6", func() *stack.PacketBuffer { return received(true, 45*1428, 1) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			e, err := ingress.New(link, tcpip.NewStdClock(), tbf.Config{Rate: 10_000_000 * mbit, Burst: 1000 * 1514})
			if err != nil {
				b.Fatal(err)
			}
			e.Attach(link)
			defer e.Close()
			pkt := tc.pkt()
			defer pkt.DecRef()
			proto := pkt.NetworkProtocolNumber
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for e.Deliver(proto, pkt) != nil { // the queue is full
					runtime.Gosched()
				}
			}
			qdisctest.WaitQuiescent(b, e)
		})
	}
}

// BenchmarkDeliverNoCeiling is the receive path's cost per packet with no
// ceiling: what every runsc NIC pays for an ingress endpoint that
// `runsc qdisc change` can later shape (docs/results.md: Changing a running
// sandbox's shaping).
func BenchmarkDeliverNoCeiling(b *testing.B) {
	link := qdisctest.NewLink(nil)
	link.Discard = true
	e, err := ingress.New(link, tcpip.NewStdClock(), tbf.Config{})
	if err != nil {
		b.Fatal(err)
	}
	e.Attach(link)
	defer e.Close()
	pkt := received(false, 1448, 1)
	defer pkt.DecRef()
	proto := pkt.NetworkProtocolNumber
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := e.Deliver(proto, pkt); err != nil {
			b.Fatal(err)
		}
	}
}
