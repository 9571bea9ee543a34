package e2e

import (
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// TestFQCoDelUnderLoad: 4 bulk TCP streams from the netstack to the kernel
// peer through a 10 Mbit/s tbf (burst 12500 B) with fq_codel as its child,
// the peer pinging the netstack meanwhile: the echo replies, a sparse flow,
// are served ahead of the bulk flows' queues, so the ping RTT under load is
// within 5 ms (p50) and 15 ms (p99) of the idle RTT, none lost, and the
// rate on the wire still within [0.97, 1.01]. The same load through the
// tbf with its default FIFO queue is measured beside it and logged. (The
// streams have gVisor's default send buffers: nothing holds them back from
// filling the queue.)
func TestFQCoDelUnderLoad(t *testing.T) {
	if raceDetector {
		t.Skip("latency under load is timing-sensitive: measured without -race (.ci/run runs go test ./e2e/ too)")
	}
	l := newLab(t)
	const rate = 10 * mbit
	o := measure.Options{Streams: 4, Warmup: warmup, Window: measureFor, PingInterval: 100 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		args   []string
		assert bool
	}{
		{"tbf + fq_codel", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-child=fq_codel"}, true},
		{"tbf, default queue", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mk, _ := qdiscFrom(t, tc.args, nil)
			r, err := l.MeasureNetstack(mk, o)
			if err != nil {
				t.Fatal(err)
			}
			ratio := r.WireBps / rate
			p50, p99 := r.RTT(0.5)-r.IdleRTT, r.RTT(0.99)-r.IdleRTT
			t.Logf("%s: on-wire %.4f of the rate; ping RTT idle %v, under load %v (p50) %v (p99) above idle; %d/%d answered",
				tc.name, ratio, r.IdleRTT, p50, p99, len(r.RTTs), r.PingsSent)
			if !tc.assert {
				return
			}
			checkRate(t, "on-wire of the rate", ratio, 0.97, 1.01)
			if p50 > 5*time.Millisecond || p99 > 15*time.Millisecond {
				t.Errorf("ping RTT above idle under load: p50 %v, p99 %v; want at most 5 ms and 15 ms", p50, p99)
			}
			if r.PingsSent == 0 || r.PingsLost() != 0 {
				t.Errorf("%d of %d pings lost", r.PingsLost(), r.PingsSent)
			}
		})
	}
}
