package node_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/node"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// countingClock is a ManualClock that counts the timer callbacks it
// runs.
type countingClock struct {
	*faketime.ManualClock
	fired atomic.Int64
}

// AfterFunc implements tcpip.Clock.AfterFunc, counting each run of f.
func (c *countingClock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	return c.ManualClock.AfterFunc(d, func() { c.fired.Add(1); f() })
}

// TestRunnerParks: an idle class stops its timer after node.ParkAfter
// (no wake-ups while the sandbox is idle) and stops publishing, so the
// others count it idle after node.Stale; its next packet wakes it at
// once, and it steps every Period again.
func TestRunnerParks(t *testing.T) {
	clock := &countingClock{ManualClock: faketime.NewManualClock()}
	now := func() int64 { return int64(clock.NowMonotonic().Sub(tcpip.MonotonicTime{})) }
	c := issueClasses[0]
	a, ms := joinNode(t, clock.ManualClock, "class root classid 1:1 rate 100mbit", c)
	m := ms[0]
	link := qdisctest.NewLink(clock)
	up := node.NewUplink(link, c.Rate)
	q := fifo.NewWithClock(up, clock, 1, 1000)
	r := node.Run(m, up, clock, now)
	defer func() { r.Close(); q.Close() }()
	send := func() {
		pkt := qdisctest.MakePacket(1500, 0, 1)
		q.WritePacket(pkt)
		pkt.DecRef()
		qdisctest.WaitQuiescent(t, q)
	}
	advance := func(d time.Duration) {
		for range int(d / time.Millisecond) {
			clock.Advance(time.Millisecond)
		}
	}

	send()
	advance(node.ParkAfter / 2)
	if r.Parked() {
		t.Fatalf("parked %v after a packet, before %v idle", node.ParkAfter/2, node.ParkAfter)
	}
	advance(node.ParkAfter)
	if !r.Parked() {
		t.Fatalf("not parked after %v idle", node.ParkAfter*3/2)
	}
	fired := clock.fired.Load()
	advance(time.Second)
	if n := clock.fired.Load() - fired; n != 0 || !r.Parked() {
		t.Errorf("parked and idle for 1 s: %d timer wake-ups (parked %v), want 0", n, r.Parked())
	}
	if got := a.Show(now()); !strings.Contains(got, "parked 5") {
		t.Errorf("a class parked for 1 s (its last publish 1.1 s ago) is not shown parked since Stale after:\n%s", got)
	}

	send()
	if r.Parked() {
		t.Fatal("a packet did not wake the parked class")
	}
	clock.ManualClock.Advance(node.Period)
	if got := a.Show(now()); !strings.Contains(got, " ago, live, share") {
		t.Errorf("woken by a packet: the node shows\n%s\nwant the class live, published at the wake", got)
	}
	fired = clock.fired.Load()
	advance(5 * node.Period)
	if n := clock.fired.Load() - fired; n != 5 {
		t.Errorf("woken: %d steps in 5 periods, want 5", n)
	}
	if err := r.Err(); err != nil {
		t.Errorf("woken runner: %v", err)
	}
}

// TestDeepBacklogTakesItsShare: a class whose qdisc holds a deep backlog
// (a batch of bookings is seconds of its rate) takes its share as soon
// as the share is computed, not after the packets its qdisc booked at
// its rate, and keeps it with packets as large as host GSO's (one
// booking waits for several steps): alone on the node, it sends its
// ceil within 2% over its first second.
func TestDeepBacklogTakesItsShare(t *testing.T) {
	for _, size := range []int{1500, 65000} {
		clock := faketime.NewManualClock()
		nics := newNode(t, clock, "class root classid 1:1 rate 100mbit", issueClasses[:1], false, func(l stack.LinkEndpoint) qdisc.Discipline {
			return fifo.NewWithClock(l, clock, 1, 1000)
		})
		n := nics[0]
		var before uint64
		for ms := range 1100 {
			if ms == 100 {
				_, before = n.link.Count()
			}
			for n.q.Stats().BacklogPackets < 400 {
				pkt := qdisctest.MakePacket(size, 0, n.seq)
				n.seq++
				n.q.WritePacket(pkt)
				pkt.DecRef()
			}
			qdisctest.WaitQuiescent(t, n.q)
			clock.Advance(time.Millisecond)
		}
		_, sent := n.link.Count()
		sent -= before
		t.Logf("%d-byte packets: %.3f Mbit in the second after its first 100 ms", size, float64(sent)*8/1e6)
		if got, want := float64(sent), float64(100*mbit); got < 0.98*want || got > 1.01*want {
			t.Errorf("alone, backlogged 400 packets of %d bytes deep: %.3f Mbit in the second after its first 100 ms, want its ceil, 100 (within [0.98, 1.01])", size, got*8/1e6)
		}
	}
}
