package dispatch

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Queue is a lane's queue when it is a qdisc of its own, as fq_codel is,
// in place of the FIFO ring: it picks the packet that leaves next, and may
// drop packets as they arrive and as they leave. A lane with a Queue and a
// Gate is Linux's tbf with a child qdisc: the gate charges each packet
// when the queue hands it over, as tbf_dequeue peeks its child, not when
// it arrives. Its methods run under the lane's lock; times are the lane's
// clock in nanoseconds.
type Queue interface {
	// Enqueue queues pkt, of size bytes, arrived at now, taking over the
	// reference given; it returns how many packets it dropped for room.
	Enqueue(pkt *stack.PacketBuffer, size uint32, now int64) (dropped int)
	// Dequeue removes the packet that leaves next at now; ok is false
	// when the queue is empty. The caller gets its reference.
	Dequeue(now int64) (pkt *stack.PacketBuffer, size uint32, ok bool)
	// Peek is Dequeue for a packet that may have to wait (for the gate):
	// the queue decides at now which packet it is and keeps it, counted,
	// for the next Dequeue. arrived is when it was enqueued.
	Peek(now int64) (size uint32, arrived int64, ok bool)
	// Len returns the packets and bytes queued.
	Len() (packets int, bytes uint64)
	// Purge drops everything queued and returns how much it was.
	Purge() (packets int, bytes uint64)
	// Drops returns how many packets the queue has dropped.
	Drops() uint64
}

// enqueueQueueLocked queues an admitted packet on a lane with a Queue,
// then releases the lock, waking or running a pass as the lane's state
// says (see the package doc): a lane waiting on the alarm is left to it.
// +checklocksrelease:l.mu
func (l *Lane) enqueueQueueLocked(pkt *stack.PacketBuffer, size uint64) {
	now := l.now()
	l.queue.Enqueue(pkt.IncRef(), uint32(size), now)
	inline := false
	if l.gate != nil && l.state == idle && l.lastWait != 0 && l.shapingRecently(now) {
		l.state = running
		l.inPass = true
		inline = true
	}
	wake := l.wakeLocked()
	l.mu.Unlock()
	if wake {
		l.wake.Assert()
	}
	if inline {
		l.runInline()
	}
	if l.gate != nil {
		l.serveDue(now)
	}
}

// runQueue is the pass of a lane with a Queue and no gate (fq_codel
// alone): it takes what the queue hands over, a few batches at a time,
// and writes it, until the queue is empty.
func (l *Lane) runQueue() {
	for {
		l.mu.Lock()
		if !l.continueQueueLocked() {
			l.mu.Unlock()
			return
		}
		now := l.now()
		for k := 0; k < len(l.taken); {
			pkt, size, ok := l.queue.Dequeue(now)
			if !ok {
				break
			}
			if l.taken[k].add(pkt, size) {
				k++
			}
		}
		l.mu.Unlock()
		l.writeTaken()
	}
}

// runQueueShaping is the pass of a lane with a Queue and a Gate: it asks
// the queue for its next packet at the time of the pass, books it with
// the gate (once: a packet that must wait keeps its departure), takes it
// if its departure has come, and otherwise waits on the alarm for it.
//
// A packet is booked as seen at its arrival: the gate puts its departure
// after every earlier one, so it leaves when Linux's tbf, its watchdog
// firing on time, would have sent it, and a pass that runs late sends
// what is due without losing the credit of the wait.
func (l *Lane) runQueueShaping() {
	for {
		l.mu.Lock()
		if !l.continueQueueLocked() {
			l.mu.Unlock()
			return
		}
		now := l.passTimeLocked()
		wait := l.takeQueuedLocked(now)
		if wait > 0 {
			throttled := l.waitAlarmLocked(now, wait)
			l.mu.Unlock()
			if throttled {
				return
			}
			continue
		}
		l.mu.Unlock()
		l.writeTaken()
	}
}

// takeQueuedLocked moves packets whose departure has come from the queue
// to l.taken, up to takeBatches batches. When the head's departure is to
// come and nothing was taken, it returns how long it has to wait.
// +checklocks:l.mu
func (l *Lane) takeQueuedLocked(now int64) (wait int64) {
	for k, n := 0, 0; k < len(l.taken); n++ {
		size, arrived, ok := l.queue.Peek(now)
		if !ok {
			return 0
		}
		if !l.headBooked {
			l.headDeparture = l.gate.Book(arrived, size)
			l.headBooked = true
		}
		if w := l.headDeparture - now; w > 0 {
			if n == 0 {
				return w
			}
			return 0 // write what was taken first
		}
		pkt, size, _ := l.queue.Dequeue(now)
		l.headBooked = false
		if l.taken[k].add(pkt, size) {
			k++
		}
	}
	return 0
}

// continueQueueLocked is continueLocked for a lane with a Queue.
// +checklocks:l.mu
func (l *Lane) continueQueueLocked() bool {
	if l.closed {
		return false
	}
	if n, _ := l.queue.Len(); n == 0 {
		l.state = idle
		return false
	}
	return true
}
