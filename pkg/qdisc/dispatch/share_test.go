package dispatch_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestBudgetShares: a single busy lane fills the whole limit; a lane that
// the budget refuses claims its share, and while the claim holds, a lane
// past its share is refused and gives back what its packets free, which
// the claimant takes; the total never passes the limit. Once the claimant
// has not been refused for claimWindow, its claim lapses and the one busy
// lane fills the whole limit again.
func TestBudgetShares(t *testing.T) {
	// Shares of 100 kB, above the floor (64 KiB).
	const size, limit = 1000, 200 * 1000
	// One packet leaves every 10 ms, the first at once (lane 1's only
	// after all of lane 0's: the gate is shared).
	const gap = 10 * time.Millisecond
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	budget := dispatch.NewBudget(limit)
	var g dispatch.Group
	g.Init(2, dispatch.Config{Lower: link, MaxPackets: 1000, Budget: budget, Gate: &spacedGate{gap: int64(gap)}, Clock: clock})
	g.Start()
	t.Cleanup(g.Close)
	seq := uint64(0)
	send := func(hash uint32) tcpip.Error {
		t.Helper()
		seq++
		pkt := qdisctest.MakePacket(size, hash, seq)
		err := g.Lane(hash).Enqueue(pkt)
		pkt.DecRef()
		if _, full := err.(*tcpip.ErrNoBufferSpace); err != nil && !full {
			t.Fatalf("Enqueue: %v, want nil or ErrNoBufferSpace", err)
		}
		qdisctest.WaitQuiescent(t, &g)
		return err
	}
	fill := func(hash uint32) (n uint64) {
		for send(hash) == nil {
			n++
		}
		return n
	}
	step := func(packets int) {
		clock.Advance(time.Duration(packets) * gap)
		clock.Fire()
		qdisctest.WaitQuiescent(t, &g)
	}
	backlog := func(lane int) uint64 { return g.Lanes[lane].Stats().BacklogBytes }

	fill(0)
	if b := backlog(0); b != limit {
		t.Fatalf("one busy lane holds %d bytes when refused, want the whole limit, %d", b, limit)
	}
	if send(1) == nil {
		t.Fatal("lane 1's packet was taken past the limit")
	}
	step(5) // 5 of lane 0's packets leave
	if c := budget.Used() - g.Stats().BacklogBytes; c != 0 {
		t.Errorf("lane 0, past its share, keeps %d bytes of credit while lane 1 claims its share, want 0", c)
	}
	if send(0) == nil {
		t.Errorf("lane 0, past its share (%d bytes queued), took a packet while lane 1 claims its share", backlog(0))
	}
	if n := fill(1); n != 5 {
		t.Errorf("lane 1 took %d packets into the room lane 0's 5 left, want 5", n)
	}
	if b := g.Stats().BacklogBytes; b != limit {
		t.Errorf("the lanes hold %d bytes, want the limit, %d", b, limit)
	}
	// A pass of lane 0 finds lane 1 refused since its claim was made: the
	// claim holds 100 ms from then. At the next, it has lapsed, and lane 0
	// fills the whole limit again.
	step(11)
	step(11)
	if n := fill(0); n != 22 {
		t.Errorf("lane 0 took %d packets once lane 1's claim lapsed, want the 22 that fill the limit", n)
	}
	if b := g.Stats().BacklogBytes; b != limit {
		t.Errorf("the lanes hold %d bytes, want the limit, %d", b, limit)
	}
	g.Close()
	if u := budget.Used(); u != 0 {
		t.Errorf("after Close the budget counts %d bytes, want 0", u)
	}
}
