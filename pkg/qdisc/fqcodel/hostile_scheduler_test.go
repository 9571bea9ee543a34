package fqcodel_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestZeroLengthPacketsPastTheLimit: packets of 0 bytes leave every flow's
// backlog at 0, so "the fattest flow" must still be one that holds packets.
// Past the packet limit each enqueue drops exactly one packet, the counts
// stay exact, and every reference is released once.
func TestZeroLengthPacketsPastTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []uint32 // enqueued in turn on hashes spread over the flows
	}{
		{"all empty", []uint32{0, 0, 0, 0, 0, 0, 0, 0}},
		{"empty, then one with bytes", []uint32{0, 0, 0, 0, 100, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const limit = 4
			q, err := fqcodel.NewScheduler(fqcodel.Config{Limit: limit, Flows: 16}, 1514)
			if err != nil {
				t.Fatal(err)
			}
			var dropped int
			var pkts []*stack.PacketBuffer
			for i, size := range tc.sizes {
				pkt := qdisctest.MakePacket(int(size), 0, uint64(i))
				pkts = append(pkts, pkt)
				dropped += q.Enqueue(pkt.IncRef(), size, uint32(i)*0x1000_0000, 0)
			}
			if n, _ := q.Len(); int(n) != limit || dropped != len(tc.sizes)-limit {
				t.Errorf("queued %d, dropped %d; want %d queued, %d dropped", n, dropped, limit, len(tc.sizes)-limit)
			}
			q.Purge()
			for i, pkt := range pkts {
				if n := pkt.ReadRefs(); n != 1 {
					t.Errorf("packet %d: %d references after Purge, want the test's own 1", i, n)
				}
				pkt.DecRef()
			}
		})
	}
}
