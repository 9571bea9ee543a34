package tbf_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf/tbftest"
)

// TestLateWakeupsCatchUp steps the clock far more coarsely than the bucket
// (5 ms steps against a 242 µs bucket at 100 Mbit/s) and only then fires
// the timers that came due, as a dispatcher whose timer fires late sees it. Linux's accounting would then send one bucket
// per wake-up, 0.05 of the rate; netqdisc's tbf must send, by every step,
// exactly what Linux's tbf woken on time would have sent by then, and no
// packet before Linux's tbf would send it.
func TestLateWakeupsCatchUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tbf.Config
		step time.Duration
	}{
		{"100mbit, burst 2 packets, 5ms steps", tbf.Config{Rate: 100 * mbit, Burst: 3028, Limit: 4 << 20}, 5 * time.Millisecond},
		{"100mbit, burst 1 packet, 1.3ms steps", tbf.Config{Rate: 100 * mbit, Burst: 1514, Limit: 4 << 20}, 1300 * time.Microsecond},
		{"10mbit, burst 1 packet, 3ms steps", tbf.Config{Rate: 10 * mbit, Burst: 1514, Limit: 4 << 20}, 3 * time.Millisecond},
		{"100mbit with a peak rate", tbf.Config{Rate: 100 * mbit, Burst: 6056, PeakRate: 200 * mbit, MTU: 1514, Limit: 4 << 20}, 2 * time.Millisecond},
		{"4 queues", tbf.Config{Rate: 100 * mbit, Burst: 3028, Limit: 4 << 20, Lanes: 4}, 5 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := qdisctest.NewStepClock()
			link := qdisctest.NewLink(clock)
			tc.cfg.Slack = tbf.NoSlack
			d, err := tbf.New(link, clock, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			start := nowNS(clock)
			m := tbftest.NewModel(tc.cfg, d.Config().Limit, start)
			const n = 1500
			for i := uint64(0); i < n; i++ {
				pkt := qdisctest.MakePacket(1514, uint32(i), i)
				if err := d.WritePacket(pkt); err != nil {
					t.Fatal(err)
				}
				pkt.DecRef()
				m.Enqueue(start, i, 1514)
			}
			qdisctest.WaitQuiescent(t, d)
			for k := 0; len(m.Sent) < n; k++ {
				clock.Advance(tc.step)
				clock.Fire()
				now := nowNS(clock)
				for m.Watchdog >= 0 && m.Watchdog <= now {
					m.Dequeue(m.Watchdog) // Linux, woken on time
				}
				qdisctest.WaitQuiescent(t, d)
				if got := len(link.Records()); got != len(m.Sent) {
					t.Fatalf("t=%v: sent %d packets; Linux's tbf woken on time, %d", time.Duration(now-start), got, len(m.Sent))
				}
			}
			// The k-th departure is never before Linux's k-th (with one
			// queue, the same packet; with several, the order across queues
			// differs from one FIFO's).
			for k, r := range link.Records() {
				if at := int64(r.At.Sub(tcpip.MonotonicTime{})); at < m.Sent[k].At {
					t.Fatalf("departure %d (packet %d) at %v, before Linux's tbf's departure %d (%v)", k, r.Seq, time.Duration(at-start), k, time.Duration(m.Sent[k].At-start))
				}
				if tc.cfg.Lanes <= 1 && r.Seq != m.Sent[k].Seq {
					t.Fatalf("departure %d is packet %d; Linux's is packet %d", k, r.Seq, m.Sent[k].Seq)
				}
			}
			if l := d.Lateness(); l.Count() == 0 || l.Quantile(0.5) == 0 {
				t.Errorf("lateness not recorded: %v", l)
			} else {
				t.Logf("wake-up lateness: %v", l)
			}
		})
	}
}

// slackRig drives a tbf of one-packet bucket at 100 Mbit/s on a
// StepClock, for the tests of how waits end: each write and each step of
// the clock waits for the qdisc to be quiescent.
type slackRig struct {
	t     *testing.T
	clock *qdisctest.StepClock
	link  *qdisctest.Link
	d     *tbf.Discipline
	start int64
}

const (
	rigPkt = 1514
	rigTx  = 121120 * time.Nanosecond // a packet at 100 Mbit/s
)

func newSlackRig(t *testing.T, cfg tbf.Config) *slackRig {
	t.Helper()
	cfg.Rate, cfg.Burst, cfg.Limit = 100*mbit, rigPkt, 1<<20
	r := &slackRig{t: t, clock: qdisctest.NewStepClock()}
	r.link = qdisctest.NewLink(r.clock)
	d, err := tbf.New(r.link, r.clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	r.d, r.start = d, nowNS(r.clock)
	return r
}

// write writes packet seq to the queue that hash picks.
func (r *slackRig) write(seq uint64, hash uint32) {
	r.t.Helper()
	p := qdisctest.MakePacket(rigPkt, hash, seq)
	if err := r.d.WritePacket(p); err != nil {
		r.t.Fatal(err)
	}
	p.DecRef()
	qdisctest.WaitQuiescent(r.t, r.d)
}

// advanceTo moves the clock to at after the start, fires the timers that
// came due and reports how many did.
func (r *slackRig) advanceTo(at time.Duration) int {
	r.clock.Advance(at - time.Duration(nowNS(r.clock)-r.start))
	n := r.clock.Fire()
	qdisctest.WaitQuiescent(r.t, r.d)
	return n
}

// times returns the departure times after the start, in order.
func (r *slackRig) times() []time.Duration {
	var a []time.Duration
	for _, rec := range r.link.Records() {
		a = append(a, time.Duration(int64(rec.At.Sub(tcpip.MonotonicTime{}))-r.start))
	}
	return a
}

// departures returns each packet's departure time after the start.
func (r *slackRig) departures() map[uint64]time.Duration {
	m := map[uint64]time.Duration{}
	for _, rec := range r.link.Records() {
		m[rec.Seq] = time.Duration(int64(rec.At.Sub(tcpip.MonotonicTime{})) - r.start)
	}
	return m
}

// TestSlack: a queue that waits now and then is woken at the departure
// time, and so is one that would run dry sooner than the Slack
// (a sender that queues only when its packets leave would otherwise see
// the link idle); one whose backlog outlasts the Slack is woken no sooner
// than Slack after it was last served (by the timer, or by an arrival
// that sent what had come due, with no wake-up), and that wake-up sends
// all that came due. Never before Linux's tbf would send it.
func TestSlack(t *testing.T) {
	const tx = rigTx
	cfg := tbf.Config{Slack: 4 * time.Millisecond}
	r := newSlackRig(t, cfg)
	write := func(seq uint64) { r.write(seq, 0) }
	advanceTo := r.advanceTo
	var want []time.Duration
	check := func(step string, leave time.Duration, seqs ...uint64) {
		t.Helper()
		for range seqs {
			want = append(want, leave)
		}
		if got := r.times(); !slices.Equal(got, want) {
			t.Fatalf("%s: departures %v, want %v", step, got, want)
		}
	}
	fires := func(step string, at time.Duration, want int) {
		t.Helper()
		if n := advanceTo(at); n != want {
			t.Fatalf("%s: %d timers fired by %v, want %d", step, n, at, want)
		}
	}
	write(0) // leaves at once
	write(1) // due at tx
	check("at once", 0, 0)
	fires("first wait", tx, 1)
	check("first wait, woken on time", tx, 1)

	write(2) // due at 2tx: the queue runs dry then, within the Slack
	fires("short queue", 2*tx, 1)
	check("a queue that runs dry is woken on time, however recent the last wake-up", 2*tx, 2)

	// A backlog of 38 packets, 4.6 ms: packet k is due at k*tx.
	for seq := uint64(3); seq <= 40; seq++ {
		write(seq)
	}
	fires("backlog's head", 3*tx, 1) // 4..40 were queued behind 3, unbooked
	check("backlog's head", 3*tx, 3)
	served := 3 * tx
	fires("within the Slack", served+cfg.Slack-1, 0)
	fires("the Slack after the last wake-up", served+cfg.Slack, 1)
	// Packets 4..36, due by 3tx+4ms (36.02tx), leave now, late.
	check("a spaced wake-up sends all that came due", served+cfg.Slack, seqRange(4, 36)...)

	fires("before the backlog runs out", 38*tx, 0)
	write(41) // at 38tx: finds 37 and 38 due and sends them from here
	check("an arrival sends what is due", 38*tx, 37, 38)
	// That counts as serving the queue, but 39, 40 and 41 are all it
	// holds: the timer fires when they would have left, at 41tx, well
	// within the Slack (the bucket says when the unbooked 41 would).
	fires("before the queue runs dry", 40*tx, 0)
	fires("the queue runs dry", 41*tx, 1)
	check("the queue runs dry", 41*tx, 39, 40, 41)

	// Quiet for longer than the slack: the next wait is woken on time.
	advanceTo(20 * time.Millisecond)
	write(42) // leaves at once
	write(43) // due a packet later
	check("after a quiet spell", 20*time.Millisecond, 42)
	fires("after a quiet spell", 20*time.Millisecond+tx, 1)
	check("after a quiet spell", 20*time.Millisecond+tx, 43)
	if w := r.d.Wakeups(); w != 6 {
		t.Errorf("%d timer wake-ups, want 6", w)
	}
	if l := r.d.Lateness(); l.Count() != 7 {
		t.Errorf("%d waits' lateness recorded, want 7 (6 ended by the timer, 1 by an arrival)", l.Count())
	}
}

// seqRange returns from..to.
func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// TestOneAlarmForAllQueues: the queues of one bucket share one timer. A
// firing serves every queue whose departure has come and arms the timer
// once for the rest: at the earliest departure still awaited, no sooner
// than the Slack after the firing unless a queue's booked packets run out
// sooner (a backlog waits for the Slack, a short queue does not).
func TestOneAlarmForAllQueues(t *testing.T) {
	const tx = rigTx
	cfg := tbf.Config{Lanes: 2, Slack: 4 * time.Millisecond}
	r := newSlackRig(t, cfg)
	r.write(0, 0) // leaves at once
	r.write(1, 1) // queue 1: due at tx
	for seq := uint64(2); seq <= 50; seq++ {
		r.write(seq, 0) // queue 0: 2 is booked for 2tx, 3..50 wait behind it
	}
	var fires []int
	advanceTo := func(at time.Duration) { fires = append(fires, r.advanceTo(at)) }
	advanceTo(tx)     // queue 1 sends 1; queue 0 waits for 2tx
	advanceTo(2 * tx) // queue 0 sends 2 and books 3..50 for 3tx..50tx
	advanceTo(2 * tx) // nothing more is due
	r.write(51, 1)    // queue 1: booked after queue 0's backlog, for 51tx
	served := 2 * tx
	advanceTo(served + cfg.Slack - 1)
	advanceTo(served + cfg.Slack) // queue 0 sends 3..35, late
	advanceTo(50 * tx)            // queue 0's booked packets run out: it sends 36..50
	advanceTo(51 * tx)            // queue 1's
	if want := []int{1, 1, 0, 0, 1, 1, 1}; !slices.Equal(fires, want) {
		t.Errorf("timer firings at each step %v, want %v", fires, want)
	}
	want := map[uint64]time.Duration{0: 0, 1: tx, 2: 2 * tx, 51: 51 * tx}
	for seq := uint64(3); seq <= 50; seq++ {
		want[seq] = 50 * tx
		if seq <= 35 {
			want[seq] = served + cfg.Slack
		}
	}
	if got := r.departures(); !maps.Equal(got, want) {
		t.Errorf("departures %v, want %v", got, want)
	}
}

// TestArrivalServesOtherQueues: a packet arriving on one queue sends the
// due packets of the bucket's other queues, so no timer wake-up is needed
// while packets keep arriving on any of them.
func TestArrivalServesOtherQueues(t *testing.T) {
	const tx = rigTx
	r := newSlackRig(t, tbf.Config{Lanes: 2, Slack: 4 * time.Millisecond})
	write, departures, clock, d := r.write, r.departures, r.clock, r.d
	write(0, 1) // leaves at once
	write(1, 1) // due at tx; the timer is armed for it
	clock.Advance(tx)
	if n := clock.Fire(); n != 1 {
		t.Fatalf("%d timers fired at the first departure, want 1", n)
	}
	qdisctest.WaitQuiescent(t, d)
	write(2, 1) // due at 2tx; the next wake-up no sooner than tx+slack
	clock.Advance(tx)
	write(3, 0) // at 2tx, on the other queue: sends packet 2; 3 is due at 3tx
	if got, want := departures(), map[uint64]time.Duration{0: 0, 1: tx, 2: 2 * tx}; !maps.Equal(got, want) {
		t.Fatalf("departures %v, want %v: the arrival on queue 0 should have sent queue 1's due packet", got, want)
	}
	clock.Advance(tx)
	write(4, 1) // at 3tx, on queue 1: sends queue 0's packet 3
	if got := departures()[3]; got != 3*tx {
		t.Fatalf("packet 3 left at %v, want 3tx (%v), sent by the arrival on queue 1", got, 3*tx)
	}
	if w := d.Wakeups(); w != 1 {
		t.Errorf("%d timer wake-ups, want 1", w)
	}
}
