package node

import (
	"time"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// Runner steps a Member every Period on a clock's timer: it reads its
// uplink's counters, computes the class's share and sets the uplink's
// bucket to it. Close stops it; it starts no goroutine of its own.
//
// A class that sent nothing and had nothing wait for ParkAfter parks:
// the timer stops (an idle sandbox wakes up no one), its bucket goes
// back to the class's rate, and it stops publishing, so that the others
// count it idle after Stale. The next packet its uplink writes unparks
// it (Uplink.WritePackets): it steps at once and every Period again.
type Runner struct {
	// m, up, now and clock are set by Run, then only read.
	m     *Member      // +checklocksignore
	up    *Uplink      // +checklocksignore
	now   func() int64 // +checklocksignore
	clock tcpip.Clock  // +checklocksignore

	mu sync.Mutex
	// +checklocks:mu
	timer tcpip.Timer
	// +checklocks:mu
	closed bool
	// +checklocks:mu
	err error
	// idle counts the steps since the class last sent or waited;
	// lastBytes is what it had sent at the last step.
	// +checklocks:mu
	idle int
	// +checklocks:mu
	lastBytes uint64
	// waiting says packets wait for the class's share (see stepLocked).
	// +checklocks:mu
	waiting bool
}

// ParkAfter is how long a class must stay idle before its Runner parks.
const ParkAfter = 100 * time.Millisecond

// Run starts stepping m for up on clock's timers; now gives the node's
// time (CLOCK_MONOTONIC in a sandbox, which every sandbox of the node
// shares).
func Run(m *Member, up *Uplink, clock tcpip.Clock, now func() int64) *Runner {
	r := &Runner{m: m, up: up, now: now, clock: clock}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stepLocked()
	r.timer = clock.AfterFunc(Period, r.tick)
	up.wake = r.unpark
	return r
}

// tick steps, then re-arms the timer or parks.
func (r *Runner) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.stepLocked()
	if time.Duration(r.idle)*Period < ParkAfter {
		r.timer.Reset(Period)
		return
	}
	r.up.Bucket().SetRate(r.m.class.Rate)
	r.up.parked.Store(true)
	// A packet written as it parked did not see it parked: unpark.
	if r.up.bytes.Load() != r.lastBytes && r.up.parked.CompareAndSwap(true, false) {
		r.timer.Reset(Period)
	}
}

// unpark steps at once and re-arms the timer: the uplink wrote a packet
// while the class was parked.
func (r *Runner) unpark() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.stepLocked()
	r.timer.Reset(Period)
}

// stepLocked computes the share and puts it in force. The class is
// busy from the step that finds a packet waited for its share until the
// packets then booked have left: one booking may wait for several steps
// (a 64 KB GSO packet at 10 Mbit/s waits 52 ms), and the packets that
// waited for the qdisc's own gate (its tbf) only are not waiting for the
// share.
// +checklocks:r.mu
func (r *Runner) stepLocked() {
	c := r.up.Counters()
	if c.Busy {
		r.waiting = true
	} else if r.waiting && r.up.Bucket().bookedUntil() <= int64(r.clock.NowMonotonic().Sub(tcpip.MonotonicTime{})) {
		r.waiting = false
	}
	c.Busy = r.waiting
	share, err := r.m.Share(r.now(), c)
	r.up.Bucket().SetRate(share)
	r.err = err
	if c.Bytes == r.lastBytes && !c.Busy {
		r.idle++
	} else {
		r.idle = 0
	}
	r.lastBytes = c.Bytes
}

// Parked reports whether the runner is parked (the class idle).
func (r *Runner) Parked() bool { return r.up.parked.Load() }

// Err returns the last step's error (the allocator stopped writing, or
// evicted the class), nil if it went well: the class then holds its rate.
func (r *Runner) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Close stops the timer and gives the class back.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.m.Leave()
}
