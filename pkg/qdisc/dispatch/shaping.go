package dispatch

import (
	"math"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// The shaping lane: a lane with a Gate. Its steps are
//
//   - book: a packet's departure is booked with the gate when a pass first
//     sees it (a pass's worth at a time, bookLocked) or, while the lane is
//     throttled, as it arrives (enqueueShapingLocked);
//   - take what is due: a pass takes the packets whose departure has come
//     (takeDueLocked);
//   - throttle: when the head's departure is still to come, the lane waits
//     on the alarm (throttleLocked);
//   - wake: the alarm, from its timer or from an enqueuer that finds a
//     departure come (serveDue), runs the pass of each lane whose
//     departure has come (onAlarm).

// shapingWindow is how long after a lane last waited for its gate it
// counts as shaping (see shapingRecently).
const shapingWindow = int64(100 * time.Millisecond)

// now reads the lane's clock in nanoseconds.
func (l *Lane) now() int64 { return nowNS(l.clock) }

// enqueueShapingLocked queues an admitted packet on a lane with a gate,
// then releases the lock. While the lane is throttled the packet's
// departure is booked now, in arrival order across the lanes sharing the
// gate, as one FIFO would send them (so a packet's wait is bounded by the
// bytes queued ahead of it in all lanes, as Linux's latency bound
// promises). Otherwise the pass books it.
// +checklocksrelease:l.mu
func (l *Lane) enqueueShapingLocked(pkt *stack.PacketBuffer, size uint64) {
	var now int64 // read only when needed: far from the ceiling, never
	inline := false
	switch {
	case l.state == throttled:
		now = l.now()
		l.ring.PushBackAt(pkt.IncRef(), size, l.gate.Book(now, uint32(min(size, math.MaxUint32))))
	case l.state == idle && l.lastWait != 0:
		now = l.now()
		l.ring.PushBack(pkt.IncRef(), size)
		if l.shapingRecently(now) {
			l.state = running
			l.inPass = true
			inline = true
		}
	default:
		l.ring.PushBack(pkt.IncRef(), size)
	}
	wake := l.wakeLocked()
	l.mu.Unlock()
	if wake {
		l.wake.Assert()
	}
	if inline {
		l.runInline()
	}
	l.serveDue(now)
}

// shapingRecently says whether the lane waited for its gate less than
// shapingWindow before now. A packet arriving on an idle lane that is
// shaping is sent from its enqueuer's goroutine, rather than by waking the
// dispatcher. Far from the ceiling a lane never waits, and dispatch stays
// asynchronous, as fifo's.
// +checklocks:l.mu
func (l *Lane) shapingRecently(now int64) bool {
	if now-l.lastWait < shapingWindow {
		return true
	}
	l.lastWait = 0
	return false
}

// serveDue serves the lanes sharing the alarm (this one too) whose
// departure has come, at now (read if 0), saving the timer's wake-up. Far
// from the ceiling no lane waits, and this is one load of a word that does
// not change.
func (l *Lane) serveDue(now int64) {
	due := l.alarm.due.Load()
	if due == math.MaxInt64 {
		return
	}
	if now == 0 {
		now = l.now()
	}
	if due <= now {
		l.alarm.help(now)
	}
}

// onAlarm runs when the alarm serves the lanes at now. If the lane is
// throttled and its head's departure has come, it runs the pass itself, on
// the alarm's goroutine (the timer's, or an enqueuer's), rather than wake
// the dispatcher: one goroutine hand-off fewer per wake. A lane whose
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

// runInline runs a pass off the dispatcher (the lane having been made
// running and inPass), then lets a waiting drain go on.
func (l *Lane) runInline() {
	l.run()
	l.mu.Lock()
	l.inPass = false
	l.passDone.Broadcast()
	l.mu.Unlock()
}

// runShaping is a shaping lane's pass: book, take what is due, write it,
// and throttle when the head must wait.
func (l *Lane) runShaping() {
	var left uint64
	for {
		l.mu.Lock()
		if l.budget != nil {
			l.refundLocked(left)
		}
		left = 0
		if !l.continueLocked() {
			l.mu.Unlock()
			return
		}
		now := l.passTimeLocked()
		l.bookLocked(now)
		if wait := l.takeDueLocked(now); wait > 0 {
			throttled := l.throttleLocked(now, wait)
			l.mu.Unlock()
			if throttled {
				return
			}
			continue
		}
		l.mu.Unlock()
		left = l.writeTaken()
	}
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

// bookLocked books, seen now (they had arrived by now), the packets a pass
// may take that have no departure yet, in one gate call.
// +checklocks:l.mu
func (l *Lane) bookLocked(now int64) {
	l.ring.StampFront(l.bookSizes[:], l.bookDepartures[:], func(sizes []uint32, departures []int64) {
		l.gate.BookAll(now, sizes, departures)
	})
}

// takeDueLocked moves the packets whose departure has come, up to
// takeBatches batches, from the ring to l.taken. When none is due, it
// returns how long the head has still to wait (else 0). (A pass that took
// packets and stopped at one still to come writes them first, and its
// next round throttles: the lane never waits with packets in hand.)
// +checklocks:l.mu
func (l *Lane) takeDueLocked(now int64) (wait int64) {
	k, n := 0, 0
	for !l.ring.IsEmpty() && k < len(l.taken) {
		if w := l.ring.FrontStamp() - now; w > 0 {
			if n == 0 {
				return w
			}
			return 0
		}
		pkt, size := l.ring.RemoveFront()
		n++
		if l.taken[k].add(pkt, size) {
			k++
		}
	}
	return 0
}

// throttleLocked makes the lane wait on the alarm for the head's
// departure, now+wait, and reports true; first every packet queued behind
// the head is booked, in order, before packets that arrive later on other
// lanes.
// +checklocks:l.mu
func (l *Lane) throttleLocked(now, wait int64) bool {
	l.ring.StampUnstamped(func(size uint32) int64 { return l.gate.Book(now, size) })
	return l.waitAlarmLocked(now, wait)
}

// waitAlarmLocked makes the lane throttled, waiting on the alarm for the
// departure now+wait (an overlimit), and reports true. The alarm is armed
// as the clock reads now, not as it read at the top of the pass, so that a
// pass held up in between does not oversleep; if the departure has come
// meanwhile, it reports false and the pass looks again. The alarm is armed
// under the lock, so that a test that sees the lane quiescent also sees
// the alarm armed.
// +checklocks:l.mu
func (l *Lane) waitAlarmLocked(now, wait int64) bool {
	l.deadline = now + wait
	at := l.now()
	if l.deadline <= at {
		return false
	}
	l.state = throttled
	l.lastWait = now
	l.overlimits.Add(1)
	l.alarm.wait(l.deadline, at)
	return true
}
