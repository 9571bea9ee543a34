package fifo_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestHostilePackets writes packets a sandbox could write (0 to 65535
// bytes, any header bytes and layout) to fifo, its lower link plugged now
// and then so that its queues fill and refuse: every packet is sent or
// refused and counted once, and after Close no packet is referenced and no
// dispatcher is left. 3000 packets a case in the long run
// (qdisctest.Long), the first 1000 or so (whole rounds) by default.
func TestHostilePackets(t *testing.T) {
	packets := 1000
	if qdisctest.Long() {
		packets = 3000
	}
	for _, queues := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d queues", queues), func(t *testing.T) {
			const queueLen = 8
			before := runtime.NumGoroutine()
			var plug qdisctest.Plug
			link := qdisctest.NewLink(nil)
			link.Discard = true
			link.OnWrite = plug.Wait
			d := fifo.New(link, queues, queueLen)
			t.Cleanup(d.Close) // on failure; Close is idempotent
			rng := rand.New(rand.NewPCG(uint64(queues), 19))
			var o qdisctest.Offered
			write := func() {
				pkt := qdisctest.HostilePacket(rng, qdisctest.HostileSize(rng))
				o.Offer(t, pkt, d.WritePacket(pkt))
			}
			for len(o.Pkts) < packets {
				// A round: hold the dispatchers in the link with a
				// packet each, so that what follows fills the queues.
				plug.While(func() {
					write()
					plug.WaitStuck(t, 1)
					for range rng.IntN(4 * queues * queueLen) {
						write()
					}
				})
				qdisctest.WaitQuiescent(t, d)
				st := d.Stats()
				o.CheckConserved(t, st)
				sent, bytes := link.Count()
				if st.Packets != uint64(o.Accepted) || st.Bytes != o.AcceptedBytes || sent != st.Packets || bytes != st.Bytes || st.Drops != uint64(o.Refused) {
					t.Fatalf("%d packets (%d bytes) accepted, %d refused; the link has %d (%d bytes); Stats %+v", o.Accepted, o.AcceptedBytes, o.Refused, sent, bytes, st)
				}
			}
			d.Close()
			o.CheckConserved(t, d.Stats())
			if o.Refused == 0 || o.Accepted == 0 {
				t.Errorf("%d accepted, %d refused: the run did not exercise both paths", o.Accepted, o.Refused)
			}
			o.Release(t)
			qdisctest.WaitGoroutines(t, before)
		})
	}
}
