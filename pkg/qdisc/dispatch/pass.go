package dispatch

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// run is a pass (see the package doc): take what may leave, write it,
// until the queue is empty, the lane must wait, or it is closed.
func (l *Lane) run() {
	var left uint64
	for {
		l.mu.Lock()
		if l.budget != nil {
			l.refundLocked(left)
		}
		left = 0
		if l.closed {
			l.mu.Unlock()
			return
		}
		n, wait, now := l.takeLocked()
		if n == 0 {
			switch {
			case wait == 0: // empty
				l.state = idle
			case l.throttleLocked(now, wait):
			default: // the departure came meanwhile
				l.mu.Unlock()
				continue
			}
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		var stalled bool
		left, stalled = l.writeTaken()
		if stalled {
			l.mu.Lock()
			if l.budget != nil {
				l.refundLocked(left)
			}
			left = 0
			if !l.closed && l.waitLocked(l.now()+int64(RequeueDelay)) {
				l.mu.Unlock()
				return
			}
			l.mu.Unlock()
		}
	}
}

// takeLocked moves into l.taken, up to takeBatches batches, the requeued
// packets if there are any, else what the queue hands over whose
// departure has come (with no gate, everything). It returns how many packets it took;
// when it took none and the head must wait, how long (wait is 0 when the
// queue is empty), and the time of the pass (read only when the lane is
// timed).
// +checklocks:l.mu
func (l *Lane) takeLocked() (n int, wait, now int64) {
	k := 0
	for !l.requeued.IsEmpty() && k < len(l.taken) {
		pkt, size := l.requeued.RemoveFront()
		n++
		if l.taken[k].add(pkt, size) {
			k++
		}
	}
	now = qdisc.Unstamped
	if l.timed {
		now = l.passTimeLocked()
	}
	if n > 0 {
		// The link is offered what it refused first, alone, as Linux's
		// dequeue_skb does: what waits in the queue stays there, where a
		// queue that measures delay (CoDel) sees it.
		return n, 0, now
	}
	if l.batcher != nil && l.gate == nil {
		if n = l.takeBatchedLocked(now); n == 0 {
			return 0, l.shaperWaitLocked(now), now
		}
		return n, 0, now
	}
	for k < len(l.taken) {
		if l.gate != nil {
			// booked[:due] are due (NowGate): far from the ceiling, the
			// gate is asked once a batch.
			if l.booked.next >= l.booked.due {
				if l.booked.next == l.booked.n && !l.bookLocked(now) {
					// Empty, or a queue that shapes on its own (htb,
					// cake) holds its packets back: the lane waits for
					// its next event, as without a gate, not idle
					// until the next packet comes.
					if n == 0 {
						return 0, l.shaperWaitLocked(now), now
					}
					break
				}
				if l.booked.next >= l.booked.due { // not known to be due
					d := l.booked.departures[l.booked.next]
					if w := d - now; w > 0 {
						if n == 0 {
							return 0, w, now
						}
						break // write what was taken first
					}
				}
			}
			l.booked.next++
		}
		var pkt *stack.PacketBuffer
		var size uint32
		var ok bool
		if l.stamped {
			pkt, size, ok = l.queue.Dequeue(now)
		} else { // the lane's own queue, called directly on the packet path
			pkt, size, ok = l.own.Dequeue(now)
		}
		if !ok {
			if n == 0 {
				return 0, l.shaperWaitLocked(now), now
			}
			break
		}
		n++
		if l.taken[k].add(pkt, size) {
			k++
		}
	}
	return n, 0, now
}

// takeBatchedLocked is takeLocked's loop for a queue that dequeues in
// batches, on a lane without a gate: it fills l.taken's batches, a
// DequeueBatch call each, and returns how many packets it took.
// +checklocks:l.mu
func (l *Lane) takeBatchedLocked(now int64) int {
	n := 0
	for k := range l.taken {
		b := &l.taken[k]
		got := l.batcher.DequeueBatch(now, &b.pkts, b.sizes[b.n:])
		b.n += got
		n += got
		if b.n < len(b.sizes) {
			break // the queue has no more due
		}
	}
	return n
}

// shaperWaitLocked is how long a pass that took nothing waits: when the
// queue shapes on its own and holds its packets back (Linux's qdisc arms
// its watchdog), until its next event, else 0 (empty).
// +checklocks:l.mu
func (l *Lane) shaperWaitLocked(now int64) int64 {
	if l.shaper != nil {
		if p, _ := l.shaper.Len(); p > 0 {
			return max(l.shaper.NextEvent()-now, 1)
		}
	}
	return 0
}

// bookLocked books the packets the queue shows at its head (a batch's
// worth of the lane's own queue, fq_codel's next one), seen now unless they carry their
// arrival, in one call of the gate; it reports false when the queue is
// empty.
// +checklocks:l.mu
func (l *Lane) bookLocked(now int64) bool {
	b := &l.booked
	b.next, b.due = 0, 0
	if l.stamped {
		b.n = l.queue.Peek(now, b.sizes[:], b.seen[:])
	} else {
		b.n = l.own.Peek(now, b.sizes[:], b.seen[:])
	}
	if b.n == 0 {
		l.arrivals = false
		return false
	}
	if h, ok := l.uplink.(Horizon); ok {
		b.n = withinBytes(b.sizes[:b.n], h.BookBytes())
	}
	seen := b.seen[:b.n]
	if g, ok := l.gate.(NowGate); ok && !l.arrivals && !l.stamped {
		// None carries its arrival: all are seen now. Far from the
		// ceiling, every batch.
		b.due = g.BookAllAt(now, b.sizes[:b.n], b.departures[:b.n])
		return true
	}
	for i, s := range seen {
		if s == qdisc.Unstamped {
			seen[i] = now
		}
	}
	l.gate.BookAll(seen, b.sizes[:b.n], b.departures[:b.n])
	return true
}

// withinBytes returns how many of the packets of sizes, from the first,
// fit in limit bytes: one at least.
func withinBytes(sizes []uint32, limit uint64) int {
	var sum uint64
	for i, s := range sizes {
		sum += uint64(s)
		if sum > limit {
			return max(i, 1)
		}
	}
	return len(sizes)
}

// passTimeLocked reads the clock for a pass; for a pass the alarm
// started, it records how late the wait ended.
// +checklocks:l.mu
func (l *Lane) passTimeLocked() int64 {
	now := l.now()
	if l.timerFired {
		l.timerFired = false
		l.lateness.Record(time.Duration(now - l.deadline))
	}
	return now
}

// throttleLocked makes the lane wait on the alarm for its head's
// departure, now+wait, counting an overlimit, and reports true; if the
// departure has come meanwhile, it reports false and the pass looks again.
// The packets queued meanwhile are marked as seen now (the ones that
// arrive while it waits carry their arrival), so that a late pass books
// them as an on-time one would.
// +checklocks:l.mu
func (l *Lane) throttleLocked(now, wait int64) bool {
	l.own.Seen(now)
	l.arrivals = true
	if !l.waitLocked(now + wait) {
		return false
	}
	l.lastWait = now
	l.overlimits.Add(1)
	return true
}

// waitLocked makes the lane throttled, waiting on the alarm for deadline,
// and reports true. The alarm is armed as the clock reads now, not as it
// read at the top of the pass, so that a pass held up in between does not
// oversleep; if the deadline has come meanwhile, it reports false. The
// alarm is armed under the lock, so that a test that sees the lane
// quiescent also sees the alarm armed.
// +checklocks:l.mu
func (l *Lane) waitLocked(deadline int64) bool {
	at := l.now()
	if deadline <= at {
		return false
	}
	l.deadline = deadline
	l.dries = l.drainLocked()
	l.state = throttled
	l.alarm.wait(deadline, l.dries, at)
	return true
}

// drainLocked is when the lane may run dry if nothing more arrives: the
// departure its gate booked for the last packet it booked, or, where
// the gate says (Drainer), when the packets queued behind would have
// left after it; noDeadline when it has no gate or waits to offer the
// link again what it refused.
// +checklocks:l.mu
func (l *Lane) drainLocked() int64 {
	b := &l.booked
	if l.gate == nil || b.n <= b.next || b.n <= b.due || !l.requeued.IsEmpty() {
		return noDeadline
	}
	last := b.departures[b.n-1]
	d, ok := l.gate.(Drainer)
	if !ok {
		return last
	}
	packets, queued := l.queue.Len()
	if packets <= b.n-b.next {
		return last // every packet queued is booked (a FIFO's usual case)
	}
	var booked uint64
	for _, s := range b.sizes[b.next:b.n] {
		booked += uint64(s)
	}
	return d.DrainAfter(last, queued-min(booked, queued))
}

// onAlarm runs when the alarm serves the lanes at now. If the lane is
// throttled and its deadline has come, it runs the pass itself, on the
// alarm's goroutine (the timer's, or an enqueuer's), rather than wake the
// dispatcher: one goroutine hand-off fewer per wake. A lane whose deadline
// is still to come has the alarm armed for it again.
func (l *Lane) onAlarm(now int64) {
	l.mu.Lock()
	if l.state != throttled || l.closed {
		l.mu.Unlock()
		return
	}
	if l.deadline > now {
		l.alarm.arm(l.deadline, l.dries, now)
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

// runInline runs a pass off the dispatcher (the lane having been made
// running and inPass), then lets a waiting drain go on.
func (l *Lane) runInline() {
	l.run()
	l.mu.Lock()
	l.inPass = false
	l.passDone.Broadcast()
	l.mu.Unlock()
}

// bookings are the departures a gate booked for a queue's first packets,
// with what they were booked from. They are kept in the lane: arrays
// passed to an interface would escape to the heap. The first due packets
// may leave at once (NowGate.BookAllAt), their departures unwritten.
type bookings struct {
	sizes        [takeBatches * qdisc.BatchSize]uint32
	seen         [takeBatches * qdisc.BatchSize]int64
	departures   [takeBatches * qdisc.BatchSize]int64
	next, due, n int
}

// clear forgets the bookings (the queue was purged).
func (b *bookings) clear() { b.next, b.due, b.n = 0, 0, 0 }
