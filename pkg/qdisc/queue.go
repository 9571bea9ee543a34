package qdisc

import "gvisor.dev/gvisor/pkg/tcpip/stack"

// Unstamped is the arrival time of a packet queued without one: the
// dispatcher did not read the clock for it (a FIFO never needs to).
const Unstamped = -1 << 63

// Queue is a queue of packets as Linux's Qdisc_ops has it: enqueue, peek,
// dequeue, reset (Purge) and qlen. A dispatch lane drains one: the packet
// ring (packetbuf.Queue, Linux's pfifo/bfifo) by default, or a qdisc of its
// own such as fq_codel, which picks the packet that leaves next and may drop
// packets as they arrive and as they leave. A tbf is a gate over a Queue,
// as Linux's tbf is over its child qdisc. A Queue is not safe for
// concurrent use: its lane calls it under its own lock. Times are the
// lane's clock in nanoseconds.
type Queue interface {
	// Enqueue queues pkt, charged size bytes, arrived at now (Unstamped
	// when the lane did not read the clock), taking over the reference
	// given. It reports false, taking nothing and counting a drop, when
	// the queue is full; a queue that makes room by dropping other packets
	// (fq_codel) counts those and reports true.
	Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) bool
	// Peek writes the sizes and arrival times of the packets that the
	// next Dequeues will return, front first, up to len(sizes), and
	// returns how many it wrote (0: empty). A queue that decides at
	// dequeue time which packet leaves (fq_codel) decides at now, writes
	// at most one and keeps it, counted, for the next Dequeue, as Linux's
	// qdisc_peek_dequeued does.
	Peek(now int64, sizes []uint32, arrived []int64) int
	// Dequeue removes the packet that leaves next, at now, and hands its
	// reference to the caller with its size; ok is false when empty.
	Dequeue(now int64) (pkt *stack.PacketBuffer, size uint32, ok bool)
	// Purge releases every queued packet and returns how many packets and
	// bytes it dropped (not counted in Drops: the owner counts them).
	Purge() (packets int, bytes uint64)
	// Len returns the packets and bytes queued.
	Len() (packets int, bytes uint64)
	// Drops returns how many packets the queue has dropped: refused when
	// full, or dropped by its own policy.
	Drops() uint64
}

// XStatser is a Queue that keeps counters of its own (fq_codel's
// maxpacket, drop_overlimit, ecn_mark, ...), which `tc -s qdisc show`
// prints after the common ones. Like the rest of a Queue, TCXStats is
// called under the lane's lock.
type XStatser interface {
	TCXStats() string
}

// Shaper is a Queue that shapes on its own, as Linux's htb and cake do:
// its Dequeue may hand over nothing while packets wait, until a time it
// names. Its lane reads the clock for every pass.
type Shaper interface {
	Queue
	// NextEvent returns, after a Dequeue at now that handed over nothing
	// while packets were queued, the time (ns, > now) at which it should
	// be called again: the time Linux's qdisc would arm its watchdog for.
	NextEvent() int64
	// Activated reports whether the last Enqueue queued a packet that may
	// leave before NextEvent (it made an idle class active, or needs no
	// shaping), so that a lane waiting for NextEvent looks again at once,
	// as Linux runs its qdisc after every enqueue. A packet that joins a
	// class already waiting changes nothing, and wakes nobody.
	Activated() bool
}

// Sorter is a Queue that places each packet by reading its headers (htb's
// filters), and can read them before its lane's lock is taken: producers
// then read headers side by side, and hold the lock only to queue. Sort
// may be called by any number of goroutines at once, with no lock held,
// and reads nothing Enqueue or Dequeue write; EnqueueSorted is Enqueue
// with Sort's answer for the packet, and is called, as Enqueue is, under
// the lane's lock.
type Sorter interface {
	Queue
	// Sort returns where pkt goes, for EnqueueSorted.
	Sort(pkt *stack.PacketBuffer) uint32
	// EnqueueSorted is Enqueue of a packet that Sort placed at key.
	EnqueueSorted(pkt *stack.PacketBuffer, size uint32, now int64, key uint32) bool
}

// BatchDequeuer is a Queue that hands over many packets in one call, as
// that many Dequeues at one time would (htb, whose streak then costs no
// call a packet): a lane without a gate takes its batches so.
type BatchDequeuer interface {
	Queue
	// DequeueBatch dequeues, at now, up to len(sizes) packets, the ones
	// that many Dequeue(now) calls would return, until one would return
	// nothing: it appends them to pkts, in order, and their sizes to
	// sizes, and returns how many. It may write sizes past those (as
	// scratch).
	DequeueBatch(now int64, pkts *stack.PacketBufferList, sizes []uint32) int
}

// ArrivalBlind is a Queue that never reads the arrival times Enqueue is
// given (htb over pfifo leaves): its lane does not read the clock for
// them, and passes qdisc.Unstamped.
type ArrivalBlind interface {
	Queue
	// ArrivalBlind reports whether the queue ignores arrival times.
	ArrivalBlind() bool
}
