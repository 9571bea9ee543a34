// Package dispatch runs the queues that netqdisc's disciplines are built
// from. A Lane is one bounded ring of packets, one dispatcher goroutine that
// drains it to the lower link in batches, and an optional Gate (tbf's token
// bucket) that says when the head packet may leave. fifo is lanes without a
// gate; tbf is lanes with one.
//
// Why one shared mechanism: the parts that are easy to get subtly wrong
// are the same in every qdisc — when to wake the dispatcher, how a closed
// qdisc refuses packets and releases what it holds, how a batch's
// references are released and counted — so they are written once.
//
// Where this differs from gVisor's upstream qdiscs:
//   - Enqueue wakes the dispatcher only when it is idle; a dispatcher that
//     is running will see the packet, and one that waits for tokens does
//     not need it. Upstream asserts a waker on every packet, and its tbf
//     re-arms a freshly allocated timer for each one.
//   - Waiting lanes share one timer (Alarm), created once and Reset
//     thereafter: no allocation per wake. Its wake-ups are spaced at least
//     Slack apart, each serving every lane that came due, and a packet
//     arriving on any lane serves them too: a wake-up costs tens of
//     microseconds of CPU on a VM whatever wakes the thread, so lanes that
//     wait for every packet would otherwise cost one per packet.
//   - A Gate books each packet's departure, with one clock reading per
//     batch, not per packet; a dispatcher that wakes late sends what an
//     on-time one would have sent by now (see Gate). While a lane shapes,
//     packets are booked as they arrive, so lanes sharing a gate send in
//     arrival order, as one FIFO.
//   - The backlog is bounded in packets and, optionally, bytes, also
//     across lanes (Budget).
//   - How late each timer wake-up runs is recorded (Lateness).
//   - Close is safe against concurrent Enqueue: the closed flag and the
//     ring share one lock, so a packet is either queued before Close (and
//     released by it) or refused with ErrClosedForSend.
//   - Statistics: packets and bytes sent, drops, overlimits and backlog.
package dispatch

import (
	"math"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/sleep"
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/packetbuf"
)

// Gate books departures: it decides when each packet of a lane may leave.
type Gate interface {
	// Book reserves a packet's tokens and returns its departure time (in
	// nanoseconds on the lane's clock): the earliest time, not before seen,
	// at which the tokens suffice, after every departure booked before it.
	// seen is a time by which the packet had certainly arrived. The
	// departure may be before now: a dispatcher that woke late then sends
	// what an on-time one would already have sent, instead of losing the
	// credit. Gates shared by several lanes must be safe for concurrent
	// use.
	Book(seen int64, size uint32) (departure int64)
	// BookAll books packets of the given sizes, in order, at seen, as
	// consecutive Book calls would with no booking between them, and
	// writes their departures. A dispatcher books a batch with it: one
	// update of a shared bucket instead of one per packet.
	BookAll(seen int64, sizes []uint32, departures []int64)
}

// Budget is a bound on the bytes queued across lanes that share it.
type Budget struct {
	limit uint64
	used  atomic.Uint64
}

// NewBudget returns a Budget of limit bytes.
func NewBudget(limit uint64) *Budget { return &Budget{limit: limit} }

// take reserves n bytes, or reports false when they would pass the limit.
// Near the limit, two racing takes may both fail; neither can pass it.
func (b *Budget) take(n uint64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *Budget) give(n uint64) { b.used.Add(-n) }

// Used returns the bytes reserved now.
func (b *Budget) Used() uint64 { return b.used.Load() }

// state is what a lane's dispatcher is doing.
type state uint8

const (
	// idle: asleep with an empty ring; Enqueue must wake it.
	idle state = iota
	// running: awake, or woken; it looks at the ring before sleeping again.
	running
	// throttled: asleep until the alarm fires; Enqueue need not wake it.
	throttled
	// stopped: closed and drained.
	stopped
)

// Config is a lane's shape.
type Config struct {
	// Lower is where batches go.
	Lower stack.LinkWriter
	// MaxPackets bounds the ring in packets (at least 1).
	MaxPackets int
	// MaxBytes, if not 0, bounds the bytes queued: a packet that would take
	// the backlog past it is dropped, as Linux's bfifo does.
	MaxBytes uint64
	// Budget, if not nil, bounds the bytes queued in all the lanes that
	// share it, the same way.
	Budget *Budget
	// Gate, if not nil, is asked before each packet leaves, and Clock gives
	// it the time and runs the alarm the lane waits on.
	Gate  Gate
	Clock tcpip.Clock
	// Slack is the least time between two wake-ups of the lanes' timer
	// (see Alarm). 0: the timer fires at every departure.
	Slack time.Duration
	// alarm is the timer the lanes of a Group share; Init makes a lane
	// its own when it is nil.
	alarm *Alarm
}

// Lane is one queue and its dispatcher. Use it through a pointer, after
// Init and Start.
type Lane struct {
	lower    stack.LinkWriter
	maxBytes uint64
	budget   *Budget
	gate     Gate
	clock    tcpip.Clock
	alarm    *Alarm

	wake    sleep.Waker
	closing sleep.Waker

	mu sync.Mutex
	// +checklocks:mu
	ring packetbuf.Ring
	// +checklocks:mu
	state state
	// +checklocks:mu
	closed bool
	// deadline is the departure the gate booked for the head packet,
	// while the lane waits on the alarm.
	// +checklocks:mu
	deadline int64
	// timerFired says the alarm (its timer, or an arrival's help) started
	// a pass that has not yet looked at the clock.
	// +checklocks:mu
	timerFired bool
	// inPass says a pass runs on the timer's goroutine or an enqueuer's;
	// drain waits for it on passDone.
	// +checklocks:mu
	inPass   bool
	passDone *sync.Cond
	// passBatch is the batch of such passes (one pass runs at a time).
	passBatch stack.PacketBufferList
	// bookSizes and bookDepartures carry a batch's bookings to the gate
	// (kept here: arrays passed to an interface would escape to the heap).
	// +checklocks:mu
	bookSizes [qdisc.BatchSize]uint32
	// +checklocks:mu
	bookDepartures [qdisc.BatchSize]int64
	// lastWait is when the lane last had to wait for its gate: while that
	// is recent the lane is shaping, and a packet arriving on the idle
	// lane is sent from its enqueuer's goroutine rather than by waking the
	// dispatcher. Far from the ceiling a lane never waits, and dispatch
	// stays asynchronous, as fifo's.
	// +checklocks:mu
	lastWait int64
	// overflows counts the packets dropped because the ring or the byte
	// bound was full (the other drops are in drops).
	// +checklocks:mu
	overflows uint64

	lateness qdisc.Histogram

	sentBytes   atomic.Uint64
	sentPackets atomic.Uint64
	drops       atomic.Uint64
	overlimits  atomic.Uint64

	// Lanes sit side by side in a slice, each written by its own producers
	// and dispatcher: keep a lane's lines to itself.
	_ [cacheLine]byte
}

// shapingWindow is how long after a lane last waited for its gate it
// counts as shaping (see Lane.lastWait).
const shapingWindow = int64(100 * time.Millisecond)

// cacheLine is generous: two lines, for CPUs that prefetch in pairs.
const cacheLine = 128

// Init sets the lane up; it must be called once, before Start.
func (l *Lane) Init(cfg Config) {
	l.lower = cfg.Lower
	l.maxBytes = cfg.MaxBytes
	l.budget = cfg.Budget
	l.gate = cfg.Gate
	l.clock = cfg.Clock
	l.alarm = cfg.alarm
	if l.gate != nil && l.alarm == nil {
		l.alarm = newAlarm(cfg.Clock, cfg.Slack, []*Lane{l})
	}
	l.mu.Lock()
	l.ring.Init(cfg.MaxPackets)
	l.state = idle
	l.mu.Unlock()
	l.passDone = sync.NewCond(&l.mu)
}

// Start starts the lane's dispatcher goroutine; wg.Done is called when it
// has stopped, after Close.
func (l *Lane) Start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.loop()
	}()
}

// Enqueue queues pkt, taking a reference of its own. It answers
// ErrClosedForSend after Close, and ErrNoBufferSpace (counting a drop) when
// the ring or the byte bound is full; in both cases it takes nothing.
func (l *Lane) Enqueue(pkt *stack.PacketBuffer) tcpip.Error {
	size := uint64(pkt.Size())
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return &tcpip.ErrClosedForSend{}
	}
	if !l.ring.HasSpace() || (l.maxBytes != 0 && l.ring.Bytes()+size > l.maxBytes) || (l.budget != nil && !l.budget.take(size)) {
		l.overflows++ // under the lock already: no atomic on a contended path
		l.mu.Unlock()
		return &tcpip.ErrNoBufferSpace{}
	}
	inline := false
	var now int64 // read when needed: far from the ceiling, never
	if l.state == throttled {
		// The lane is shaping: book the packet's departure now, in arrival
		// order across the lanes sharing the gate, as one FIFO would send
		// them (so a packet's wait is bounded by the bytes queued ahead of
		// it in all lanes, as Linux's latency bound promises). If the
		// head's departure has come, the alarm's help below sends it.
		now = l.now()
		l.ring.PushBackAt(pkt.IncRef(), l.gate.Book(now, uint32(size)))
	} else if l.state == idle && l.lastWait != 0 {
		if now := l.now(); now-l.lastWait < shapingWindow {
			l.ring.PushBack(pkt.IncRef()) // the pass books it
			l.state = running
			l.inPass = true
			inline = true
		} else {
			l.lastWait = 0
			l.ring.PushBack(pkt.IncRef())
		}
	} else {
		l.ring.PushBack(pkt.IncRef())
	}
	wake := l.state == idle
	if wake {
		l.state = running
	}
	l.mu.Unlock()
	if wake {
		l.wake.Assert()
	}
	if inline {
		l.runInline()
	}
	if a := l.alarm; a != nil {
		// Serve the lanes (this one too) waiting for a departure that has
		// come, saving the timer's wake-up. Far from the ceiling none
		// waits, and this is one load of a word that does not change.
		if due := a.due.Load(); due != math.MaxInt64 {
			if now == 0 {
				now = l.now()
			}
			if due <= now {
				a.help(now)
			}
		}
	}
	return nil
}

// runInline runs a pass on the calling goroutine (the timer's, or an
// enqueuer's), the lane's state having been set to running and inPass.
func (l *Lane) runInline() {
	l.run(&l.passBatch)
	l.mu.Lock()
	l.inPass = false
	l.passDone.Broadcast()
	l.mu.Unlock()
}

// CountDrop counts a packet the owner refused before queueing it.
func (l *Lane) CountDrop() { l.drops.Add(1) }

// Close stops the lane: later Enqueues are refused, and the dispatcher
// releases every queued packet and exits. It does not wait; the owner
// waits on the WaitGroup given to Start. Close is idempotent.
func (l *Lane) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	l.closing.Assert()
}

// Quiescent reports whether the dispatcher is asleep with nothing it can do
// before its timer fires or a packet arrives. Tests use it to step a
// faketime.ManualClock deterministically.
func (l *Lane) Quiescent() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state != running
}

// Stats returns the lane's counters and backlog.
func (l *Lane) Stats() qdisc.Stats {
	l.mu.Lock()
	backlogBytes, backlogPackets, overflows := l.ring.Bytes(), uint64(l.ring.Len()), l.overflows
	l.mu.Unlock()
	return qdisc.Stats{
		Bytes:          l.sentBytes.Load(),
		Packets:        l.sentPackets.Load(),
		Drops:          l.drops.Load() + overflows,
		Overlimits:     l.overlimits.Load(),
		BacklogBytes:   backlogBytes,
		BacklogPackets: backlogPackets,
	}
}

// Lateness returns how late the lane's waits on the alarm ended: the time
// from each booked departure to the pass the alarm started (from its timer
// or an arriving packet), which includes any Slack.
func (l *Lane) Lateness() qdisc.HistogramSnapshot { return l.lateness.Snapshot() }

// now reads the lane's clock in nanoseconds.
func (l *Lane) now() int64 { return nowNS(l.clock) }

// nowNS reads clock in nanoseconds.
func nowNS(clock tcpip.Clock) int64 {
	return int64(clock.NowMonotonic().Sub(tcpip.MonotonicTime{}))
}

// onAlarm runs when the alarm fires at now. If the lane waits and its head
// packet's booked departure has come, it runs the pass itself, on the
// timer's goroutine, rather than wake the dispatcher: one goroutine
// hand-off fewer per wake. The state (running) keeps Enqueue from waking
// the dispatcher meanwhile, so one pass runs at a time. A lane whose
// departure is still to come has the alarm armed for it again.
func (l *Lane) onAlarm(now int64) {
	l.mu.Lock()
	if l.state != throttled || l.closed {
		l.mu.Unlock()
		return
	}
	if l.deadline > now {
		l.alarm.arm(l.deadline, now)
		l.mu.Unlock()
		return
	}
	l.state = running
	l.timerFired = true
	l.inPass = true
	l.alarm.leave()
	l.mu.Unlock()
	l.runInline()
}

func (l *Lane) loop() {
	var s sleep.Sleeper
	s.AddWaker(&l.wake)
	s.AddWaker(&l.closing)
	defer s.Done()
	var batch stack.PacketBufferList
	for {
		if s.Fetch(true) == &l.closing {
			l.drain()
			return
		}
		l.run(&batch)
	}
}

// run sends what the gate allows, batch by batch, until the ring is empty,
// the gate says wait, or the lane is closed.
func (l *Lane) run(batch *stack.PacketBufferList) {
	var sizes [qdisc.BatchSize]uint32
	for {
		l.mu.Lock()
		if l.closed {
			// The closing waker is asserted; loop drains.
			l.mu.Unlock()
			return
		}
		if l.ring.IsEmpty() {
			l.state = idle
			l.mu.Unlock()
			return
		}
		var now, wait int64
		if l.gate != nil {
			now = l.now()
			if l.timerFired {
				l.timerFired = false
				l.lateness.Record(time.Duration(now - l.deadline))
			}
		}
		if l.gate != nil {
			// The batch's packets not yet booked are booked now, seen now
			// (they had arrived by now), in one call.
			l.ring.StampFront(l.bookSizes[:], l.bookDepartures[:], func(sizes []uint32, departures []int64) {
				l.gate.BookAll(now, sizes, departures)
			})
		}
		n := 0
		for n < qdisc.BatchSize {
			pkt, size := l.ring.PeekFront()
			if pkt == nil {
				break
			}
			if l.gate != nil {
				if wait = l.ring.FrontStamp() - now; wait > 0 {
					break
				}
			}
			l.ring.RemoveFront()
			batch.PushBack(pkt)
			sizes[n] = size
			n++
		}
		if n == 0 {
			// The head packet must wait for tokens: sleep on the alarm
			// until they have come (or later: see Alarm). The alarm is
			// armed as the clock reads now, not as it read at the top of
			// the pass, so a dispatcher held up in between does not
			// oversleep; if the deadline has passed already, look again
			// instead. It is armed under the lock, so that a test that
			// sees the lane quiescent also sees the alarm armed. (A batch
			// that ended on a refused packet is written first, and the
			// next pass arms the alarm: the lane never sleeps with a batch
			// in hand.) Every packet queued
			// behind the head is booked now, in order, before packets that
			// arrive later on other lanes.
			l.deadline = now + wait
			l.ring.StampUnstamped(func(size uint32) int64 { return l.gate.Book(now, size) })
			if at := l.now(); l.deadline > at {
				l.state = throttled
				l.lastWait = now
				l.overlimits.Add(1)
				l.alarm.wait(l.deadline, at)
				l.mu.Unlock()
				return
			}
			l.mu.Unlock()
			continue
		}
		l.mu.Unlock()
		l.write(batch, sizes[:n])
	}
}

// write hands batch to the lower link, releases the batch's references and
// counts what the link took; what it refused is dropped.
func (l *Lane) write(batch *stack.PacketBufferList, sizes []uint32) {
	n, _ := l.lower.WritePackets(*batch)
	batch.Reset()
	n = max(0, min(n, len(sizes)))
	var bytes uint64
	for _, s := range sizes[:n] {
		bytes += uint64(s)
	}
	l.sentPackets.Add(uint64(n))
	l.sentBytes.Add(bytes)
	if n < len(sizes) {
		l.drops.Add(uint64(len(sizes) - n))
	}
	if l.budget != nil {
		all := bytes
		for _, s := range sizes[n:] {
			all += uint64(s)
		}
		l.budget.give(all)
	}
}

// drain runs on the dispatcher after Close: it stops waiting on the alarm
// and releases every queued packet, counting each as a drop.
func (l *Lane) drain() {
	l.mu.Lock()
	for l.inPass {
		l.passDone.Wait() // a pass that began before Close
	}
	if l.state == throttled {
		l.alarm.leave()
	}
	dropped, bytes := l.ring.Purge()
	l.state = stopped
	l.mu.Unlock()
	l.drops.Add(uint64(dropped))
	if l.budget != nil {
		l.budget.give(bytes)
	}
}

// Group is a qdisc's lanes: started together, closed together, their
// statistics summed.
type Group struct {
	Lanes []Lane
	alarm *Alarm
	wg    sync.WaitGroup
}

// Init makes n lanes (at least 1), each set up with cfg; with a Gate,
// they share one Alarm.
func (g *Group) Init(n int, cfg Config) {
	g.Lanes = make([]Lane, max(n, 1))
	if cfg.Gate != nil {
		lanes := make([]*Lane, len(g.Lanes))
		for i := range g.Lanes {
			lanes[i] = &g.Lanes[i]
		}
		g.alarm = newAlarm(cfg.Clock, cfg.Slack, lanes)
		cfg.alarm = g.alarm
	}
	for i := range g.Lanes {
		g.Lanes[i].Init(cfg)
	}
}

// Start starts every lane's dispatcher.
func (g *Group) Start() {
	for i := range g.Lanes {
		g.Lanes[i].Start(&g.wg)
	}
}

// Lane returns the lane for a packet hash.
func (g *Group) Lane(hash uint32) *Lane { return &g.Lanes[hash%uint32(len(g.Lanes))] }

// Close closes every lane and waits for their dispatchers to exit.
func (g *Group) Close() {
	for i := range g.Lanes {
		g.Lanes[i].Close()
	}
	g.wg.Wait()
}

// Stats sums the lanes' statistics.
func (g *Group) Stats() qdisc.Stats {
	var s qdisc.Stats
	for i := range g.Lanes {
		s = s.Add(g.Lanes[i].Stats())
	}
	return s
}

// Lateness sums the lanes' wake-up lateness.
func (g *Group) Lateness() qdisc.HistogramSnapshot {
	var s qdisc.HistogramSnapshot
	for i := range g.Lanes {
		s = s.Add(g.Lanes[i].Lateness())
	}
	return s
}

// Wakeups returns how many times the lanes' shared timer has fired (0
// without a Gate).
func (g *Group) Wakeups() uint64 {
	if g.alarm == nil {
		return 0
	}
	return g.alarm.Wakeups()
}

// Quiescent reports whether every lane is quiescent (see Lane.Quiescent).
func (g *Group) Quiescent() bool {
	for i := range g.Lanes {
		if !g.Lanes[i].Quiescent() {
			return false
		}
	}
	return true
}
