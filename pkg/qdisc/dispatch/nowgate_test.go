package dispatch_test

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// nowGate is a spacedGate that is a NowGate too, and records the times
// BookAll was given. BookAllAt writes math.MaxInt64 as the departure of
// each packet it counts due: a lane that read one would wait forever.
type nowGate struct {
	spacedGate
	mu sync.Mutex
	// +checklocks:mu
	at int // BookAllAt calls
	// +checklocks:mu
	seen []int64 // what BookAll was given
}

func (g *nowGate) BookAll(seen []int64, sizes []uint32, departures []int64) {
	g.mu.Lock()
	g.seen = append(g.seen, seen...)
	g.mu.Unlock()
	g.spacedGate.BookAll(seen, sizes, departures)
}

func (g *nowGate) BookAllAt(seen int64, sizes []uint32, departures []int64) (due int) {
	g.mu.Lock()
	g.at++
	g.mu.Unlock()
	for i, size := range sizes {
		departures[i] = g.Book(seen, size)
		if departures[i] == seen && due == i {
			due++
			departures[i] = math.MaxInt64
		}
	}
	return due
}

var _ dispatch.NowGate = (*nowGate)(nil)

// TestNowGateBooksArrivalsWithBookAll: packets that arrive while the lane
// runs or idles are booked as seen at the pass (BookAllAt), and those due
// at once leave without their departures being looked at; a packet that
// arrives while the lane waits carries its arrival, and the pass books it
// with BookAll from that arrival, not from the pass's time.
func TestNowGateBooksArrivalsWithBookAll(t *testing.T) {
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	gate := &nowGate{spacedGate: spacedGate{gap: int64(time.Millisecond)}}
	r := &rig{clock: clock, link: link}
	r.g.Init(1, dispatch.Config{Lower: link, MaxPackets: 100, Clock: clock, Gate: gate})
	r.g.Start()
	t.Cleanup(r.g.Close)
	r.send(t, 0)
	r.send(t, 0)
	qdisctest.WaitQuiescent(t, &r.g)
	if got := r.sent(); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("sent %v before the second departure, want [1]", got)
	}
	clock.Advance(time.Millisecond / 2)
	// The lane waits: the packet carries its arrival (NewStepClock
	// starts at an hour).
	arrival := int64(time.Hour + time.Millisecond/2)
	r.send(t, 0)
	clock.Advance(time.Millisecond / 2)
	clock.Fire()
	qdisctest.WaitQuiescent(t, &r.g)
	if got := r.sent(); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("sent %v at the second departure, want [1 2]", got)
	}
	clock.Advance(time.Millisecond)
	clock.Fire()
	qdisctest.WaitQuiescent(t, &r.g)
	if got := r.sent(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("sent %v at the third departure, want [1 2 3]", got)
	}

	gate.mu.Lock()
	defer gate.mu.Unlock()
	if gate.at == 0 {
		t.Errorf("no batch was booked with BookAllAt")
	}
	if !slices.Equal(gate.seen, []int64{arrival}) {
		t.Errorf("BookAll was given seen %v, want only packet 3's arrival [%d]", gate.seen, arrival)
	}
}
