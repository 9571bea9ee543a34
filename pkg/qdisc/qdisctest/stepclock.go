package qdisctest

import (
	"sort"
	"time"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// StepClock is a tcpip.Clock for tests in which timers fire late on
// purpose: Advance moves the time without firing anything, and Fire then
// runs, at the new time, every timer that came due meanwhile. A qdisc's
// dispatchers thus all see the same late time, with no race against the
// clock moving on (faketime.ManualClock fires each timer at its deadline
// and keeps moving while the callbacks' goroutines run).
type StepClock struct {
	mu sync.Mutex
	// +checklocks:mu
	now time.Duration
	// +checklocks:mu
	timers map[*stepTimer]struct{}
}

var _ tcpip.Clock = (*StepClock)(nil)

// NewStepClock returns a StepClock at a time far from zero.
func NewStepClock() *StepClock {
	return &StepClock{now: time.Hour, timers: map[*stepTimer]struct{}{}}
}

// Now implements tcpip.Clock.Now.
func (c *StepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Unix(0, int64(c.now))
}

// NowMonotonic implements tcpip.Clock.NowMonotonic.
func (c *StepClock) NowMonotonic() tcpip.MonotonicTime {
	c.mu.Lock()
	defer c.mu.Unlock()
	return tcpip.MonotonicTime{}.Add(c.now)
}

// AfterFunc implements tcpip.Clock.AfterFunc.
func (c *StepClock) AfterFunc(d time.Duration, f func()) tcpip.Timer {
	t := &stepTimer{c: c, f: f}
	t.Reset(d)
	return t
}

// Advance moves the clock on by d without firing any timer.
func (c *StepClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	c.mu.Unlock()
}

// Fire runs, in deadline order, every timer whose deadline has come, and
// returns how many it ran.
func (c *StepClock) Fire() int {
	c.mu.Lock()
	var due []*stepTimer
	for t := range c.timers {
		if t.at <= c.now {
			due = append(due, t)
		}
	}
	for _, t := range due {
		delete(c.timers, t)
	}
	c.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at < due[j].at })
	for _, t := range due {
		t.f()
	}
	return len(due)
}

type stepTimer struct {
	c  *StepClock
	f  func()
	at time.Duration // guarded by c.mu
}

// Stop implements tcpip.Timer.Stop.
func (t *stepTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, ok := t.c.timers[t]
	delete(t.c.timers, t)
	return ok
}

// Reset implements tcpip.Timer.Reset.
func (t *stepTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.at = t.c.now + d
	t.c.timers[t] = struct{}{}
}
