// Package dispatch drains netqdisc's queues to the lower link, in the
// shape Linux gives every qdisc: a Queue (enqueue, peek, dequeue: the
// packet ring, or a qdisc of its own such as fq_codel), an optional Gate
// over it that says when its head may leave (tbf's token bucket, as Linux's
// tbf gates its child), one pass loop that sends what may leave (Linux's
// qdisc_restart), and one watchdog timer, the Alarm. fifo is lanes with no
// gate (every packet is due at once, so fifo pays nothing for it), tbf is
// lanes with one, fq_codel a lane whose queue is fq_codel, tbf over
// fq_codel a lane with both, and htb a lane whose queue is a
// qdisc.Shaper: it holds packets back until a time it names (NextEvent),
// for which the lane waits on the Alarm, and an enqueue that makes one of
// its classes active (Activated) ends the wait, as Linux runs a qdisc
// after every enqueue.
//
// Why one shared mechanism: the parts that are easy to get subtly wrong
// are the same in every qdisc (when to wake the dispatcher, how a closed
// qdisc refuses packets and releases what it holds, how a batch's
// references are released and counted), so they are written once.
//
// # A pass
//
// A pass (Lane.run) takes, a few batches at a time under the lane's lock,
// first the packets the lower link refused for want of room (requeued, as
// Linux's dev_requeue_skb keeps them, counted in Stats.Requeues), then
// what the queue hands over whose departure has come, and writes them to
// the lower link outside the lock. With a gate, the pass peeks the queue's
// head packets and books their departures with the gate when it first sees
// them (a batch's worth in one call: the bucket is updated once), as
// tbf_dequeue peeks its child; without a gate, a queue that dequeues in
// batches (qdisc.BatchDequeuer: htb) fills each batch in one call. The
// pass ends when the queue is empty (the lane goes idle), when the head
// must wait for its departure or the link took nothing (the lane waits on
// the Alarm: throttled), or at Close.
//
// # States, and who runs a pass
//
// One pass runs at a time; which goroutine runs it follows from the lane's
// state, which changes only under the lane's lock:
//
//   - idle: the queue is empty, nobody runs a pass. An enqueuer that finds
//     the lane idle makes it running and wakes the lane's dispatcher
//     goroutine; on the send path, if the lane had to wait for its gate in
//     the last 100 ms (it is shaping), the enqueuer runs the pass itself
//     instead, saving a goroutine hand-off, as Linux's __dev_xmit_skb runs
//     qdisc_run on the sending CPU.
//   - running: a pass runs, or the dispatcher is about to start one.
//     Enqueuers only queue.
//   - throttled: the lane waits on the Alarm for a deadline (the head's
//     departure, or a retry after the link took nothing). Enqueuers only
//     queue. Whoever serves the Alarm when the deadline has come (its
//     timer's goroutine, Linux's qdisc watchdog, or on the send path an
//     enqueuer on any lane of the qdisc that finds it due) makes the lane
//     running and runs the pass itself.
//   - stopped: closed and drained.
//
// So a pass runs on the lane's dispatcher, on the Alarm's timer, or on
// the send path on an enqueuer's goroutine; never on a control call's
// (SetGate, SetLimits) and, on the receive path (Config.QueueOnly), never
// on an enqueuer's: there the enqueuer is a link's delivering goroutine,
// which the link may join while the stack holds its locks, so it only
// queues, as Linux's ifb runs its queue from its own tasklet. A fifo
// lane's dispatcher runs every pass and never reads the clock unless the
// link refuses packets. Passes that run off the dispatcher are marked
// inPass, so that Close waits for them before it releases the queue.
//
// # Changes in place
//
// SetGate and SetLimits change a running group's gate and bounds under
// each lane's lock, as Linux's tbf_change swaps buckets under the qdisc's:
// the queue keeps its packets, in order, and they are booked anew with
// the new gate. A lane waiting for the old gate's departure stops waiting
// and its dispatcher is woken to book them; the caller runs no pass.
//
// # Lock order
//
// The one order of netqdisc's locks, outermost first (each holder may
// take those after it, never those before):
//
//	runsc's boot.nicShapers.mu  a sandbox's NICs: runsc qdisc show and
//	                            change, the metrics (runsc patches 0006, 0008)
//	runscflags.NIC.mu           a sandbox NIC's control (runsc qdisc change)
//	ingress.Endpoint.mu         the receive shaper's control
//	tbf.Discipline.mu           a tbf's configuration
//	dispatch.Lane.mu            a lane's queue and state
//	leaves: dispatch.Alarm.mu, tbf's bucket lock (a Gate with a peak
//	rate), ingress's control-frame allowance
//
// No pass runs, and nothing is written to a lower link or delivered to a
// stack, while any of them is held: a pass takes a lane's lock to take
// packets and releases it to write them. So a link or a stack that calls
// back into netqdisc from a write (a stack answering a delivered packet,
// a control query) takes the order from the top. The Alarm releases its
// lock before it runs lanes' passes, and a Budget reclaims other lanes'
// credit holding no lane's lock. The Queue has no lock of its own: the
// lane's guards it (htb and cake keep all their state under it).
// runscflags' TestLockOrder holds the order for every kind, in both
// directions, with a lock standing for runsc's outermost one.
//
// # Where this differs from gVisor's upstream qdiscs
//
//   - Enqueue wakes the dispatcher only when it is idle; a running one will
//     see the packet, and a throttled one does not need it. Upstream
//     asserts a waker on every packet, and its tbf allocates a timer for
//     each wait.
//   - The lanes of a qdisc share one timer (Alarm), created once and Reset
//     thereafter, whose wake-ups are rationed (see Alarm).
//   - A Gate books each packet's departure; a pass that runs late sends
//     what an on-time one would have sent by now.
//   - The backlog is bounded in packets and, optionally, bytes, also
//     across lanes (Budget).
//   - A packet the link refuses for want of room is requeued and counted,
//     not dropped; upstream drops it.
//   - How late each wait on the Alarm ended is recorded (Lateness).
//   - Close is safe against concurrent Enqueue: the closed flag and the
//     queue share one lock, so a packet is either queued before Close (and
//     released by it) or refused with ErrClosedForSend.
//   - Statistics: packets and bytes sent, drops, overlimits, requeues and
//     backlog.
package dispatch

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Gate books departures: it decides when each packet of a lane may leave.
type Gate interface {
	// BookAll books packets of the given sizes, in order, and writes
	// their departures (in nanoseconds on the lane's clock): for each, the
	// earliest time, not before seen[i] (a time by which it had certainly
	// arrived), at which the tokens suffice, after every departure booked
	// before it. A departure may be before now: a pass that runs late then
	// sends what an on-time one would already have sent, instead of losing
	// the credit. Gates shared by several lanes must be safe for
	// concurrent use.
	BookAll(seen []int64, sizes []uint32, departures []int64)
}

// Drainer is a Gate that can say when bytes more, booked right after a
// departure at last, would have left (at its byte rate; packets charged
// more, overhead or a packet rate, leave later): how a lane that has
// booked only its queue's head (a flow queue) tells the alarm when the
// queue runs dry.
type Drainer interface {
	Gate
	DrainAfter(last int64, bytes uint64) int64
}

// NowGate is a Gate that books more cheaply a batch of packets all seen
// at one time (far from the ceiling, every batch a pass books).
type NowGate interface {
	Gate
	// BookAllAt is BookAll with every packet seen at seen, except that
	// the packets the tokens let leave at once, the first due ones, have
	// their departures (seen) not written: only departures[due:] are.
	BookAllAt(seen int64, sizes []uint32, departures []int64) (due int)
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
	// Queue, if not nil, is the lane's queue (fq_codel); nil gives each
	// lane a packet queue of its own (packetbuf.Queue, Linux's pfifo or
	// bfifo) bounded by MaxPackets and MaxBytes. A Group with a Queue has
	// one lane, and no Budget.
	Queue qdisc.Queue
	// MaxPackets bounds the lane's own queue in packets (at least 1).
	MaxPackets int
	// MaxBytes, if not 0, bounds the bytes in the lane's own queue: a packet that
	// would take the backlog past it is dropped, as Linux's bfifo does.
	MaxBytes uint64
	// Budget, if not nil, bounds the bytes queued in all the lanes that
	// share it, the same way.
	Budget *Budget
	// MaxPacketBytes, if not 0, is the largest packet the lane takes: a
	// larger one is dropped (tbf's bucket could never pass it).
	MaxPacketBytes uint32
	// Size, if not nil, is what the lane charges a packet, in place of
	// gso.WireSize: the one number its bounds, its queue's backlog, its
	// gate and its sent bytes count the packet as. It must not allocate.
	// With Size set, a host-GSO packet larger than MaxPacketBytes is not
	// cut into pieces but dropped: the receive path (package tbf's NewTo)
	// sets it, and a received packet is not the lane's to cut.
	Size func(*stack.PacketBuffer) uint64
	// Gate, if not nil, is asked before each packet leaves.
	Gate Gate
	// QueueOnly says enqueuers only queue and, when the lane is idle, wake
	// its dispatcher: they never run a pass or serve the Alarm, so that
	// what the lane writes is written only by the dispatcher and the
	// Alarm's timer. The receive path sets it (package ingress, through
	// tbf.NewTo): its enqueuer is a link's delivering goroutine, which a
	// link may join while the stack holds its locks (fdbased's Attach(nil)
	// under RemoveNIC), and a pass on it would deliver to that stack.
	QueueOnly bool
	// Clock gives the gate and the queue the time and runs the Alarm; nil
	// is the system's clock.
	Clock tcpip.Clock
	// Slack is the least time between two wake-ups of the lanes' timer
	// (see Alarm). 0: the timer fires at every deadline. On an Uplink it
	// is at least UplinkSlack.
	Slack time.Duration
	// alarm is the timer the lanes of a Group share; Init makes a lane
	// its own when it is nil.
	alarm *Alarm
}

// RequeueDelay is how long a lane waits before it offers the lower link
// again packets it refused for want of room, when it took none of a batch
// (a link that takes some is offered the rest at once). Linux waits for
// the driver to wake its queue; gVisor's links have no such signal.
const RequeueDelay = 100 * time.Microsecond

// nowNS reads clock in nanoseconds.
func nowNS(clock tcpip.Clock) int64 {
	return int64(clock.NowMonotonic().Sub(tcpip.MonotonicTime{}))
}
