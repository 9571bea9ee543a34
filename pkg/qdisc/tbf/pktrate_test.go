package tbf_test

import (
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf/tbftest"
)

// TestPacketRateConformance holds a tbf with a packet bucket to the model
// (sch_tbf's buckets and act_police's packet bucket, in lock-step, NoSlack):
// the same packets leave at the same instants, and over every window no
// more than PacketBurst + PacketRate*window packets leave.
func TestPacketRateConformance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      tbf.Config
		arrivals []tbftest.Arrival
	}{
		{"a 64-byte flood held to 1000 packets/s", tbf.Config{Rate: 1 * gbit, Burst: 64 << 10, PacketRate: 1000, PacketBurst: 10, Limit: 1 << 20}, tbftest.Backlog(0, 400, tbftest.Fixed(64))},
		{"a burst of one packet", tbf.Config{Rate: 1 * gbit, Burst: 64 << 10, PacketRate: 5000, PacketBurst: 1, Limit: 1 << 20}, tbftest.Backlog(0, 200, tbftest.Fixed(64))},
		{"packets and bytes binding in turn", tbf.Config{Rate: 1 * mbit, Burst: 3028, PacketRate: 200, PacketBurst: 4, Limit: 1 << 20}, tbftest.Poisson(31, 0, 400, 2_000_000, tbftest.Odd(32))},
		{"with a peak rate", tbf.Config{Rate: 10 * mbit, Burst: 64 << 10, PeakRate: 100 * mbit, MTU: 1514, PacketRate: 2000, PacketBurst: 20, Limit: 1 << 20}, tbftest.Concat(tbftest.Backlog(0, 150, tbftest.Fixed(1514)), tbftest.Backlog(200_000_000, 150, tbftest.Fixed(64)))},
		{"a limit that drops", tbf.Config{Rate: 1 * gbit, Burst: 3028, PacketRate: 1000, PacketBurst: 10, Limit: 64 * 50}, tbftest.Poisson(33, 0, 600, 200_000, tbftest.Fixed(64))},
		{"idle refill", tbf.Config{Rate: 1 * gbit, Burst: 64 << 10, PacketRate: 1000, PacketBurst: 8, Limit: 1 << 20}, tbftest.Concat(tbftest.Backlog(0, 30, tbftest.Fixed(64)), tbftest.Backlog(100_000_000, 30, tbftest.Fixed(64)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := tbftest.RunConformance(t, makeDiscipline, tc.cfg, 1500, tc.arrivals)
			if len(recs) == 0 {
				t.Fatal("nothing was sent")
			}
		})
	}
}

// TestPacketRateQueues: several queues share the packet bucket as they
// share the bytes bucket: the count sent by every instant is the model's.
func TestPacketRateQueues(t *testing.T) {
	cfg := tbf.Config{Rate: 1 * gbit, Burst: 64 << 10, PacketRate: 1000, PacketBurst: 10, Limit: 1 << 20, Lanes: 4}
	runCounts(t, cfg, tbftest.Backlog(0, 300, tbftest.Fixed(64)))
}

// TestPacketRateExact: a flood of 64-byte packets leaves at PacketRate,
// exactly: after the burst, one packet every 1/PacketRate, whatever the
// bytes rate allows.
func TestPacketRateExact(t *testing.T) {
	const pps, burst, n = 10_000, 10, 2000
	cfg := tbf.Config{Rate: 10 * gbit, Burst: 64 << 10, PacketRate: pps, PacketBurst: burst, Limit: 1 << 20}
	recs := tbftest.RunConformance(t, makeDiscipline, cfg, 1500, tbftest.Backlog(0, n, tbftest.Fixed(64)))
	first := recs[0].At
	last := recs[len(recs)-1].At
	// n packets: burst at once, the rest 1/pps apart.
	if got, want := last.Sub(first).Nanoseconds(), int64(n-burst)*1_000_000_000/pps; got != want {
		t.Errorf("%d packets took %dns after the first, want %dns (%d packets/s after a burst of %d)", n, got, want, pps, burst)
	}
}

// TestPacketRateConfig: the packet bucket's settings are checked as the
// others are, with an error that names the setting; String shows them as
// tc police does.
func TestPacketRateConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   tbf.Config
		field string
	}{
		{"rate without burst", tbf.Config{Rate: mbit, Burst: 3028, PacketRate: 100}, "pkt_burst"},
		{"burst without rate", tbf.Config{Rate: mbit, Burst: 3028, PacketBurst: 10}, "pkt_burst"},
		{"faster than a packet a nanosecond", tbf.Config{Rate: mbit, Burst: 3028, PacketRate: tbf.MaxPacketRate + 1, PacketBurst: 10}, "pkt_rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tbf.New(qdisctest.NewLink(nil), tcpip.NewStdClock(), tc.cfg)
			ce, ok := err.(*tbf.ConfigError)
			if !ok || ce.Field != tc.field {
				t.Fatalf("New(%+v) = %v; want a ConfigError on %s", tc.cfg, err, tc.field)
			}
		})
	}
	d, err := tbf.New(qdisctest.NewLink(nil), tcpip.NewStdClock(), tbf.Config{Rate: mbit, Burst: 3028, PacketRate: 1000, PacketBurst: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if s := d.String(); !strings.Contains(s, "pkt_rate 1000pps pkt_burst 10pkt") {
		t.Errorf("String() = %q; want the packet bucket in it", s)
	}
}
