package tbf_test

import (
	"fmt"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf/tbftest"
)

// TestConformanceQueues holds several queues sharing one bucket to Linux's
// single tbf. With packets of one size, the aggregate is work-conserving
// exactly as Linux's is: the number of packets sent by every instant, and
// which packets are dropped at the limit, match the model. The bucket and
// window bounds hold whatever the sizes.
func TestConformanceQueues(t *testing.T) {
	for _, queues := range []int{2, 4, 8} {
		for _, tc := range []struct {
			name     string
			cfg      tbf.Config
			arrivals []tbftest.Arrival
		}{
			{"10mbit backlog", tbf.Config{Rate: 10 * mbit, Burst: 12500, Limit: 1 << 20}, tbftest.Backlog(0, 200, tbftest.Fixed(1514))},
			{"100mbit two-packet burst, arrivals above the rate", tbf.Config{Rate: 100 * mbit, Burst: 3028, Limit: 1 << 20}, tbftest.Poisson(21, 0, 400, 100_000, tbftest.Fixed(1514))},
			{"10gbit", tbf.Config{Rate: 10 * gbit, Burst: 128 << 10, Limit: 1 << 20}, tbftest.Concat(tbftest.Backlog(0, 300, tbftest.Fixed(1000)), tbftest.Backlog(50_000, 300, tbftest.Fixed(1000)))},
			{"limit shared by all queues", tbf.Config{Rate: 10 * mbit, Burst: 3028, Limit: 10 * 1514}, tbftest.Concat(tbftest.Backlog(0, 40, tbftest.Fixed(1514)), tbftest.Poisson(22, 0, 200, 600_000, tbftest.Fixed(1514)))},
			{"idle refill", tbf.Config{Rate: 10 * mbit, Burst: 6056, Limit: 1 << 20}, tbftest.Concat(tbftest.Backlog(0, 20, tbftest.Fixed(1514)), tbftest.Backlog(int64(time.Second), 20, tbftest.Fixed(1514)))},
			{"peak rate", tbf.Config{Rate: 10 * mbit, Burst: 64 << 10, PeakRate: 100 * mbit, MTU: 1514, Limit: 1 << 20}, tbftest.Backlog(0, 150, tbftest.Fixed(1514))},
		} {
			t.Run(fmt.Sprintf("%d queues/%s", queues, tc.name), func(t *testing.T) {
				cfg := tc.cfg
				cfg.Lanes = queues
				runCounts(t, cfg, tc.arrivals)
			})
		}
		t.Run(fmt.Sprintf("%d queues/odd sizes", queues), func(t *testing.T) {
			runBounds(t, tbf.Config{Rate: 100 * mbit, Burst: 3028, Limit: 20_000, Lanes: queues}, tbftest.Poisson(23, 0, 600, 40_000, tbftest.Odd(24))) // ~160 Mbit/s offered
		})
	}
}

// runCounts steps the clock from event to event as runConformance does and
// checks the count of departures and the drops against the model.
func runCounts(t *testing.T, cfg tbf.Config, arrivals []tbftest.Arrival) {
	t.Helper()
	ls := tbftest.NewLockstep(t, makeDiscipline, cfg, 1500)
	ls.Run(t, arrivals, func(seq uint64) uint32 { return uint32(seq) }, func(next int64) {
		if got := ls.Link.NumRecords(); got != len(ls.M.Sent) {
			t.Fatalf("t=%dns: %d queues have sent %d packets, Linux's tbf %d", next-ls.Start, cfg.Lanes, got, len(ls.M.Sent))
		}
		if st := ls.S.Stats(); st.BacklogBytes > uint64(ls.S.Limit()) {
			t.Fatalf("t=%dns: %d bytes queued across the queues, limit %d", next-ls.Start, st.BacklogBytes, ls.S.Limit())
		}
	})
	tbftest.CheckBounds(t, cfg, ls.Link.Records())
	if err := ls.Link.Err(); err != nil {
		t.Fatal(err)
	}
}

// runBounds writes packets of mixed sizes at their arrival times, stepping
// the clock 10 µs at a time, and checks that the backlog never passes the
// limit, that every accepted packet is sent once, in order within its
// flow, and the bucket's bounds.
func runBounds(t *testing.T, cfg tbf.Config, arrivals []tbftest.Arrival) {
	t.Helper()
	cfg.Slack = tbf.NoSlack // timers fire at the departure, as Linux's watchdog
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	d, err := tbf.New(link, clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	start := nowNS(clock)
	const step = 10 * time.Microsecond
	accepted := 0
	for i := 0; i < len(arrivals) || d.Stats().BacklogPackets > 0; {
		for ; i < len(arrivals) && start+arrivals[i].At <= nowNS(clock); i++ {
			pkt := qdisctest.MakePacket(int(arrivals[i].Size), uint32(i%7), uint64(i))
			if d.WritePacket(pkt) == nil {
				accepted++
			}
			pkt.DecRef()
		}
		qdisctest.WaitQuiescent(t, d)
		if st := d.Stats(); st.BacklogBytes > uint64(cfg.Limit) {
			t.Fatalf("%d bytes queued across the queues, limit %d", st.BacklogBytes, cfg.Limit)
		}
		clock.Advance(step)
	}
	qdisctest.WaitQuiescent(t, d)
	recs := link.Records()
	st := d.Stats()
	if len(recs) != accepted || st.Packets != uint64(accepted) || st.Packets+st.Drops != uint64(len(arrivals)) {
		t.Fatalf("%d written, %d accepted, %d sent, stats %+v", len(arrivals), accepted, len(recs), st)
	}
	last := map[uint32]int64{}
	for _, r := range recs {
		if prev, ok := last[r.Hash]; ok && int64(r.Seq) < prev {
			t.Fatalf("flow %d: packet %d after %d", r.Hash, r.Seq, prev)
		}
		last[r.Hash] = int64(r.Seq)
	}
	tbftest.CheckBounds(t, cfg, recs)
	if st.Drops == 0 {
		t.Errorf("no drops: the arrivals did not press on the limit")
	}
}
