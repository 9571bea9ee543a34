package tbf_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
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
		{"4 queues", tbf.Config{Rate: 100 * mbit, Burst: 3028, Limit: 4 << 20, Queues: 4}, 5 * time.Millisecond},
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
			m := newLinuxTBF(tc.cfg, d.Config().Limit, start)
			const n = 1500
			for i := uint64(0); i < n; i++ {
				pkt := qdisctest.MakePacket(1514, uint32(i), i)
				if err := d.WritePacket(pkt); err != nil {
					t.Fatal(err)
				}
				pkt.DecRef()
				m.enqueue(start, i, 1514)
			}
			qdisctest.WaitQuiescent(t, d)
			for k := 0; len(m.sent) < n; k++ {
				clock.Advance(tc.step)
				clock.Fire()
				now := nowNS(clock)
				for m.watchdog >= 0 && m.watchdog <= now {
					m.dequeue(m.watchdog) // Linux, woken on time
				}
				qdisctest.WaitQuiescent(t, d)
				if got := len(link.Records()); got != len(m.sent) {
					t.Fatalf("t=%v: sent %d packets; Linux's tbf woken on time, %d", time.Duration(now-start), got, len(m.sent))
				}
			}
			// The k-th departure is never before Linux's k-th (with one
			// queue, the same packet; with several, the order across queues
			// differs from one FIFO's).
			for k, r := range link.Records() {
				if at := int64(r.At.Sub(tcpip.MonotonicTime{})); at < m.sent[k].at {
					t.Fatalf("departure %d (packet %d) at %v, before Linux's tbf's departure %d (%v)", k, r.Seq, time.Duration(at-start), k, time.Duration(m.sent[k].at-start))
				}
				if tc.cfg.Queues <= 1 && r.Seq != m.sent[k].seq {
					t.Fatalf("departure %d is packet %d; Linux's is packet %d", k, r.Seq, m.sent[k].seq)
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

// TestSlack: with the default slack, a waiting packet is sent by the next
// packet to arrive on its queue after its departure time, without a timer
// wake-up; with none arriving, by the timer, at most the slack late. Never
// before Linux's tbf would send it.
func TestSlack(t *testing.T) {
	const pkt = 1514
	cfg := tbf.Config{Rate: 100 * mbit, Burst: pkt, Limit: 1 << 20} // 121.12 µs a packet
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	d, err := tbf.New(link, clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	start := nowNS(clock)
	write := func(seq uint64) {
		p := qdisctest.MakePacket(pkt, 0, seq)
		if err := d.WritePacket(p); err != nil {
			t.Fatal(err)
		}
		p.DecRef()
		qdisctest.WaitQuiescent(t, d)
	}
	at := func() []time.Duration {
		var a []time.Duration
		for _, r := range link.Records() {
			a = append(a, time.Duration(int64(r.At.Sub(tcpip.MonotonicTime{}))-start))
		}
		return a
	}
	write(0) // leaves at once
	write(1) // due at 121.12 µs: booked, the timer armed for 1.12112 ms
	clock.Advance(500 * time.Microsecond)
	if clock.Fire() != 0 {
		t.Fatal("a timer fired before the slack was over")
	}
	write(2) // finds packet 1 due: sends it, and itself (due at 500 µs)
	if got, want := at(), []time.Duration{0, 500 * time.Microsecond, 500 * time.Microsecond}; !equal(got, want) {
		t.Fatalf("departures %v, want %v", got, want)
	}
	write(3) // due at 621.12 µs; nothing arrives after it
	clock.Advance(time.Millisecond)
	if clock.Fire() != 0 {
		t.Fatal("the timer fired before the departure plus the slack")
	}
	clock.Advance(121120 * time.Nanosecond) // 1.62112 ms: departure + slack
	if clock.Fire() != 1 {
		t.Fatal("the timer did not fire at the departure plus the slack")
	}
	qdisctest.WaitQuiescent(t, d)
	if got := at(); len(got) != 4 || got[3] != 1621120*time.Nanosecond {
		t.Fatalf("departures %v, want the 4th at 1.62112ms", got)
	}
	if l := d.Lateness(); l.Count() != 1 {
		t.Errorf("%d timer wake-ups recorded, want 1", l.Count())
	}
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
