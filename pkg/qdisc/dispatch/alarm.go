package dispatch

import (
	"math"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// Alarm is the one timer, Linux's qdisc watchdog, that the lanes of a
// qdisc sleep on while they are throttled: waiting for their gate's
// tokens, or to offer the lower link again what it refused.
//
// Why one, and why rationed: a wake-up costs tens of microseconds of CPU on
// a VM whatever wakes the thread (a Go timer, nanosleep and a timerfd all
// measure alike), as much as a whole packet costs fifo. A bucket of one or
// two packets waits before nearly every packet, and a timer per lane would
// wake once per lane. So the alarm fires at the earliest departure a lane
// waits for, but never sooner than Slack after the waiting lanes were last
// served, and each firing serves every lane whose departure has come. A
// packet arriving on any lane serves them too, from its own goroutine,
// when it finds a departure come, and then no wake-up is needed at all.
// A qdisc that waits now and then is woken on time; one that waits packet
// after packet is woken at most once per Slack, however many lanes it
// has, and not at all while arriving packets keep sending what is due;
// either way a packet leaves at most Slack (and the timer's granularity)
// late. A gate that books departures makes that safe: what is sent late is
// caught up, never sent early.
//
// Slack saves wake-ups only while a lane's backlog outlasts it. A lane
// says when its queue would run dry (the last booked packet's departure,
// and where the gate can say, Drainer, the bytes queued behind it at
// its rate), and the alarm fires by then however recent the last
// firing: senders that queue a packet only when one of theirs has left
// (TCP small queues) would otherwise find the queue empty and the link
// idle for the rest of the Slack, their rate cut to what they keep
// queued per Slack.
type Alarm struct {
	clock tcpip.Clock
	slack int64 // +checklocksignore: set once, by newAlarm
	lanes []*Lane
	fires atomic.Uint64
	// due is the earliest deadline a lane waits for (noDeadline: none), so
	// that an arriving packet can see without a lock whether to serve.
	due atomic.Int64

	mu sync.Mutex
	// timer is the one timer, created stopped and Reset thereafter.
	// +checklocks:mu
	timer tcpip.Timer
	// armed says the timer is set, for at.
	// +checklocks:mu
	armed bool
	// +checklocks:mu
	at int64
	// served is when the waiting lanes were last served: by the timer, or
	// by an arriving packet that found a departure come.
	// +checklocks:mu
	served int64
	// waiting counts the lanes in state throttled: the timer is stopped
	// when none is left.
	// +checklocks:mu
	waiting int
	// drain is the earliest time a lane armed since the last serve said
	// its queue runs dry (noDeadline: none did).
	// +checklocks:mu
	drain int64
}

// noDeadline is Alarm.due when no lane waits.
const noDeadline = math.MaxInt64

// +checklocksignore: the alarm is not shared until it is returned.
func newAlarm(clock tcpip.Clock, slack time.Duration, lanes []*Lane) *Alarm {
	a := &Alarm{clock: clock, slack: int64(max(slack, 0)), lanes: lanes}
	a.served = math.MinInt64 / 2 // long ago, whatever the clock's epoch
	a.due.Store(noDeadline)
	a.drain = noDeadline
	a.timer = clock.AfterFunc(time.Hour, a.fire)
	a.timer.Stop()
	return a
}

// wait counts a lane that begins to wait for deadline (the clock reading
// now) and arms the timer for it; drain is when the lane's queue runs dry
// (noDeadline: not before it is served). The lane holds its own lock.
func (a *Alarm) wait(deadline, drain, now int64) {
	a.mu.Lock()
	a.waiting++
	a.armLocked(deadline, drain, now)
	a.mu.Unlock()
}

// arm arms the timer for a lane that still waits for deadline.
func (a *Alarm) arm(deadline, drain, now int64) {
	a.mu.Lock()
	a.armLocked(deadline, drain, now)
	a.mu.Unlock()
}

// +checklocks:a.mu
func (a *Alarm) armLocked(deadline, drain, now int64) {
	if deadline < a.due.Load() {
		a.due.Store(deadline)
	}
	a.drain = min(a.drain, drain)
	at := a.atLocked(deadline)
	if a.armed && a.at <= at {
		return
	}
	a.armed, a.at = true, at
	a.timer.Reset(time.Duration(at - now))
}

// atLocked is when the timer fires for the earliest deadline: at it, but
// no sooner than Slack after the last serve unless a lane drains sooner.
// +checklocks:a.mu
func (a *Alarm) atLocked(deadline int64) int64 {
	return max(deadline, min(a.served+a.slack, a.drain))
}

// leave uncounts a lane that stops waiting; the last to leave stops the
// timer. The lane holds its own lock.
func (a *Alarm) leave() {
	a.mu.Lock()
	a.waiting--
	if a.waiting == 0 && a.armed {
		a.armed = false
		a.timer.Stop()
	}
	a.mu.Unlock()
}

// fire runs on the timer's goroutine and serves the lanes.
func (a *Alarm) fire() {
	now := nowNS(a.clock)
	a.fires.Add(1)
	a.mu.Lock()
	a.armed = false
	a.serveLocked(now)
}

// help serves the lanes from an enqueuer's goroutine at now, if a departure
// has come.
func (a *Alarm) help(now int64) {
	if a.due.Load() > now {
		return
	}
	a.mu.Lock()
	if a.due.Load() > now { // served meanwhile
		a.mu.Unlock()
		return
	}
	a.serveLocked(now)
}

// serveLocked runs a pass of every lane whose departure has come, one after
// another; the lanes still waiting arm the timer again (and set due). It
// unlocks a.mu.
// +checklocksrelease:a.mu
func (a *Alarm) serveLocked(now int64) {
	a.served = max(a.served, now)
	a.due.Store(noDeadline)
	a.drain = noDeadline // the lanes still waiting say it again
	a.mu.Unlock()
	for _, l := range a.lanes {
		l.onAlarm(now)
	}
	// The timer may still be armed for a lane served here: move it to the
	// earliest departure still awaited, no sooner than Slack after now
	// unless a lane drains sooner, rather than wake for nothing.
	a.mu.Lock()
	if a.armed && a.waiting > 0 {
		if at := a.atLocked(a.due.Load()); at > a.at {
			a.at = at
			a.timer.Reset(time.Duration(at - nowNS(a.clock)))
		}
	}
	a.mu.Unlock()
}

// Wakeups returns how many times the timer has fired.
func (a *Alarm) Wakeups() uint64 { return a.fires.Load() }
