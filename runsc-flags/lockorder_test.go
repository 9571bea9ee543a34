package runscflags_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestLockOrder holds the lock order written in package dispatch's doc
// (runsc's NIC set, NIC, Endpoint, Discipline, Lane, then the leaves)
// for every kind, in
// both directions: no pass runs, and nothing is written to the link or
// delivered to the stack, while a lock of it is held. The link and the
// stack here call back into the NIC's control from every write and every
// delivery, taking the order from the top (Config: NIC.mu; Show:
// Endpoint, Discipline, Lane), as a stack that answers a packet or a
// monitor that reads the counters would, while `runsc qdisc change`
// changes both directions under standing queues. A pass run by Change
// under NIC.mu deadlocks on the callback; one that runs while a lane's
// lock is held deadlocks on Show.
func TestLockOrder(t *testing.T) {
	// 4 packets of 1000 bytes every 2 ms offer 16 Mbit/s in each
	// direction, past every rate below.
	const htb = "qdisc default 20; class root classid 1:1 rate 8mbit; class parent 1:1 classid 1:10 rate 4mbit; " +
		"class parent 1:1 classid 1:20 rate 4mbit; filter dst 10.0.0.0/8 classid 1:10"
	for _, tc := range []struct {
		name    string
		flags   map[string]string
		changes [2][]string // alternately, up and down
	}{
		{"tbf", map[string]string{
			"qdisc": "tbf", "qdisc-tbf-rate": "1mbit", "qdisc-tbf-burst": "3028", "qdisc-tbf-latency": "200ms",
			"qdisc-ingress-rate": "1mbit", "qdisc-ingress-burst": "3028", "qdisc-ingress-latency": "200ms",
		}, [2][]string{
			{"--qdisc-tbf-rate=2mbit", "--qdisc-ingress-rate=2mbit"},
			{"--qdisc-tbf-rate=1mbit", "--qdisc-ingress-rate=1mbit"},
		}},
		{"tbf with fq_codel", map[string]string{
			"qdisc": "tbf", "qdisc-tbf-rate": "1mbit", "qdisc-tbf-burst": "3028", "qdisc-tbf-child": "fq_codel",
			"qdisc-ingress-rate": "1mbit", "qdisc-ingress-burst": "3028", "qdisc-ingress-latency": "200ms",
		}, [2][]string{
			{"--qdisc-tbf-rate=2mbit", "--qdisc-fq-codel-target=10ms", "--qdisc-ingress-rate=2mbit"},
			{"--qdisc-tbf-rate=1mbit", "--qdisc-fq-codel-target=5ms", "--qdisc-ingress-rate=1mbit"},
		}},
		{"fifo under a ceiling", map[string]string{
			"qdisc": "fifo", "qdisc-ingress-rate": "1mbit", "qdisc-ingress-burst": "3028", "qdisc-ingress-latency": "200ms",
		}, [2][]string{
			{"--qdisc-tbf-rate=2mbit", "--qdisc-tbf-burst=3028", "--qdisc-ingress-rate=2mbit"},
			{"--qdisc-tbf-rate=1mbit", "--qdisc-tbf-burst=3028", "--qdisc-ingress-rate=1mbit"},
		}},
		{"fq_codel under a ceiling", map[string]string{
			"qdisc": "fq_codel", "qdisc-ingress-rate": "1mbit", "qdisc-ingress-burst": "3028", "qdisc-ingress-latency": "200ms",
		}, [2][]string{
			{"--qdisc-tbf-rate=2mbit", "--qdisc-tbf-burst=3028", "--qdisc-fq-codel-target=10ms", "--qdisc-ingress-rate=2mbit"},
			{"--qdisc-tbf-rate=1mbit", "--qdisc-tbf-burst=3028", "--qdisc-fq-codel-target=5ms", "--qdisc-ingress-rate=1mbit"},
		}},
		{"htb", map[string]string{"qdisc": "htb", "qdisc-htb": htb, "qdisc-ingress-htb": htb}, [2][]string{
			{"--qdisc-htb=class classid 1:20 rate 8mbit ceil 8mbit", "--qdisc-ingress-htb=class classid 1:20 rate 8mbit ceil 8mbit"},
			{"--qdisc-htb=class classid 1:20 rate 4mbit ceil 4mbit", "--qdisc-ingress-htb=class classid 1:20 rate 4mbit ceil 4mbit"},
		}},
		{"cake", map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 4mbit", "qdisc-ingress-cake": "bandwidth 4mbit"}, [2][]string{
			{"--qdisc-cake=bandwidth 8mbit", "--qdisc-ingress-cake=bandwidth 8mbit"},
			{"--qdisc-cake=bandwidth 4mbit", "--qdisc-ingress-cake=bandwidth 4mbit"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { lockOrder(t, tc.flags, tc.changes) })
	}
}

// lockOrder runs TestLockOrder's steps on a NIC built from flags, changing
// it by changes[0] and changes[1] in turn.
func lockOrder(t *testing.T, flags map[string]string, changes [2][]string) {
	p := newLiveNIC(t, "eth0", 1500, flags)
	n, clock, link, q, in := p.NIC, p.clock, p.link, p.q, p.in
	link.Discard = true
	up := qdisctest.NewLink(clock) // the stack the ingress shaper delivers to
	up.Discard = true
	in.Attach(up)

	var callbacks atomic.Int64
	// sandbox stands for runsc's outermost lock, boot's nicShapers.mu
	// (runsc patches 0006 and 0008): held around Change and Show by
	// `runsc qdisc change` and `show`, and around the counters by the
	// metrics, which a link's write may read.
	var sandbox sync.Mutex
	callback := func() {
		sandbox.Lock()
		_ = n.Config()
		_ = n.Show()
		_, _ = n.Stats()
		sandbox.Unlock()
		callbacks.Add(1)
	}
	link.OnWrite = callback
	up.Inspect = func(*stack.PacketBuffer) { callback() }

	// Each step queues packets in both directions past the bucket, so that
	// both lanes wait for their departures, then changes both directions
	// (alternately up and down), then lets 2 ms pass.
	const steps = 150
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
			sandbox.Lock()
			_, err := runscflags.Change([]*runscflags.NIC{n}, changes[i%2])
			_ = n.Show()
			sandbox.Unlock()
			if err != nil {
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
