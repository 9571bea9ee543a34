// Package hrtimer gives a tcpip.Clock timers that fire within tens of
// microseconds of their time, as Linux's hrtimers fire a qdisc's
// watchdog. Go's runtime, with nothing else to run, waits for its next
// timer in epoll_wait, whose timeout is in whole milliseconds: a timer
// due in 0.3 ms fires 1 ms late, one due in 50.3 ms 0.7 ms late. netem's
// delay is a promise to the microsecond that such a wait breaks.
//
// A Clock from New arms, for a timer further off than Lead, the clock's
// own timer Lead before the time, then sleeps what is left in ppoll with
// no file (gVisor's rawfile.BlockingPoll), which the kernel ends on time,
// on a goroutine that lives only for that: the clock's timers stay what
// wakes a long wait (a paused Sentry clock pauses them), and no thread
// sleeps for longer than Lead. BlockingPoll hands the goroutine's P to
// the runtime as it enters the kernel, as a blocking syscall should;
// nanosleep kept it, and the sandbox's other goroutines (its replies on
// other classes) waited up to 2 ms for it now and then.
//
// A timer Lead or less away that follows the timer's last Reset or
// firing by less than Lead is the clock's own: such waits come packet
// after packet while a qdisc is busy, when the runtime runs and checks
// its timers as it schedules, and a sleep for each (thousands a second)
// cost a loaded sandbox more than it saved (ping p99 9 ms late under a
// third of netem's rate). One that follows a quiet timer is slept at
// once, as a longer one's end is: a packet that wakes an htb tree 1 ms
// before its netem leaf's packet is due would otherwise leave that
// packet to a runtime with nothing to run, up to 1 ms late.
//
// A clock a test advances by hand is left as it is.
package hrtimer

import (
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/rawfile"
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// Lead is how long before a timer's time the clock's own timer wakes it:
// more than the runtime's millisecond, so that it is never late.
const Lead = 2 * time.Millisecond

// Chunk is the longest sleep in ppoll: a Reset to an earlier time while
// the timer sleeps is seen within it.
const Chunk = 250 * time.Microsecond

// New returns c with precise timers, or c itself if a test advances it by
// hand (it has Advance, as faketime.ManualClock has).
func New(c tcpip.Clock) tcpip.Clock {
	if _, manual := c.(interface{ Advance(time.Duration) }); manual {
		return c
	}
	return &clock{Clock: c}
}

// clock is a tcpip.Clock whose AfterFunc timers are precise.
type clock struct {
	tcpip.Clock
}

// AfterFunc implements tcpip.Clock.AfterFunc.
func (c *clock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	t := &timer{clock: c.Clock, f: f}
	t.mu.Lock()
	t.coarse = c.Clock.AfterFunc(time.Hour, t.coarseFired)
	t.coarse.Stop()
	t.mu.Unlock()
	t.Reset(d)
	return t
}

// timer is one precise timer: the clock's own timer (coarse) until Lead
// before its time, then a sleeper goroutine.
type timer struct {
	clock tcpip.Clock
	f     func()

	mu sync.Mutex
	// coarse is the clock's own timer.
	// +checklocks:mu
	coarse tcpip.Timer
	// active says f is yet to run for the last Reset.
	// +checklocks:mu
	active bool
	// deadline is when, on the clock's monotonic time in ns.
	// +checklocks:mu
	deadline int64
	// sleeping says a sleeper goroutine runs.
	// +checklocks:mu
	sleeping bool
	// plain says the clock's timer is set for the time itself (a timer
	// Lead or less away, after another less than Lead before: see
	// plainWait), not Lead before it.
	// +checklocks:mu
	plain bool
	// last is when the timer was last Reset or fired, on the clock's
	// monotonic time in ns.
	// +checklocks:mu
	last int64
}

// now reads the clock's monotonic time in ns.
func (t *timer) now() int64 {
	return int64(t.clock.NowMonotonic().Sub(tcpip.MonotonicTime{}))
}

// Reset implements tcpip.Timer.Reset.
func (t *timer) Reset(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.active = true
	t.deadline = now + int64(d)
	t.plain = plainWait(d, time.Duration(now-t.last))
	t.last = now
	switch {
	case t.plain:
		t.coarse.Reset(d)
	case d <= Lead:
		t.coarse.Stop()
		t.sleepLocked()
	default:
		t.coarse.Reset(d - Lead)
	}
}

// plainWait says whether a wait of d, since the timer's last Reset or
// firing, is left to the clock's own timer: one Lead or less away while
// the timer is busy (its last Reset or firing less than Lead before),
// when the runtime, running, checks its timers as it schedules.
func plainWait(d, since time.Duration) bool {
	return d <= Lead && since < Lead
}

// Stop implements tcpip.Timer.Stop: it reports whether f was yet to run.
func (t *timer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.active
	t.active = false
	t.coarse.Stop()
	return was
}

// coarseFired runs when the clock's own timer fires: at the time for a
// plain timer, which runs f; else Lead before it, which starts the
// sleeper.
func (t *timer) coarseFired() {
	t.mu.Lock()
	if !t.active {
		t.mu.Unlock()
		return
	}
	if t.plain {
		t.active = false
		t.last = t.now()
		t.mu.Unlock()
		t.f()
		return
	}
	t.sleepLocked()
	t.mu.Unlock()
}

// sleepLocked starts the sleeper, unless it runs.
// +checklocks:t.mu
func (t *timer) sleepLocked() {
	if !t.sleeping {
		t.sleeping = true
		go t.sleep()
	}
}

// sleep sleeps until the deadline, Chunk at most at a time, and runs f;
// it ends without running f if the timer was stopped, or hands a deadline
// moved past Lead back to the clock's timer.
func (t *timer) sleep() {
	for {
		t.mu.Lock()
		if !t.active {
			t.sleeping = false
			t.mu.Unlock()
			return
		}
		now := t.now()
		left := time.Duration(t.deadline - now)
		if left <= 0 {
			t.active, t.sleeping = false, false
			t.last = now
			t.mu.Unlock()
			t.f()
			return
		}
		if left > Lead || t.plain {
			// Reset meanwhile: the clock's timer has it.
			t.sleeping = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		ts := unix.NsecToTimespec(int64(min(left, Chunk)))
		rawfile.BlockingPoll(nil, 0, &ts) // EINTR: the loop looks again
	}
}
