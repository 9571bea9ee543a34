package ingress_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestHostilePackets delivers frames a peer could send (0 to 65535 bytes,
// any header bytes and layout, delivered as IPv4, IPv6, ARP or anything
// else whatever the bytes say) to the receive-path shaper on a step clock,
// with one queue and with several (spread by a hash of the frames' own
// headers). Every frame goes up to the stack or is dropped and counted
// exactly once, only ARP and IPv6 frames may pass unshaped, and after
// Close no frame is referenced and no goroutine is left. 3000 frames a
// case in the long run (qdisctest.Long), the first 1000 by default.
func TestHostilePackets(t *testing.T) {
	packets := 1000
	if qdisctest.Long() {
		packets = 3000
	}
	for _, queues := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d queues", queues), func(t *testing.T) {
			before := runtime.NumGoroutine()
			clock := qdisctest.NewStepClock()
			link := qdisctest.NewLink(clock)
			link.Discard = true
			e, err := ingress.New(link, clock, tbf.Config{Rate: 10 * mbit, Burst: 16000, Limit: 48000, Lanes: queues})
			if err != nil {
				t.Fatal(err)
			}
			e.Attach(link)
			t.Cleanup(e.Close) // on failure; Close is idempotent
			rng := rand.New(rand.NewPCG(uint64(queues), 19))
			var pkts []*stack.PacketBuffer
			var control int // ARP and IPv6 frames: the only ones that may pass unshaped
			check := func() {
				t.Helper()
				st := e.Stats()
				up, _ := link.Count()
				if up+st.Drops+st.BacklogPackets != uint64(len(pkts)) || st.Packets > up || up > st.Packets+uint64(control) {
					t.Fatalf("%d frames delivered (%d ARP or IPv6); %d went up; Stats %+v", len(pkts), control, up, st)
				}
			}
			for i := 0; i < packets; i++ {
				proto := qdisctest.HostileProtocol(rng)
				pkt := qdisctest.HostilePacket(rng, qdisctest.HostileSize(rng))
				pkts = append(pkts, pkt)
				if proto == header.ARPProtocolNumber || proto == header.IPv6ProtocolNumber {
					control++
				}
				e.DeliverNetworkPacket(proto, pkt)
				qdisctest.WaitQuiescent(t, e)
				if rng.IntN(4) == 0 {
					clock.Advance(time.Duration(rng.Int64N(int64(4 * time.Millisecond))))
					clock.Fire()
					qdisctest.WaitQuiescent(t, e)
				}
				if i%50 == 0 {
					check()
				}
			}
			check()
			e.Close()
			check()
			st := e.Stats()
			if st.BacklogPackets != 0 || st.Drops == 0 {
				t.Errorf("after Close: Stats %+v; want no backlog, and drops (frames larger than the bucket)", st)
			}
			t.Logf("%d frames: %v", len(pkts), st)
			qdisctest.CheckReleased(t, pkts)
			qdisctest.WaitGoroutines(t, before)
		})
	}
}
