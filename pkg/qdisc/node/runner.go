package node

import (
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// Runner steps a Member every Period on a clock's timer: it reads its
// uplink's counters, computes the class's share and sets the uplink's
// bucket to it. Close stops it; it starts no goroutine of its own.
type Runner struct {
	m   *Member
	up  *Uplink
	now func() int64

	mu sync.Mutex
	// +checklocks:mu
	timer tcpip.Timer
	// +checklocks:mu
	closed bool
	// +checklocks:mu
	err error
}

// Run starts stepping m for up on clock's timers; now gives the board's
// time (CLOCK_MONOTONIC in a sandbox, which every sandbox of the node
// shares).
func Run(m *Member, up *Uplink, clock tcpip.Clock, now func() int64) *Runner {
	r := &Runner{m: m, up: up, now: now}
	r.step()
	r.mu.Lock()
	if !r.closed {
		r.timer = clock.AfterFunc(Period, r.tick)
	}
	r.mu.Unlock()
	return r
}

// tick steps and re-arms the timer.
func (r *Runner) tick() {
	r.step()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.timer.Reset(Period)
	}
}

// step computes the share and puts it in force.
func (r *Runner) step() {
	share, err := r.m.Share(r.now(), r.up.Counters())
	r.up.Bucket().SetRate(share)
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

// Err returns the last step's error (no tree on the board; the slot
// reclaimed), nil if it went well: the class then holds its rate.
func (r *Runner) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close stops the timer and gives the slot back.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.m.Leave()
}
