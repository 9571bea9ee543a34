package dispatch

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
)

// shapingWindow is how long after a lane last waited for its gate it
// counts as shaping (see shapingRecently).
const shapingWindow = int64(100 * time.Millisecond)

// Enqueue queues pkt, taking a reference of its own. It answers
// ErrClosedForSend after Close, ErrMessageTooLong for a packet larger than
// MaxPacketBytes, and ErrNoBufferSpace when the queue or a byte bound is
// full (the last two count a drop); then it takes nothing. A packet's size
// is Config.Size's, by default what it puts on the wire (gso.WireSize);
// by default too, a host-GSO packet larger than MaxPacketBytes is queued
// as pieces that fit (see enqueueSplit).
func (l *Lane) Enqueue(pkt *stack.PacketBuffer) tcpip.Error {
	var size uint64
	maxPacket := l.maxPacket.Load()
	if l.size != nil {
		size = l.size(pkt)
	} else {
		size = gso.WireSize(pkt)
		if maxPacket != 0 && size > maxPacket && gso.Segments(pkt) > 1 {
			return l.enqueueSplit(pkt, maxPacket)
		}
	}
	// A queue that places packets by their headers reads them here,
	// before the lock, so that the lock serialises only the queueing.
	var key uint32
	if l.sorter != nil {
		key = l.sorter.Sort(pkt)
	}
	l.mu.Lock()
	if l.closed || l.budget != nil || (maxPacket != 0 && size > maxPacket) {
		if l.budget != nil && l.credit >= size && !l.closed && (maxPacket == 0 || size <= maxPacket) {
			l.credit -= size // admitLocked's charge, from the lane's own credit
			if l.credit == 0 {
				l.holding.Store(false)
			}
		} else if err := l.admitLocked(size); err != nil {
			l.mu.Unlock()
			return err
		}
	}
	// The arrival is read only when needed: for a fifo, never; for a gate,
	// while the lane waits, so that a late pass books the packet as seen
	// when it came and sends what an on-time one would have (an idle or
	// running lane's pass books what it sees as seen then, at once).
	now := int64(qdisc.Unstamped)
	if (l.stamped && !l.blind) || (l.gate != nil && l.state == throttled) {
		now = l.now()
		l.arrivals = true
	}
	var ok bool
	if l.sorter != nil {
		ok = l.sorter.EnqueueSorted(pkt.IncRef(), uint32(min(size, 1<<32-1)), now, key)
	} else if l.stamped {
		ok = l.queue.Enqueue(pkt.IncRef(), uint32(min(size, 1<<32-1)), now)
	} else { // the lane's own queue, called directly on the packet path
		ok = l.own.Enqueue(pkt.IncRef(), uint32(min(size, 1<<32-1)), now)
	}
	if !ok {
		pkt.DecRef()
		if l.budget != nil {
			l.credit += size
			l.heldLocked()
		}
		l.mu.Unlock()
		return &tcpip.ErrNoBufferSpace{}
	}
	if l.state == throttled && l.shaper != nil && l.shaper.Activated() {
		l.unthrottleLocked()
		return nil
	}
	if l.state != idle && (l.gate == nil || l.queueOnly) { // its pass or its alarm will see it
		l.mu.Unlock()
		return nil
	}
	if l.state != idle && l.alarm.due.Load() == noDeadline {
		// A pass will see it, and no lane waits on the alarm: kickLocked
		// would do nothing (far from the ceiling, every packet but the
		// first of a pass).
		l.mu.Unlock()
		return nil
	}
	l.kickLocked(now)
	return nil
}

// admitLocked says whether a packet of size bytes may be queued, but for
// the queue's own bounds: not after Close (ErrClosedForSend); not larger
// than MaxPacketBytes (ErrMessageTooLong, a drop); not past the budget
// (ErrNoBufferSpace, a drop), which it charges.
// +checklocks:l.mu
func (l *Lane) admitLocked(size uint64) tcpip.Error {
	if l.closed {
		return &tcpip.ErrClosedForSend{}
	}
	if m := l.maxPacket.Load(); m != 0 && size > m {
		l.refused++
		return &tcpip.ErrMessageTooLong{}
	}
	if l.budget != nil {
		return l.admitBudgetLocked(size)
	}
	return nil
}

// kickLocked sees that a pass will send the packet just queued (arrived at
// now, Unstamped if the clock was not read), then releases the lock: an
// idle lane is made running and its dispatcher woken, or, when it is
// shaping, the enqueuer runs the pass itself (as Linux's __dev_xmit_skb
// runs qdisc_run on the sending CPU); a running or throttled lane is left
// to its pass or its alarm. Then, with a gate, it serves the lanes whose
// deadline has come. A QueueOnly lane's enqueuer does neither: it only
// wakes the dispatcher.
// +checklocksrelease:l.mu
func (l *Lane) kickLocked(now int64) {
	inline := false
	if l.state == idle && l.lastWait != 0 && !l.queueOnly {
		if now == qdisc.Unstamped {
			now = l.now()
		}
		if l.shapingRecently(now) {
			l.state = running
			l.inPass = true
			inline = true
		}
	}
	wake := l.state == idle
	if wake {
		l.state = running
	}
	serve := l.gate != nil && !l.queueOnly // a fifo's only waits are a full link's, left to the timer
	l.mu.Unlock()
	if wake {
		l.wake.Assert()
	}
	if inline {
		l.runInline()
	}
	if serve {
		l.serveDue(now)
	}
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
// deadline has come, at now (read if Unstamped), saving the timer's
// wake-up. When no lane waits, this is one load of a word that does not
// change.
func (l *Lane) serveDue(now int64) {
	due := l.alarm.due.Load()
	if due == noDeadline {
		return
	}
	if now == qdisc.Unstamped {
		now = l.now()
	}
	if due <= now {
		l.alarm.help(now)
	}
}

// now reads the lane's clock in nanoseconds.
func (l *Lane) now() int64 { return nowNS(l.clock) }

// unthrottleLocked ends the lane's wait for its shaper's next event, which
// a packet just queued may leave before, then releases the lock: on the
// send path the enqueuer runs the pass itself, as Linux's qdisc_run after
// an enqueue; on the receive path (QueueOnly) the dispatcher is woken.
// +checklocksrelease:l.mu
func (l *Lane) unthrottleLocked() {
	if l.queueOnly {
		l.wakeThrottledLocked()
		return
	}
	l.alarm.leave()
	l.state = running
	l.inPass = true
	l.mu.Unlock()
	l.runInline()
}
