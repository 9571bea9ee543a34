// Package dispatch runs the queues that netqdisc's disciplines are built
// from. A Lane is one bounded ring of packets (or a Queue, a qdisc of its
// own) and one dispatcher goroutine that drains it to the lower link in
// batches. fifo is lanes without a Gate; tbf is lanes with one (its token
// bucket), which says when each packet may leave; fq_codel is a lane with
// a Queue, and tbf over fq_codel one with both.
//
// Why one shared mechanism: the parts that are easy to get subtly wrong
// are the same in every qdisc (when to wake the dispatcher, how a closed
// qdisc refuses packets and releases what it holds, how a batch's
// references are released and counted), so they are written once.
//
// # States, and who runs a pass
//
// A pass takes packets from the ring and writes them to the lower link
// until the ring is empty, the gate says wait, or the lane is closed. One
// pass runs at a time; which goroutine runs it follows from the lane's
// state, which changes only under the lane's lock:
//
//   - idle: the ring is empty, nobody runs a pass. An enqueuer that finds
//     the lane idle makes it running and wakes the dispatcher; if the lane
//     had to wait for its gate in the last 100 ms (it is shaping), the
//     enqueuer runs the pass itself instead, saving a goroutine hand-off.
//   - running: a pass runs, or the dispatcher is about to start one.
//     Enqueuers only queue.
//   - throttled: the head packet waits for its booked departure and the
//     lane waits on its Alarm. Enqueuers book their packet's departure as
//     it arrives (so lanes sharing a gate send in arrival order, as one
//     FIFO). Whoever serves the Alarm when the departure has come (its
//     timer's goroutine, or an enqueuer on any lane that finds it due)
//     makes the lane running and runs the pass itself.
//   - stopped: closed and drained.
//
// A fifo lane is only ever idle, running or stopped, and its dispatcher
// runs every pass: it never reads the clock and never books. A lane whose
// queue is a qdisc (a Queue: fq_codel) goes through the same states, but
// its gate books a packet when the queue hands it over, at a pass, not as
// it arrives (queue.go).
//
// Passes that run off the dispatcher (on the timer's goroutine or an
// enqueuer's) are marked inPass, so that Close waits for them before it
// releases the ring.
//
// # Where this differs from gVisor's upstream qdiscs
//
//   - Enqueue wakes the dispatcher only when it is idle; a running one will
//     see the packet, and a throttled one does not need it. Upstream
//     asserts a waker on every packet, and its tbf allocates a timer for
//     each wait.
//   - The lanes of a qdisc share one timer (Alarm), created once and Reset
//     thereafter, whose wake-ups are rationed (see Alarm).
//   - A Gate books each packet's departure, a batch at a time; a pass that
//     runs late sends what an on-time one would have sent by now.
//   - The backlog is bounded in packets and, optionally, bytes, also
//     across lanes (Budget).
//   - How late each wait on the Alarm ended is recorded (Lateness).
//   - Close is safe against concurrent Enqueue: the closed flag and the
//     ring share one lock, so a packet is either queued before Close (and
//     released by it) or refused with ErrClosedForSend.
//   - Statistics: packets and bytes sent, drops, overlimits and backlog.
package dispatch

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Gate books departures: it decides when each packet of a lane may leave.
type Gate interface {
	// Book reserves a packet's tokens and returns its departure time (in
	// nanoseconds on the lane's clock): the earliest time, not before seen,
	// at which the tokens suffice, after every departure booked before it.
	// seen is a time by which the packet had certainly arrived. The
	// departure may be before now: a pass that runs late then sends what
	// an on-time one would already have sent, instead of losing the
	// credit. Gates shared by several lanes must be safe for concurrent
	// use.
	Book(seen int64, size uint32) (departure int64)
	// BookAll books packets of the given sizes, in order, at seen, as
	// consecutive Book calls would with no booking between them, and
	// writes their departures. A pass books its batch with it: one update
	// of a shared bucket instead of one per packet.
	BookAll(seen int64, sizes []uint32, departures []int64)
}

// state is what a lane's dispatcher is doing (see the package doc).
type state uint8

const (
	idle state = iota
	running
	throttled
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
	// MaxPacketBytes, if not 0, is the largest packet the lane takes: a
	// larger one is dropped (tbf's bucket could never pass it).
	MaxPacketBytes uint32
	// Size, if not nil, is what the lane charges a packet, in place of
	// gso.WireSize: the one number its bounds, its ring's backlog, its
	// gate and its sent bytes count the packet as. It must not allocate.
	// With Size set, a host-GSO packet larger than MaxPacketBytes is not
	// cut into pieces but dropped: the receive path (package tbf's NewTo)
	// sets it, and a received packet is not the lane's to cut.
	Size func(*stack.PacketBuffer) uint64
	// Queue, if not nil, is the lane's queue in place of its FIFO ring
	// (see Queue); MaxPackets, MaxBytes and Budget then do not apply. A
	// Group with a Queue has one lane.
	Queue Queue
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

// nowNS reads clock in nanoseconds.
func nowNS(clock tcpip.Clock) int64 {
	return int64(clock.NowMonotonic().Sub(tcpip.MonotonicTime{}))
}
