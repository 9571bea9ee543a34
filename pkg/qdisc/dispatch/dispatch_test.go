package dispatch_test

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

// spacedGate is a fake gate that lets one packet leave every gap, the
// first at once: departures seen, seen+gap, seen+2*gap, ...
type spacedGate struct {
	gap int64 // +checklocksignore: set once

	mu sync.Mutex
	// last is the last departure booked, if set.
	// +checklocks:mu
	last int64
	// +checklocks:mu
	set bool
}

func (g *spacedGate) Book(seen int64, _ uint32) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := seen
	if g.set {
		d = max(seen, g.last+g.gap)
	}
	g.last, g.set = d, true
	return d
}

func (g *spacedGate) BookAll(seen []int64, sizes []uint32, departures []int64) {
	for i, size := range sizes {
		departures[i] = g.Book(seen[i], size)
	}
}

// rig is a Group of lanes on a recording link and a StepClock.
type rig struct {
	g     dispatch.Group
	link  *qdisctest.Link
	clock *qdisctest.StepClock
	seq   uint64
}

// newRig starts lanes lanes; with gap > 0 they share a spacedGate.
func newRig(t *testing.T, lanes int, gap, slack time.Duration) *rig {
	r := &rig{clock: qdisctest.NewStepClock()}
	r.link = qdisctest.NewLink(r.clock)
	cfg := dispatch.Config{Lower: r.link, MaxPackets: 100, Clock: r.clock, Slack: slack}
	if gap > 0 {
		cfg.Gate = &spacedGate{gap: int64(gap)}
	}
	r.g.Init(lanes, cfg)
	r.g.Start()
	t.Cleanup(r.g.Close)
	return r
}

// send enqueues a packet on the lane for hash.
func (r *rig) send(t *testing.T, hash uint32) uint64 {
	t.Helper()
	r.seq++
	pkt := qdisctest.MakePacket(100, hash, r.seq)
	defer pkt.DecRef()
	if err := r.g.Lane(hash).Enqueue(pkt); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return r.seq
}

// sent returns the sequence numbers the link has received, in order.
func (r *rig) sent() []uint64 {
	var s []uint64
	for _, rec := range r.link.Records() {
		s = append(s, rec.Seq)
	}
	return s
}

// TestIdleLaneWakesItsDispatcher: a packet queued on an idle fifo lane is
// sent by its dispatcher, and the lane is idle again, its counters right.
func TestIdleLaneWakesItsDispatcher(t *testing.T) {
	r := newRig(t, 1, 0, 0)
	for round := 1; round <= 3; round++ {
		want := []uint64{}
		for range round {
			r.send(t, 0)
		}
		for i := uint64(1); i <= r.seq; i++ {
			want = append(want, i)
		}
		qdisctest.WaitQuiescent(t, &r.g)
		if got := r.sent(); !slices.Equal(got, want) {
			t.Fatalf("round %d: sent %v, want %v", round, got, want)
		}
	}
	if s := r.g.Stats(); s.Packets != r.seq || s.Bytes != 100*r.seq || s.BacklogPackets != 0 || s.Overlimits != 0 {
		t.Errorf("stats %+v, want %d packets of 100 bytes, no backlog, no overlimits", s, r.seq)
	}
	if r.g.Wakeups() != 0 {
		t.Errorf("a fifo lane used a timer")
	}
}

// TestThrottledLaneWakesOnTheAlarm: a packet whose departure is to come
// makes the lane throttled (an overlimit); when the timer fires at the
// departure, the pass runs on the timer's goroutine and sends it before
// the timer returns, and the wait's lateness is recorded.
func TestThrottledLaneWakesOnTheAlarm(t *testing.T) {
	r := newRig(t, 1, time.Millisecond, 0)
	r.send(t, 0)
	r.send(t, 0)
	qdisctest.WaitQuiescent(t, &r.g)
	if got := r.sent(); !slices.Equal(got, []uint64{1}) {
		t.Fatalf("sent %v before the departure, want [1]", got)
	}
	if s := r.g.Stats(); s.Overlimits != 1 || s.BacklogPackets != 1 {
		t.Fatalf("stats %+v, want 1 overlimit and 1 packet waiting", s)
	}
	r.clock.Advance(999 * time.Microsecond)
	if n := r.clock.Fire(); n != 0 {
		t.Fatalf("%d timers fired before the departure", n)
	}
	r.clock.Advance(time.Microsecond)
	if n := r.clock.Fire(); n != 1 {
		t.Fatalf("%d timers fired at the departure, want 1", n)
	}
	if got := r.sent(); !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("sent %v when the timer returned, want [1 2]", got)
	}
	if l := r.g.Lateness(); l.Count() != 1 || l.Quantile(1) != 0 {
		t.Errorf("lateness %d samples, max %v; want 1 sample of 0", l.Count(), l.Quantile(1))
	}
	if r.g.Wakeups() != 1 {
		t.Errorf("%d timer wake-ups, want 1", r.g.Wakeups())
	}
}

// TestCloseWaitsForAPassOnTheTimer: Close, while a pass that the timer
// started is writing to the link, returns only after that write, and then
// every packet is sent or dropped, once (the leak checker in TestMain
// checks the references).
func TestCloseWaitsForAPassOnTheTimer(t *testing.T) {
	r := newRig(t, 1, time.Millisecond, 0)
	for range 3 {
		r.send(t, 0)
	}
	qdisctest.WaitQuiescent(t, &r.g)
	inWrite, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.link.OnWrite = func() {
		once.Do(func() {
			close(inWrite)
			<-release
		})
	}
	r.clock.Advance(time.Millisecond)
	go r.clock.Fire() // the timer's goroutine: its pass blocks in the write
	<-inWrite
	closed := make(chan struct{})
	go func() {
		r.g.Close()
		close(closed)
	}()
	// Close has begun once the lane answers ErrClosedForSend; until then
	// packets are queued, or, should the queue fill first (Close's
	// goroutine not yet run: the machine busy with other tests), refused
	// and counted as drops.
	accepted, refused := uint64(3), uint64(0)
	pkt := qdisctest.MakePacket(100, 0, 99)
	for {
		err := r.g.Lane(0).Enqueue(pkt)
		if _, ok := err.(*tcpip.ErrClosedForSend); ok {
			break
		}
		switch err.(type) {
		case nil:
			accepted++
		case *tcpip.ErrNoBufferSpace:
			refused++
		default:
			t.Fatalf("Enqueue: %v", err)
		}
		runtime.Gosched()
	}
	pkt.DecRef()
	for range 1000 {
		runtime.Gosched()
	}
	select {
	case <-closed:
		t.Fatal("Close returned while a pass on the timer was writing")
	default:
	}
	close(release)
	<-closed
	s := r.g.Stats()
	if s.Packets != 2 || s.Packets+s.Drops != accepted+refused || s.BacklogPackets != 0 {
		t.Errorf("stats %+v: want the 2 packets due sent, the other %d of the %d accepted dropped and the %d refused counted, nothing queued", s, accepted-2, accepted, refused)
	}
}

// TestArrivalServesOtherLanes: once the timer has served the lanes, it
// fires again no sooner than Slack later, or when a lane's booked packets
// run out; a packet arriving on another lane meanwhile finds the next
// departure come and runs the waiting lane's pass on its own goroutine,
// before its Enqueue returns, with no wake-up.
func TestArrivalServesOtherLanes(t *testing.T) {
	// The five packets are queued before the dispatcher starts, so that
	// its first pass books them together (the lane runs dry at +4 ms, and
	// the alarm waits for that or the Slack): a pass that raced the sends
	// and booked three would run dry at +2 ms, and the timer would rightly
	// fire then.
	r := &rig{clock: qdisctest.NewStepClock()}
	r.link = qdisctest.NewLink(r.clock)
	r.g.Init(2, dispatch.Config{Lower: r.link, MaxPackets: 100, Clock: r.clock, Slack: time.Second, Gate: &spacedGate{gap: int64(time.Millisecond)}})
	for range 5 {
		r.send(t, 0) // lane 0: departures now, +1 ms, ..., +4 ms
	}
	r.g.Start()
	t.Cleanup(r.g.Close)
	qdisctest.WaitQuiescent(t, &r.g)
	r.clock.Advance(time.Millisecond)
	if n := r.clock.Fire(); n != 1 {
		t.Fatalf("%d timers fired at the first wait's departure, want 1", n)
	}
	if got := r.sent(); !slices.Equal(got, []uint64{1, 2}) {
		t.Fatalf("sent %v after the first wake-up, want [1 2]", got)
	}
	r.clock.Advance(time.Millisecond)
	if n := r.clock.Fire(); n != 0 {
		t.Fatalf("%d timers fired within the Slack of the last wake-up", n)
	}
	r.send(t, 1) // lane 1: serves lane 0's packet 3, due now
	found := false
	for _, seq := range r.sent() {
		found = found || seq == 3
	}
	if !found {
		t.Errorf("lane 0's packet 3 was not sent by the time lane 1's Enqueue returned: sent %v", r.sent())
	}
	qdisctest.WaitQuiescent(t, &r.g)
	if r.g.Wakeups() != 1 {
		t.Errorf("%d timer wake-ups, want 1 (the first wait's)", r.g.Wakeups())
	}
}

// TestBudgetFillsToTheSharedLimit: lanes sharing a Budget hold packets up
// to its limit together, wherever the packets went: credit one lane took
// and did not use is reclaimed by another before it drops. The limit is
// reached exactly in each round, with the packets skewed to either lane;
// after Close every byte is back in the budget.
func TestBudgetFillsToTheSharedLimit(t *testing.T) {
	const size, limit = 100, 50 * 100
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	budget := dispatch.NewBudget(limit)
	var g dispatch.Group
	// One packet leaves every hour: the rest stay queued while a round
	// fills the lanes.
	g.Init(2, dispatch.Config{Lower: link, MaxPackets: 1000, Budget: budget, Gate: &spacedGate{gap: int64(time.Hour)}, Clock: clock})
	g.Start()
	t.Cleanup(g.Close)
	seq := uint64(0)
	for round, first := range []uint32{0, 1, 0} {
		// A packet on one lane, so that it takes credit, then the rest on
		// the other until one is refused.
		for i := 0; ; i++ {
			hash := 1 - first
			if i == 0 {
				hash = first
			}
			seq++
			pkt := qdisctest.MakePacket(size, hash, seq)
			err := g.Lane(hash).Enqueue(pkt)
			pkt.DecRef()
			if err != nil {
				if _, ok := err.(*tcpip.ErrNoBufferSpace); !ok {
					t.Fatalf("round %d: Enqueue: %v, want ErrNoBufferSpace at the limit", round, err)
				}
				break
			}
			if i == 0 {
				// A packet being written still counts: let a first one
				// that may leave at once be gone.
				qdisctest.WaitQuiescent(t, &g)
			}
		}
		qdisctest.WaitQuiescent(t, &g)
		if s := g.Stats(); s.BacklogBytes != limit {
			t.Fatalf("round %d: the lanes hold %d bytes when a packet is refused, want the limit, %d", round, s.BacklogBytes, limit)
		}
		// Send everything queued.
		for g.Stats().BacklogPackets > 0 {
			clock.Advance(time.Hour)
			clock.Fire()
			qdisctest.WaitQuiescent(t, &g)
		}
	}
	g.Close()
	if u := budget.Used(); u != 0 {
		t.Errorf("after Close the budget counts %d bytes, want 0", u)
	}
}

var _ tcpip.Clock = (*qdisctest.StepClock)(nil)

// recordingGate books every packet an hour after it was seen, and records
// the sizes it was asked to book.
type recordingGate struct {
	mu sync.Mutex
	// +checklocks:mu
	sizes []uint32
}

func (g *recordingGate) Book(seen int64, size uint32) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sizes = append(g.sizes, size)
	return seen + int64(time.Hour)
}

func (g *recordingGate) BookAll(seen []int64, sizes []uint32, departures []int64) {
	for i, size := range sizes {
		departures[i] = g.Book(seen[i], size)
	}
}

// TestSizeIsWhatTheLaneCounts: with Config.Size, the size it gives a
// packet is the one number the lane counts it as: against MaxBytes, in the
// backlog, in the gate's bookings and in the bytes sent. A host-GSO packet
// larger than MaxPacketBytes is then refused as too long, not cut.
func TestSizeIsWhatTheLaneCounts(t *testing.T) {
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	gate := &recordingGate{}
	thrice := func(pkt *stack.PacketBuffer) uint64 { return 3 * uint64(pkt.Size()) }
	var g dispatch.Group
	g.Init(1, dispatch.Config{Lower: link, MaxPackets: 100, MaxBytes: 1000, MaxPacketBytes: 9000, Size: thrice, Gate: gate, Clock: clock})
	g.Start()
	t.Cleanup(g.Close)
	lane := g.Lane(0)
	for seq := uint64(1); seq <= 4; seq++ {
		pkt := qdisctest.MakePacket(100, 0, seq)
		err := lane.Enqueue(pkt)
		pkt.DecRef()
		if _, full := err.(*tcpip.ErrNoBufferSpace); (seq == 4) != full {
			t.Fatalf("packet %d: Enqueue = %v; want three 300-byte packets in a 1000-byte lane, the fourth refused", seq, err)
		}
		qdisctest.WaitQuiescent(t, &g)
	}
	big := qdisctest.GSOPacket(20000, 1448, 0, 5, 0)
	if _, ok := lane.Enqueue(big).(*tcpip.ErrMessageTooLong); !ok {
		t.Errorf("a host-GSO packet charged %d bytes, over MaxPacketBytes: not refused as too long", thrice(big))
	}
	big.DecRef()
	if s := g.Stats(); s.BacklogBytes != 900 || s.BacklogPackets != 3 {
		t.Errorf("Stats %+v; want 3 packets, 900 bytes queued", s)
	}
	for range 3 { // the gate holds each packet an hour from when the pass books it
		clock.Advance(time.Hour)
		clock.Fire()
		qdisctest.WaitQuiescent(t, &g)
	}
	if s := g.Stats(); s.Bytes != 900 || s.Packets != 3 || s.Drops != 2 || s.BacklogBytes != 0 {
		t.Errorf("Stats %+v; want 3 packets, 900 bytes sent, 2 drops", s)
	}
	gate.mu.Lock()
	defer gate.mu.Unlock()
	if !slices.Equal(gate.sizes, []uint32{300, 300, 300}) {
		t.Errorf("the gate booked %v, want three packets of 300", gate.sizes)
	}
}
