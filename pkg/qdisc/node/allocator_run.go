package node

import (
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// Stepper steps an Allocator every Period on a clock's timers, with now
// (CLOCK_MONOTONIC on a host: Now) as the beat. Close stops it; it starts
// no goroutine of its own.
type Stepper struct {
	// a and now are set by StepEvery, then only read.
	a   *Allocator   // +checklocksignore
	now func() int64 // +checklocksignore

	mu sync.Mutex
	// +checklocks:mu
	timer tcpip.Timer
	// +checklocks:mu
	closed bool
}

// StepEvery starts stepping a every Period on clock's timers.
func StepEvery(a *Allocator, clock tcpip.Clock, now func() int64) *Stepper {
	s := &Stepper{a: a, now: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Step(now())
	s.timer = clock.AfterFunc(Period, s.tick)
	return s
}

// tick steps and re-arms the timer.
func (s *Stepper) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.a.Step(s.now())
	s.timer.Reset(Period)
}

// Close stops the timer.
func (s *Stepper) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.timer.Stop()
}
