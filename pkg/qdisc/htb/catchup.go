package htb

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Config.Slack's bounds: NoSlack and MaxSlack as tbf's, so that the two
// shapers bound a late wake-up alike: what leaves back to back is at most
// a bucket and Slack of rate. The default is longer than tbf's: tbf's
// timer waits at least its Slack between wake-ups and books departures
// ahead, where htb's lane wakes at every event, and on a busy 2-core
// machine (a gigabit class beside a 20 Mbit/s one) a dispatcher wakes
// more than 8 ms late often enough to cost the small class 2% of its
// rate (0.977 in one CI run with 8 ms).
const (
	// DefaultSlack is Config.Slack's default: past what a dispatcher is
	// late on a loaded machine, so a late timer costs no rate, and short
	// enough that what leaves back to back after a stall is at most what
	// 50 ms of ceil would have sent, past the bucket.
	DefaultSlack = 50 * time.Millisecond
	// NoSlack, as Config.Slack, catches nothing up: a late dequeue
	// dequeues at its own time, as Linux's late watchdog does, and the
	// credit past a bucket's depth is lost.
	NoSlack time.Duration = -1
	// MaxSlack is the longest Slack.
	MaxSlack = time.Second
)

// dequeueAt is Dequeue when not inStreak(now).
func (t *Tree) dequeueAt(now int64) (*stack.PacketBuffer, uint32, bool) {
	if pkt := t.peeked; pkt != nil {
		t.peeked = nil
		return pkt, t.peekedSize, true
	}
	if !t.armed && t.behind == 0 {
		// Not waiting for an event, nor catching up: nothing to catch up
		// on (dequeueCatchingUp's first and only step).
		return t.dequeue(max(now, t.now))
	}
	return t.dequeueCatchingUp(now)
}

// dequeueCatchingUp is dequeue at now for a caller that may come late: when
// the tree waited for an event that is past (a timer that fired late),
// it dequeues as Linux's watchdog, firing on time, would have: at the
// event's time, then on at the time of the last packet sent, event after
// event, until it has caught up with now. So a late wake-up sends what an
// on-time one would have sent by now, and the credit that accrued
// meanwhile, past a bucket's depth, is not lost, as tbf's bookings keep
// it (see the package doc). A caller that is never late (the lockstep
// tests) sees plain dequeues at now.
//
// The replay goes back at most the slack (Config.Slack): a wake-up later
// than that replays from now - slack, so what leaves at once is at most
// what the buckets hold and slack of the ceils, however late the timer
// (departures never run ahead of their on-time schedule by more than a
// class's cburst and slack of its ceil); the time before is lost, as to
// Linux's late watchdog.
func (t *Tree) dequeueCatchingUp(now int64) (*stack.PacketBuffer, uint32, bool) {
	earliest := now - t.slack
	for {
		at := now
		if t.armed && t.next < now {
			at = t.next // the watchdog's time
		} else if t.behind != 0 && t.behind < now {
			at = t.behind // going on where the last packet left
		}
		at = max(at, earliest, t.now)
		pkt, size, ok := t.dequeue(at)
		if ok {
			t.behind = 0
			if at < now {
				t.behind = at
			}
			return pkt, size, true
		}
		t.behind = 0
		if at >= now || !t.armed {
			return nil, 0, false
		}
	}
}
