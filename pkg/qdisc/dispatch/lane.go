package dispatch

import (
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/sleep"
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
	"github.com/netqdisc/netqdisc/pkg/qdisc/packetbuf"
)

// Lane is one queue and its dispatcher. Use it through a pointer, after
// Init and Start. The shaping half of it (a lane with a Gate) is in
// shaping.go.
type Lane struct {
	lower     stack.LinkWriter
	maxBytes  uint64
	maxPacket uint64
	size      func(*stack.PacketBuffer) uint64
	budget    *Budget
	gate      Gate
	queue     Queue
	clock     tcpip.Clock
	alarm     *Alarm

	wake    sleep.Waker
	closing sleep.Waker

	mu sync.Mutex
	// +checklocks:mu
	ring packetbuf.Ring
	// +checklocks:mu
	state state
	// +checklocks:mu
	closed bool
	// refused counts the packets dropped at Enqueue: too large, or the
	// ring or a byte bound full (the other drops are in drops).
	// +checklocks:mu
	refused uint64
	// credit is bytes counted in the budget that no queued packet uses
	// (see Budget).
	// +checklocks:mu
	credit uint64

	// The shaping lane's state (see shaping.go).

	// deadline is the departure the gate booked for the head packet,
	// while the lane waits on the alarm.
	// +checklocks:mu
	deadline int64
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
	// With a Queue (see queue.go): headBooked says the gate has booked the
	// head the queue handed over, for headDeparture.
	// +checklocks:mu
	headBooked bool
	// +checklocks:mu
	headDeparture int64
	// bookSizes and bookDepartures carry a pass's bookings to the gate
	// (kept here: arrays passed to an interface would escape to the heap).
	// +checklocks:mu
	bookSizes [takeBatches * qdisc.BatchSize]uint32
	// +checklocks:mu
	bookDepartures [takeBatches * qdisc.BatchSize]int64

	// taken holds the batches a pass took from the ring, to write after
	// releasing the lock. One pass runs at a time (see the package doc),
	// on whichever goroutine runs it.
	taken [takeBatches]batch

	lateness qdisc.Histogram

	sentBytes   atomic.Uint64
	sentPackets atomic.Uint64
	drops       atomic.Uint64
	overlimits  atomic.Uint64

	// Lanes sit side by side in a slice, each written by its own producers
	// and dispatcher: keep a lane's lines to itself.
	_ [cacheLine]byte
}

// cacheLine is generous: two lines, for CPUs that prefetch in pairs.
const cacheLine = 128

// takeBatches is how many batches a pass takes from the ring under one
// lock: with many producers on one queue, the lock is what they contend
// for, and the pass takes it a quarter as often.
const takeBatches = 4

// batch is packets taken from the ring for one WritePackets call.
type batch struct {
	pkts  stack.PacketBufferList
	sizes [qdisc.BatchSize]uint32
	n     int
}

// add appends pkt, of size bytes, and reports whether the batch is full.
func (b *batch) add(pkt *stack.PacketBuffer, size uint32) bool {
	b.pkts.PushBack(pkt)
	b.sizes[b.n] = size
	b.n++
	return b.n == qdisc.BatchSize
}

// Init sets the lane up; it must be called once, before Start.
func (l *Lane) Init(cfg Config) {
	l.lower = cfg.Lower
	l.maxBytes = cfg.MaxBytes
	l.maxPacket = uint64(cfg.MaxPacketBytes)
	l.size = cfg.Size
	l.budget = cfg.Budget
	l.gate = cfg.Gate
	l.queue = cfg.Queue
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
// ErrClosedForSend after Close, ErrMessageTooLong for a packet larger than
// MaxPacketBytes, and ErrNoBufferSpace when the ring or a byte bound is
// full (the last two count a drop); then it takes nothing. A packet's size
// is Config.Size's, by default what it puts on the wire (gso.WireSize);
// by default too, a host-GSO packet larger than MaxPacketBytes is queued
// as pieces that fit (see enqueueSplit).
func (l *Lane) Enqueue(pkt *stack.PacketBuffer) tcpip.Error {
	var size uint64
	if l.size != nil {
		size = l.size(pkt)
	} else {
		size = gso.WireSize(pkt)
		if l.maxPacket != 0 && size > l.maxPacket && gso.Segments(pkt) > 1 {
			return l.enqueueSplit(pkt, size)
		}
	}
	l.mu.Lock()
	err := l.checkLocked(size) // inlined: a fifo's whole admission
	if err == nil && l.budget != nil {
		err = l.admitBudgetLocked(size)
	}
	if err != nil {
		l.mu.Unlock()
		return err
	}
	switch {
	case l.queue != nil:
		l.enqueueQueueLocked(pkt, size)
		return nil
	case l.gate != nil:
		l.enqueueShapingLocked(pkt, size)
		return nil
	}
	l.ring.PushBack(pkt.IncRef(), size)
	wake := l.wakeLocked()
	l.mu.Unlock()
	if wake {
		l.wake.Assert()
	}
	return nil
}

// admitBudgetLocked charges a packet of size bytes, which checkLocked let
// in, to the lane's budget, or refuses it (ErrNoBufferSpace, a drop) when
// the budget would pass its limit. When the budget runs out, the lock is
// released while the other lanes' credit is reclaimed, and the packet is
// looked at again.
// +checklocks:l.mu
func (l *Lane) admitBudgetLocked(size uint64) tcpip.Error {
	if l.chargeLocked(size) {
		return nil
	}
	if !l.budget.tight.Load() {
		l.mu.Unlock()
		l.budget.reclaim(l)
		l.mu.Lock()
		if err := l.checkLocked(size); err != nil || l.chargeLocked(size) {
			return err
		}
	}
	l.refused++
	return &tcpip.ErrNoBufferSpace{}
}

// checkLocked says whether a packet of size bytes may be queued, but for
// the budget's bound: not after Close (ErrClosedForSend); not larger than
// MaxPacketBytes (ErrMessageTooLong, a drop); not past the ring's or the
// lane's bound (ErrNoBufferSpace, a drop). (A Queue bounds itself.)
// +checklocks:l.mu
func (l *Lane) checkLocked(size uint64) tcpip.Error {
	if l.closed {
		return &tcpip.ErrClosedForSend{}
	}
	if l.maxPacket != 0 && size > l.maxPacket {
		l.refused++
		return &tcpip.ErrMessageTooLong{}
	}
	if l.queue == nil && (!l.ring.HasSpace() || (l.maxBytes != 0 && l.ring.Bytes()+size > l.maxBytes)) {
		l.refused++ // under the lock already: no atomic on a contended path
		return &tcpip.ErrNoBufferSpace{}
	}
	return nil
}

// wakeLocked makes an idle lane running and reports whether its
// dispatcher must be woken (after the lock is released).
// +checklocks:l.mu
func (l *Lane) wakeLocked() bool {
	if l.state != idle {
		return false
	}
	l.state = running
	return true
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

// Stats returns the lane's counters and backlog.
func (l *Lane) Stats() qdisc.Stats {
	l.mu.Lock()
	backlogBytes, backlogPackets, refused := l.ring.Bytes(), uint64(l.ring.Len()), l.refused
	if l.queue != nil {
		n, b := l.queue.Len()
		backlogBytes, backlogPackets, refused = b, uint64(n), refused+l.queue.Drops()
	}
	l.mu.Unlock()
	return qdisc.Stats{
		Bytes:          l.sentBytes.Load(),
		Packets:        l.sentPackets.Load(),
		Drops:          l.drops.Load() + refused,
		Overlimits:     l.overlimits.Load(),
		BacklogBytes:   backlogBytes,
		BacklogPackets: backlogPackets,
	}
}

// Locked runs f under the lane's lock: to read its Queue's own counters.
func (l *Lane) Locked(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// Lateness returns how late the lane's waits on the alarm ended: the time
// from each booked departure to the pass the alarm started (from its timer
// or an arriving packet), which includes any Slack.
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

// run runs a pass (see the package doc).
func (l *Lane) run() {
	switch {
	case l.queue != nil && l.gate != nil:
		l.runQueueShaping()
		return
	case l.queue != nil:
		l.runQueue()
		return
	case l.gate != nil:
		l.runShaping()
		return
	}
	var left uint64
	for {
		l.mu.Lock()
		if l.budget != nil {
			l.refundLocked(left)
		}
		if !l.continueLocked() {
			l.mu.Unlock()
			return
		}
		k := 0
		for !l.ring.IsEmpty() && k < len(l.taken) {
			pkt, size := l.ring.RemoveFront()
			if l.taken[k].add(pkt, size) {
				k++
			}
		}
		l.mu.Unlock()
		left = l.writeTaken()
	}
}

// continueLocked says whether a pass goes on: not once the lane is closed
// (the closing waker is asserted, and the dispatcher drains), nor once the
// ring is empty (the lane is then idle).
// +checklocks:l.mu
func (l *Lane) continueLocked() bool {
	if l.closed {
		return false
	}
	if l.ring.IsEmpty() {
		l.state = idle
		return false
	}
	return true
}

// writeTaken writes the batches the pass took, each to the lower link in
// one call: it releases their references and counts what the link took;
// what it refused is dropped. It returns the bytes that left the lane,
// which the pass refunds to the budget the next time it holds the lock.
func (l *Lane) writeTaken() (left uint64) {
	for i := range l.taken {
		b := &l.taken[i]
		if b.n == 0 {
			break
		}
		left += l.write(b)
	}
	return left
}

// write writes one batch and returns its bytes.
func (l *Lane) write(b *batch) (all uint64) {
	n, _ := l.lower.WritePackets(b.pkts)
	b.pkts.Reset()
	sizes := b.sizes[:b.n]
	b.n = 0
	n = max(0, min(n, len(sizes)))
	var sent uint64
	for i, s := range sizes {
		all += uint64(s)
		if i < n {
			sent = all
		}
	}
	l.sentPackets.Add(uint64(n))
	l.sentBytes.Add(sent)
	if n < len(sizes) {
		l.drops.Add(uint64(len(sizes) - n))
	}
	return all
}

// drain runs on the dispatcher after Close: it waits for a pass running
// off the dispatcher, stops waiting on the alarm, and releases every
// queued packet, counting each as a drop.
func (l *Lane) drain() {
	l.mu.Lock()
	for l.inPass {
		l.passDone.Wait()
	}
	if l.state == throttled {
		l.alarm.leave()
	}
	dropped, bytes := l.ring.Purge()
	if l.queue != nil {
		dropped, bytes = l.queue.Purge()
	}
	if l.budget != nil {
		l.budget.give(bytes + l.credit)
		l.credit = 0
	}
	l.state = stopped
	l.mu.Unlock()
	l.drops.Add(uint64(dropped))
}
