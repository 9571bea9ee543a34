package dispatch

import (
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/sleep"
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/packetbuf"
)

// Lane is one queue, its optional gate, and its dispatcher. Use it
// through a pointer, after Init and Start.
type Lane struct {
	lower stack.LinkWriter
	// maxPacket is the largest packet the lane takes (0: any); SetGate
	// changes it.
	maxPacket atomic.Uint64
	size      func(*stack.PacketBuffer) uint64
	budget    *Budget
	clock     tcpip.Clock
	alarm     *Alarm
	// stamped says the queue is a qdisc of its own (fq_codel), which is
	// given each packet's arrival time and the time of each dequeue; a
	// byte queue without a gate never needs the clock. Without it the
	// queue is the lane's own, which the packet path calls directly.
	stamped bool
	// queueOnly is Config.QueueOnly: no pass on an enqueuer's goroutine.
	queueOnly bool

	wake    sleep.Waker
	closing sleep.Waker

	mu sync.Mutex
	// gate, if not nil, books each packet's departure (SetGate changes
	// it on a running qdisc).
	// +checklocks:mu
	gate Gate
	// ownGate is the qdisc's own gate, gate without the uplink's: what Gate
	// shows as its ceiling.
	// +checklocks:mu
	ownGate Gate
	// uplink is the lower link's gate (Uplink), nil if it has none: gate
	// books with it after the qdisc's own.
	uplink Gate
	// timed says a pass reads the clock: the lane has a gate, or a
	// stamped queue.
	// +checklocks:mu
	timed bool
	// blind says the queue does not read arrival times
	// (qdisc.ArrivalBlind): enqueuers do not read the clock for it.
	blind bool
	// sorter is the queue, when it places packets by their headers
	// (qdisc.Sorter): enqueuers sort before they take the lock. Set by
	// Init, never changed.
	sorter qdisc.Sorter
	// shaper is the queue, when it shapes on its own (htb): a pass that
	// it hands nothing while packets wait waits for its NextEvent.
	// +checklocks:mu
	shaper qdisc.Shaper
	// queue is the lane's queue: own, or the one Config gave.
	// +checklocks:mu
	queue qdisc.Queue
	// batcher is the queue, when it dequeues in batches
	// (qdisc.BatchDequeuer).
	// +checklocks:mu
	batcher qdisc.BatchDequeuer
	// own is the lane's own packet queue (Linux's pfifo/bfifo), its queue
	// unless Config gave one.
	// +checklocks:mu
	own packetbuf.Queue
	// requeued holds the packets the lower link refused for want of
	// room, in order, to be sent before anything in the queue.
	// +checklocks:mu
	requeued packetbuf.Ring
	// +checklocks:mu
	state state
	// +checklocks:mu
	closed bool
	// refused counts the packets dropped at Enqueue by the lane itself
	// (too large, or over the budget); the queue counts its own.
	// +checklocks:mu
	refused uint64
	// credit is bytes counted in the budget that no queued packet uses
	// (see Budget).
	// +checklocks:mu
	credit uint64
	// holding is credit != 0, readable without the lock: a lane that must
	// drop a packet reclaims the credit of the lanes holding some (see
	// Budget). It changes only under the lock, with credit.
	holding atomic.Bool
	// counted is the bytes of the budget's count that are the lane's: its
	// backlog (queued, requeued, being written) and its credit.
	// +checklocks:mu
	counted uint64
	// claim is the lane's claim to its share of the budget.
	claim claim
	// deadline is what the lane waits for on the alarm while throttled.
	// +checklocks:mu
	deadline int64
	// dries is when the queue runs dry, as the lane told the alarm when
	// it began to wait (see drainLocked).
	// +checklocks:mu
	dries int64
	// timerFired says the alarm started a pass that has not yet looked at
	// the clock (which then records how late the wait ended).
	// +checklocks:mu
	timerFired bool
	// inPass says a pass runs off the dispatcher, on the timer's goroutine
	// or an enqueuer's; drain waits for it on passDone.
	// +checklocks:mu
	inPass   bool
	passDone *sync.Cond
	// lastWait is when the lane last had to wait for its gate: while that
	// is recent the lane is shaping (see shapingRecently).
	// +checklocks:mu
	lastWait int64
	// arrivals says the lane's own queue may hold packets that carry
	// their arrival (queued while the lane waited), until it is next
	// found empty; without them a pass books a batch as all seen at once
	// (NowGate).
	// +checklocks:mu
	arrivals bool
	// The departures the gate booked for the queue's first packets:
	// booked[next:n] are those of the packets the next Dequeues return.
	// +checklocks:mu
	booked bookings

	// taken holds the batches a pass took, to write after releasing the
	// lock. One pass runs at a time (see the package doc), on whichever
	// goroutine runs it.
	taken [takeBatches]batch

	lateness qdisc.Histogram

	sentBytes   atomic.Uint64
	sentPackets atomic.Uint64
	drops       atomic.Uint64
	overlimits  atomic.Uint64
	requeues    atomic.Uint64

	// Lanes sit side by side in a slice, each written by its own producers
	// and dispatcher: keep a lane's lines to itself.
	_ [cacheLine]byte
}

// cacheLine is generous: two lines, for CPUs that prefetch in pairs.
const cacheLine = 128

// takeBatches is how many batches a pass takes under one lock: with many
// producers on one queue, the lock is what they contend for, and the pass
// takes it a quarter as often.
const takeBatches = 4

// Init sets the lane up; it must be called once, before Start.
func (l *Lane) Init(cfg Config) {
	l.lower = cfg.Lower
	l.maxPacket.Store(uint64(cfg.MaxPacketBytes))
	l.size = cfg.Size
	l.budget = cfg.Budget
	l.clock = cfg.Clock
	if l.clock == nil {
		l.clock = tcpip.NewStdClock()
	}
	l.stamped = cfg.Queue != nil
	if b, ok := cfg.Queue.(qdisc.ArrivalBlind); ok && b.ArrivalBlind() {
		l.blind = true
	}
	l.sorter, _ = cfg.Queue.(qdisc.Sorter)
	l.queueOnly = cfg.QueueOnly
	l.alarm = cfg.alarm
	if l.alarm == nil {
		l.alarm = newAlarm(l.clock, cfg.slack(), []*Lane{l})
	}
	l.uplink = uplinkOf(cfg.Lower)
	l.mu.Lock()
	l.gate, l.ownGate = chain(cfg.Gate, l.uplink), cfg.Gate
	l.timed = l.gate != nil || l.stamped
	l.queue = cfg.Queue
	l.shaper, _ = cfg.Queue.(qdisc.Shaper)
	l.batcher, _ = cfg.Queue.(qdisc.BatchDequeuer)
	if l.queue == nil {
		l.own.Init(cfg.MaxPackets, cfg.MaxBytes)
		l.queue = &l.own
	}
	l.requeued.Init(len(l.taken) * qdisc.BatchSize)
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

// Quiescent reports whether the lane is idle or throttled: nothing runs
// until its timer fires or a packet arrives. Tests use it to step a clock
// deterministically.
func (l *Lane) Quiescent() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state != running
}

// Stats returns the lane's counters and backlog (the queue's drops and
// the requeued packets included).
func (l *Lane) Stats() qdisc.Stats {
	l.mu.Lock()
	packets, bytes := l.queue.Len()
	packets += l.requeued.Len()
	bytes += l.requeued.Bytes()
	dropped := l.refused + l.queue.Drops()
	l.mu.Unlock()
	return qdisc.Stats{
		Bytes:          l.sentBytes.Load(),
		Packets:        l.sentPackets.Load(),
		Drops:          l.drops.Load() + dropped,
		Overlimits:     l.overlimits.Load(),
		Requeues:       l.requeues.Load(),
		BacklogBytes:   bytes,
		BacklogPackets: uint64(packets),
	}
}

// Locked runs f under the lane's lock: to read its Queue's own counters.
func (l *Lane) Locked(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// Now reads the lane's clock in ns, the time its Queue is given.
func (l *Lane) Now() int64 { return l.now() }

// Lateness returns how late the lane's waits on the alarm ended: the time
// from each deadline to the pass the alarm started (from its timer or an
// arriving packet), which includes any Slack.
func (l *Lane) Lateness() qdisc.HistogramSnapshot { return l.lateness.Snapshot() }

// loop is the dispatcher: it runs a pass each time it is woken, until the
// lane is closed.
func (l *Lane) loop() {
	var s sleep.Sleeper
	s.AddWaker(&l.wake)
	s.AddWaker(&l.closing)
	defer s.Done()
	for {
		if s.Fetch(true) == &l.closing {
			l.drain()
			return
		}
		l.run()
	}
}

// drain runs on the dispatcher after Close: it waits for a pass running
// off the dispatcher, stops waiting on the alarm, and releases every
// queued and requeued packet, counting each as a drop.
func (l *Lane) drain() {
	l.mu.Lock()
	for l.inPass {
		l.passDone.Wait()
	}
	if l.state == throttled {
		l.alarm.leave()
	}
	dropped, bytes := l.queue.Purge()
	d, b := l.requeued.Purge()
	dropped, bytes = dropped+d, bytes+b
	l.booked.clear()
	if l.budget != nil {
		l.leaveBudgetLocked(bytes)
	}
	l.state = stopped
	l.mu.Unlock()
	l.drops.Add(uint64(dropped))
}
