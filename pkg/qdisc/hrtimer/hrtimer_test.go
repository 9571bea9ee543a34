package hrtimer_test

import (
	"sort"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/hrtimer"
)

// These tests run on the host's clock, which is what the package makes
// precise; they assert what must hold however loaded the machine is (a
// timer never fires early, a stopped one never fires, a Reset replaces
// the time), not how late a timer is: BenchmarkLateness measures that.

// fireTimes arms a timer for each of ds on c, one after another, and
// returns when each fired after it was armed (by c's monotonic clock).
func fireTimes(t *testing.T, c tcpip.Clock, ds []time.Duration) []time.Duration {
	t.Helper()
	var got []time.Duration
	for _, d := range ds {
		fired := make(chan tcpip.MonotonicTime, 1)
		start := c.NowMonotonic()
		c.AfterFunc(d, func() { fired <- c.NowMonotonic() })
		select {
		case at := <-fired:
			got = append(got, at.Sub(start))
		case <-time.After(d + 5*time.Second):
			t.Fatalf("a timer of %v did not fire in %v more", d, 5*time.Second)
		}
	}
	return got
}

// TestNeverEarly: a timer fires, and not before its time, whether it is
// shorter than Lead (a sleeper alone) or longer (the clock's timer, then
// a sleeper).
func TestNeverEarly(t *testing.T) {
	ds := []time.Duration{0, 50 * time.Microsecond, 300 * time.Microsecond, 1500 * time.Microsecond, hrtimer.Lead, 2500 * time.Microsecond, 10 * time.Millisecond}
	for i, took := range fireTimes(t, hrtimer.New(tcpip.NewStdClock()), ds) {
		if took < ds[i] {
			t.Errorf("a timer of %v fired after %v: early", ds[i], took)
		}
	}
}

// TestStopAndReset: a stopped timer does not fire, in either phase; Stop
// says whether it was to fire; a Reset to an earlier time fires once, at
// that time.
func TestStopAndReset(t *testing.T) {
	c := hrtimer.New(tcpip.NewStdClock())
	fired := make(chan tcpip.MonotonicTime, 4)
	for _, d := range []time.Duration{time.Millisecond, 10 * time.Millisecond} {
		tm := c.AfterFunc(d, func() { fired <- c.NowMonotonic() })
		if !tm.Stop() {
			t.Errorf("Stop of a %v timer just armed says it was not to fire", d)
		}
		if tm.Stop() {
			t.Errorf("a second Stop says the %v timer was to fire", d)
		}
	}
	start := c.NowMonotonic()
	tm := c.AfterFunc(50*time.Millisecond, func() { fired <- c.NowMonotonic() })
	tm.Reset(500 * time.Microsecond)
	time.Sleep(100 * time.Millisecond) // past both times
	if n := len(fired); n != 1 {
		t.Fatalf("%d fires after two stopped timers and one reset earlier; want 1", n)
	}
	if took := (<-fired).Sub(start); took < 500*time.Microsecond {
		t.Errorf("the timer reset to 500µs fired after %v: early", took)
	}
	if tm.Stop() {
		t.Errorf("Stop after the timer fired says it was yet to fire")
	}
}

// TestManualClockKept: a clock a test advances by hand is not wrapped:
// its timers fire as the test advances it, on the test's goroutine.
func TestManualClockKept(t *testing.T) {
	m := faketime.NewManualClock()
	if c := hrtimer.New(m); c != tcpip.Clock(m) {
		t.Errorf("New wrapped a manual clock: %T", c)
	}
}

// BenchmarkLateness measures how late timers fire, p50 and p99, on the
// host's clock as it is and made precise: far ones, of 2.1 to 7 ms
// (further off than Lead), and short ones, of 0.1 to 2 ms, each armed
// on a quiet timer (a new one), as a packet that wakes a qdisc arms its
// timer for a departure just ahead.
func BenchmarkLateness(b *testing.B) {
	for _, w := range []struct {
		name       string
		from, span time.Duration
	}{{"far", hrtimer.Lead + 100*time.Microsecond, 4900 * time.Microsecond}, {"short", 100 * time.Microsecond, hrtimer.Lead - 100*time.Microsecond}} {
		for _, bc := range []struct {
			name  string
			clock tcpip.Clock
		}{{"std", tcpip.NewStdClock()}, {"hrtimer", hrtimer.New(tcpip.NewStdClock())}} {
			b.Run(w.name+"/"+bc.name, func(b *testing.B) {
				var late []time.Duration
				for i := 0; b.Loop(); i++ {
					d := w.from + (time.Duration(i*997)*time.Microsecond)%w.span
					fired := make(chan tcpip.MonotonicTime, 1)
					start := bc.clock.NowMonotonic()
					bc.clock.AfterFunc(d, func() { fired <- bc.clock.NowMonotonic() })
					late = append(late, (<-fired).Sub(start)-d)
				}
				sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
				q := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))].Microseconds()) }
				b.ReportMetric(q(0.5), "p50-late-µs")
				b.ReportMetric(q(0.99), "p99-late-µs")
			})
		}
	}
}
