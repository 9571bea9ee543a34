package tbf_test

import (
	"errors"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf/tbftest"
)

// TestChangeConformance changes a running tbf with a standing queue, as
// `tc qdisc change` does, and holds it to Linux's tbf_change in the
// model: the queue stays, the new buckets start full at the change, and
// every packet leaves at the model's instant, in order, with nothing lost
// but what the limit drops.
func TestChangeConformance(t *testing.T) {
	const ms = 1_000_000
	for _, tc := range []struct {
		name     string
		from, to tbf.Config
	}{
		{"100 to 10 Mbit/s", tbf.Config{Rate: 100 * mbit, Burst: 3028, Latency: 50 * ms}, tbf.Config{Rate: 10 * mbit, Burst: 12500, Latency: 50 * ms}},
		{"10 to 100 Mbit/s", tbf.Config{Rate: 10 * mbit, Burst: 12500, Latency: 50 * ms}, tbf.Config{Rate: 100 * mbit, Burst: 3028, Latency: 50 * ms}},
		{"a peak rate added", tbf.Config{Rate: 10 * mbit, Burst: 12500, Limit: 1 << 20}, tbf.Config{Rate: 10 * mbit, Burst: 64 << 10, PeakRate: 50 * mbit, MTU: 1514, Limit: 1 << 20}},
		{"a packet rate added", tbf.Config{Rate: 100 * mbit, Burst: 12500, Limit: 1 << 20}, tbf.Config{Rate: 100 * mbit, Burst: 12500, PacketRate: 2000, PacketBurst: 8, Limit: 1 << 20}},
		{"bytes to packets alone", tbf.Config{Rate: 10 * mbit, Burst: 12500, Limit: 1 << 20}, tbf.Config{PacketRate: 1000, PacketBurst: 4, Limit: 1 << 20}},
		{"the ceiling removed", tbf.Config{Rate: 10 * mbit, Burst: 12500, Limit: 1 << 20}, tbf.Config{Limit: 1 << 20}},
		{"a lower limit", tbf.Config{Rate: 10 * mbit, Burst: 12500, Limit: 1 << 20}, tbf.Config{Rate: 10 * mbit, Burst: 12500, Limit: 20000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := tbftest.NewLockstep(t, makeDiscipline, tc.from, 1500)
			d := ls.S.(discipline)
			to := tc.to
			to.Slack = tbf.NoSlack
			ls.Changes = []tbftest.Change{{At: 20 * ms, Do: func(now int64) {
				if err := d.Change(to); err != nil {
					t.Fatalf("Change(%+v): %v", to, err)
				}
				ls.M.Change(to, d.Config().Limit, now)
			}}}
			// 1514-byte packets at 200 Mbit/s for 60 ms: a standing queue
			// at both rates, and drops at the lower limits.
			recs := ls.Conform(t, tbftest.Poisson(7, 0, 1000, 60_000, tbftest.Fixed(1514)))
			for k := 1; k < len(recs); k++ {
				if recs[k].Seq <= recs[k-1].Seq {
					t.Fatalf("departure %d is packet %d, after packet %d: reordered", k, recs[k].Seq, recs[k-1].Seq)
				}
			}
			if c := d.Config(); c.Rate != to.Rate || c.Burst != to.Burst || c.PeakRate != to.PeakRate || c.PacketRate != to.PacketRate {
				t.Errorf("the Config in force after the change is %+v, want %+v's ceiling", c, to)
			}
		})
	}
}

// TestChangeRefused: a change Change cannot make is a ConfigError naming
// the setting, and the tbf goes on as it was.
func TestChangeRefused(t *testing.T) {
	start := tbf.Config{Rate: 10 * mbit, Burst: 12500, Latency: 50_000_000, Lanes: 2}
	for _, tc := range []struct {
		name  string
		cfg   tbf.Config
		field string
	}{
		{"lanes", tbf.Config{Rate: mbit, Burst: 12500, Lanes: 4}, "lanes"},
		{"slack", tbf.Config{Rate: mbit, Burst: 12500, Lanes: 2, Slack: 1_000_000}, "slack"},
		{"burst below the link's packet", tbf.Config{Rate: mbit, Burst: 1000, Lanes: 2}, "burst"},
		{"peak rate not above the rate", tbf.Config{Rate: mbit, Burst: 12500, PeakRate: mbit, MTU: 1514, Lanes: 2}, "peakrate"},
		{"latency with no ceiling", tbf.Config{Latency: 50_000_000, Lanes: 2}, "latency"},
		{"burst with no ceiling", tbf.Config{Burst: 12500, Lanes: 2}, "rate"},
		{"burst with packets alone", tbf.Config{Burst: 12500, PacketRate: 100, PacketBurst: 4, Lanes: 2}, "burst"},
		{"an fq_codel child", tbf.Config{Rate: mbit, Burst: 12500, Lanes: 2, Child: fqChild(fqcodel.Config{})}, "child"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tbf.New(qdisctest.NewLink(nil), tcpip.NewStdClock(), start)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			before, beforeString := d.Config(), d.String()
			if err := d.CheckChange(tc.cfg); err == nil {
				t.Errorf("CheckChange(%+v) accepted it", tc.cfg)
			}
			err = d.Change(tc.cfg)
			var ce *tbf.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("Change(%+v) = %v; want a ConfigError on %s", tc.cfg, err, tc.field)
			}
			if d.Config() != before || d.String() != beforeString {
				t.Errorf("a refused change changed the tbf: %s, was %s", d.String(), beforeString)
			}
		})
	}
}
