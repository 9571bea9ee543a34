// Package smallqueues tests runsc patch 0006 (TCP small queues) in
// process: this module builds gVisor's netstack from the patched tree
// (runsc/build.sh makes it), so netqdisc's benchmark harness run here
// shapes a patched TCP, where the root module's runs gVisor's TCP as it
// is. runsc/build.sh runs it after the patches build.
package smallqueues

import (
	"fmt"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/benchmarks"
	"github.com/netqdisc/netqdisc/lab/measure"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestSmallQueues: bulk TCP streams between two netstacks in process
// through a tbf set by its rate and burst only (fq under it, the
// default), each case measured once: the main command's default (100
// Mbit/s, 4 streams) and 16 streams, and 1, 8 and 64 streams at 1 Gbit/s,
// where this machine's veth path cannot go (issue 48). With the small
// queues the bulk flows' standing queue in the tbf (its backlog over its
// rate, sampled with each probe) stays within 6 ms at p50, where gVisor's
// TCP as it is keeps 98 ms there at 100 Mbit/s and 11 ms, the tbf's
// whole limit, at 1 Gbit/s; the link carries at least 0.95 of the rate
// (0.86-0.91 of 1 Gbit/s before the sender's wake took the endpoint as a
// syscall does); the tbf drops at most 0.1% of what it sends. At 100
// Mbit/s the probe (a TCP request/response, a sparse flow, 600 of them in
// 6 s) stays within 5 ms of idle at p99.
//
// Logged, not asserted, where this rig measures the VM rather than the
// qdisc (docs/backpressure.md has the runs):
//   - at 1 Gbit/s, the probe's p99. Two netstacks at 1 Gbit/s keep the
//     process's two Ps busy, and the tail is the probe's goroutines'
//     wait for one: its slow samples do not coincide with the tbf's
//     standing queue, and more Ps moved it where more TCP processors did
//     not.
//   - with 64 streams at 1 Gbit/s, the drops. In some runs (3 of about 20)
//     the 64 flows' small queues, each a millisecond of its pacing rate,
//     together pass the tbf's limit at once, and it drops 0.17-0.5%.
func TestSmallQueues(t *testing.T) {
	for _, tc := range []struct {
		rate, burst uint64 // bytes/s, bytes
		streams     int
		above       time.Duration // the probe's p99 bound over idle; 0: logged only
		dropsLogged bool          // the drops are logged, not asserted
	}{
		{12_500_000, 125_000, 4, 5 * time.Millisecond, false},
		{12_500_000, 125_000, 16, 5 * time.Millisecond, false},
		{125_000_000, 1_250_000, 1, 0, false},
		{125_000_000, 1_250_000, 8, 0, false},
		{125_000_000, 1_250_000, 64, 0, true},
	} {
		t.Run(fmt.Sprintf("%d Mbit/s %d streams", tc.rate*8/1e6, tc.streams), func(t *testing.T) {
			cfg := &runscflags.Config{QDisc: "tbf", TBFRate: tc.rate, TBFBurst: tc.burst}
			res, err := benchmarks.Run(benchmarks.FromConfig(cfg), measure.Options{Streams: tc.streams, Warmup: time.Second, Window: 6 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.RTTs) == 0 {
				t.Fatal("no RTT sample")
			}
			p50, p99 := res.RTT(0.5), res.RTT(0.99)
			q50, q99 := measure.Quantile(res.QueueDelays, 0.5), measure.Quantile(res.QueueDelays, 0.99)
			t.Logf("on the link %.2f Mbit/s, probe RTT idle %v, p50 %v p95 %v p99 %v, the tbf's queue p50 %v p99 %v max %v (%d samples), drops %d of %d packets, %d segments resent, CPU %.1f s/GB",
				res.WireBps*8/1e6, res.IdleRTT, p50, res.RTT(0.95), p99, q50, q99, measure.Quantile(res.QueueDelays, 1), len(res.QueueDelays), res.Drops, res.Stats.Packets, res.Retransmits, res.CPU.Seconds()/(float64(res.WireBytes)/1e9))
			if bound := res.IdleRTT + tc.above; tc.above != 0 && p99 > bound {
				t.Errorf("the probe's RTT under load is %v at p99 (p50 %v), want at most %v (%v above idle)", p99, p50, bound, tc.above)
			}
			if q50 > 6*time.Millisecond {
				t.Errorf("the tbf held %v of the bulk flows' data at p50 (p99 %v), want at most 6ms: small queues should keep it near a millisecond of each flow's rate", q50, q99)
			}
			if !tc.dropsLogged && res.Drops*1000 > max(res.Stats.Packets, 1000) {
				t.Errorf("the tbf dropped %d of %d packets, want at most 0.1%%", res.Drops, res.Stats.Packets)
			}
			if got := res.WireBps / float64(tc.rate); got < 0.95 {
				t.Errorf("the link carried %.4f of the rate, want at least 0.95", got)
			}
		})
	}
}
