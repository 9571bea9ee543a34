package runscflags_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestLockOrder holds the lock order written in package dispatch's doc
// (NIC, Endpoint, Discipline, Lane, then the leaves): no pass runs, and
// nothing is written to the link or delivered to the stack, while a lock
// of it is held. The link and the stack here call back into the NIC's
// control from every write and every delivery, taking the order from the
// top (Config: NIC.mu; Show: Endpoint, Discipline, Lane), as a stack that
// answers a packet or a monitor that reads the counters would, while
// `runsc qdisc change` changes both directions' ceilings under standing
// queues. A pass run by Change under NIC.mu deadlocks on the callback;
// one that runs while a lane's lock is held deadlocks on Show.
func TestLockOrder(t *testing.T) {
	flags := map[string]string{
		"qdisc": "tbf", "qdisc-tbf-rate": "1mbit", "qdisc-tbf-burst": "3028", "qdisc-tbf-latency": "200ms",
		"qdisc-ingress-rate": "1mbit", "qdisc-ingress-burst": "3028", "qdisc-ingress-latency": "200ms",
	}
	p := newLiveNIC(t, "eth0", 1500, flags)
	n, clock, link, q, in := p.NIC, p.clock, p.link, p.q, p.in
	link.Discard = true
	up := qdisctest.NewLink(clock) // the stack the ingress shaper delivers to
	up.Discard = true
	in.Attach(up)

	var callbacks atomic.Int64
	callback := func() {
		_ = n.Config()
		_ = n.Show()
		callbacks.Add(1)
	}
	link.OnWrite = callback
	up.Inspect = func(*stack.PacketBuffer) { callback() }

	// Each step queues packets in both directions past the bucket, so that
	// both lanes wait for their departures, then changes both ceilings
	// (alternately up and down), then lets 2 ms pass.
	const steps = 150
	changes := [][]string{
		{"--qdisc-tbf-rate=2mbit", "--qdisc-ingress-rate=2mbit"},
		{"--qdisc-tbf-rate=1mbit", "--qdisc-ingress-rate=1mbit"},
	}
	done := make(chan error, 1)
	go func() {
		for i := 0; i < steps; i++ {
			for k := 0; k < 4; k++ {
				pkt := qdisctest.MakePacket(1000, 0, uint64(i*4+k))
				_ = q.WritePacket(pkt)
				pkt.DecRef()
				pkt = qdisctest.MakePacket(1000, 0, uint64(i*4+k))
				in.DeliverNetworkPacket(header.IPv4ProtocolNumber, pkt)
				pkt.DecRef()
			}
			if _, err := runscflags.Change([]*runscflags.NIC{n}, changes[i%2]); err != nil {
				done <- fmt.Errorf("step %d: Change: %v", i, err)
				return
			}
			clock.Advance(2 * time.Millisecond)
			qdisctest.WaitQuiescent(t, in)
			qdisctest.WaitQuiescent(t, q.(qdisctest.Quiescer))
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute): // real time: a deadlock, not a speed
		buf := make([]byte, 1<<20)
		t.Fatalf("changes and callbacks deadlocked; goroutines:\n%s", buf[:runtime.Stack(buf, true)])
	}
	q.Close()
	in.Close()
	egress, ingress := n.Stats()
	if egress.Overlimits == 0 || ingress.Overlimits == 0 {
		t.Errorf("the lanes never waited for their buckets (egress %v, ingress %v): the changes met no standing queue", egress, ingress)
	}
	if c := callbacks.Load(); c < steps {
		t.Errorf("%d callbacks from writes and deliveries in %d steps; want at least one a step", c, steps)
	}
}
