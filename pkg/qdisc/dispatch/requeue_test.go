package dispatch_test

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestFullLinkRequeuesAndRetries: a link that takes nothing (its socket
// buffer full) leaves the packets at the lane's head, counted as requeues
// and in the backlog, and the lane waits RequeueDelay on the alarm rather
// than spin; once the link has room, the retry sends them, in order, then
// what queued behind them.
func TestFullLinkRequeuesAndRetries(t *testing.T) {
	r := newRig(t, 1, 0, 0)
	r.link.Full.Store(true)
	for range 3 {
		r.send(t, 0)
	}
	qdisctest.WaitQuiescent(t, &r.g)
	s := r.g.Stats()
	if s.Packets != 0 || s.Drops != 0 || s.Requeues == 0 || s.BacklogPackets != 3 {
		t.Fatalf("stats %+v with the link full: want nothing sent or dropped, requeues, 3 packets queued", s)
	}
	r.clock.Advance(dispatch.RequeueDelay - 1)
	if n := r.clock.Fire(); n != 0 {
		t.Fatalf("%d timers fired before RequeueDelay", n)
	}
	r.clock.Advance(1)
	if n := r.clock.Fire(); n != 1 {
		t.Fatalf("%d timers fired at RequeueDelay, want 1 (the retry)", n)
	}
	qdisctest.WaitQuiescent(t, &r.g)
	if got := r.g.Stats().Requeues; got <= s.Requeues {
		t.Fatalf("the retry to a full link did not requeue again (%d requeues)", got)
	}
	r.link.Full.Store(false)
	r.send(t, 0) // queued behind the requeued three, on a waiting lane
	r.clock.Advance(dispatch.RequeueDelay)
	r.clock.Fire()
	qdisctest.WaitQuiescent(t, &r.g)
	if got := r.sent(); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
		t.Errorf("sent %v, want [1 2 3 4]", got)
	}
	if s := r.g.Stats(); s.Packets != 4 || s.Drops != 0 || s.BacklogPackets != 0 {
		t.Errorf("stats %+v, want 4 sent, none dropped or queued", s)
	}
}

// TestCloseReleasesRequeued: packets the link refused and the lane holds
// for a retry are released by Close and counted as drops (TestMain's leak
// checker checks their references).
func TestCloseReleasesRequeued(t *testing.T) {
	r := newRig(t, 2, 0, 0)
	r.link.Full.Store(true)
	for i := range 6 {
		r.send(t, uint32(i))
	}
	qdisctest.WaitQuiescent(t, &r.g)
	r.g.Close()
	if s := r.g.Stats(); s.Packets != 0 || s.Drops != 6 || s.BacklogPackets != 0 || s.Requeues == 0 {
		t.Errorf("stats %+v after Close, want the 6 packets (some requeued, the rest queued behind them) dropped", s)
	}
}

// TestBudgetBalances: lanes sharing a Budget, shaping on the real clock
// (so that passes find departures come between their looks at the clock),
// give back every byte they counted: after Close the budget counts none.
// A pass that refunded the same bytes twice would wrap the count and drop
// every later packet.
func TestBudgetBalances(t *testing.T) {
	link := qdisctest.NewLink(nil)
	link.Discard = true
	budget := dispatch.NewBudget(64 << 10)
	var g dispatch.Group
	g.Init(4, dispatch.Config{Lower: link, MaxPackets: 1000, Budget: budget, Gate: &spacedGate{gap: int64(time.Microsecond)}, Clock: tcpip.NewStdClock()})
	g.Start()
	const n = 20000
	for i := 0; i < n; i++ {
		pkt := qdisctest.MakePacket(1000, uint32(i), uint64(i))
		for g.Lane(uint32(i)).Enqueue(pkt) != nil {
			runtime.Gosched()
		}
		pkt.DecRef()
	}
	qdisctest.WaitQuiescent(t, &g)
	for deadline := time.Now().Add(time.Minute); g.Stats().BacklogPackets != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still %d packets queued a minute on", g.Stats().BacklogPackets)
		}
	}
	g.Close()
	if s := g.Stats(); s.Packets != n || s.BacklogPackets != 0 {
		t.Errorf("stats %+v, want %d sent (the drops are the budget's refusals, each retried)", s, n)
	}
	if u := budget.Used(); u != 0 {
		t.Errorf("the budget counts %d bytes after Close, want 0", u)
	}
}
