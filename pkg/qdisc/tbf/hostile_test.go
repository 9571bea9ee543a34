package tbf_test

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestHostilePackets writes packets a sandbox could write (0 to 65535
// bytes, any header bytes and layout) to a tbf on a step clock: larger
// than the bucket, past the limit, and, with an fq_codel child, past its
// packet and memory limits and into CoDel's drops and ECN marks (which
// read the headers). Every packet is sent, refused or dropped and counted
// exactly once, the backlog stays within its bound, and after Close no
// packet is referenced and no goroutine is left. 3000 packets a case in
// the long run (qdisctest.Long), the first 1000 by default.
func TestHostilePackets(t *testing.T) {
	child := &fqcodel.Config{Limit: 24, MemoryLimit: 128 << 10, Flows: 8, DropBatch: 4, Target: 2 * time.Millisecond, Interval: 20 * time.Millisecond}
	for _, tc := range []struct {
		name string
		cfg  tbf.Config
		// drain lets the backlog leave before Close; otherwise Close
		// drops it.
		drain bool
	}{
		{"1 queue", tbf.Config{Rate: 10 * mbit, Burst: 16000, Limit: 48000}, true},
		{"1 queue, closed with a backlog", tbf.Config{Rate: 10 * mbit, Burst: 16000, Limit: 48000}, false},
		{"4 queues", tbf.Config{Rate: 10 * mbit, Burst: 16000, Limit: 48000, Lanes: 4}, true},
		{"4 queues, closed with a backlog", tbf.Config{Rate: 10 * mbit, Burst: 16000, Limit: 48000, Lanes: 4}, false},
		{"peak rate, 2 queues", tbf.Config{Rate: 10 * mbit, Burst: 32000, PeakRate: 100 * mbit, MTU: 9014, Limit: 64000, Lanes: 2}, true},
		{"overhead and mpu", tbf.Config{Rate: 10 * mbit, Burst: 16000, Limit: 48000, Overhead: 24, MPU: 64, Slack: tbf.NoSlack}, true},
		{"fq_codel child", tbf.Config{Rate: 10 * mbit, Burst: 70000, Child: fqChild(*child)}, true},
		{"fq_codel child, closed with a backlog", tbf.Config{Rate: 10 * mbit, Burst: 70000, Child: fqChild(*child)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			packets := 1000
			if qdisctest.Long() {
				packets = 3000
			}
			before := runtime.NumGoroutine()
			clock := qdisctest.NewStepClock()
			link := qdisctest.NewLink(clock)
			link.Discard = true
			d, err := tbf.New(link, clock, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Close) // on failure; Close is idempotent
			limit := d.Config().Limit
			rng := rand.New(rand.NewPCG(uint64(len(tc.name)), 19))
			var o qdisctest.Offered
			check := func() {
				t.Helper()
				st := d.Stats()
				o.CheckConserved(t, st)
				sent, bytes := link.Count()
				if sent != st.Packets || bytes != st.Bytes {
					t.Fatalf("the link has %d packets (%d bytes), Stats %+v", sent, bytes, st)
				}
				x, ok := fqcodel.ChildXStats(d)
				switch {
				case !ok && (st.Bytes+st.BacklogBytes != o.AcceptedBytes || st.Drops != uint64(o.Refused) || st.BacklogBytes > uint64(limit)):
					t.Fatalf("%d bytes accepted, %d packets refused, limit %d; Stats %+v", o.AcceptedBytes, o.Refused, limit, st)
				case ok && (st.Drops != uint64(o.Refused)+x.Drops() || st.BacklogPackets > uint64(child.Limit) || st.BacklogBytes > o.AcceptedBytes):
					t.Fatalf("%d packets refused, %d bytes accepted; Stats %+v; fq_codel (limit %d) %+v", o.Refused, o.AcceptedBytes, st, child.Limit, x)
				}
			}
			for i := 0; i < packets; i++ {
				pkt := qdisctest.HostilePacket(rng, qdisctest.HostileSize(rng))
				o.Offer(t, pkt, d.WritePacket(pkt))
				qdisctest.WaitQuiescent(t, d)
				if rng.IntN(4) == 0 {
					clock.Advance(time.Duration(rng.Int64N(int64(4 * time.Millisecond))))
					clock.Fire()
					qdisctest.WaitQuiescent(t, d)
				}
				if i%50 == 0 {
					check()
				}
			}
			check()
			for i := 0; tc.drain && d.Stats().BacklogPackets > 0; i++ {
				if i == 100 {
					t.Fatalf("backlog left after 100 s: %+v", d.Stats())
				}
				clock.Advance(time.Second)
				clock.Fire()
				qdisctest.WaitQuiescent(t, d)
				check()
			}
			d.Close()
			st := d.Stats()
			o.CheckConserved(t, st)
			if st.BacklogPackets != 0 || st.BacklogBytes != 0 {
				t.Errorf("backlog after Close: %+v", st)
			}
			if x, ok := fqcodel.ChildXStats(d); ok {
				if x.MemoryUsage != 0 {
					t.Errorf("fq_codel holds %d bytes of packet memory after Close", x.MemoryUsage)
				}
				if x.DropOverlimit == 0 || x.CoDelDrops+x.ECNMark == 0 {
					t.Errorf("fq_codel %+v: the run did not reach its limits and CoDel", x)
				}
			}
			if o.Refused == 0 && tc.cfg.Child == nil {
				t.Errorf("nothing refused: the run did not reach the bucket's size or the limit")
			}
			x, _ := fqcodel.ChildXStats(d)
			t.Logf("%d accepted, %d refused; %v\n%+v", o.Accepted, o.Refused, st, x)
			o.Release(t)
			qdisctest.WaitGoroutines(t, before)
		})
	}
}
