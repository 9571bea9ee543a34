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
// queues each flow keeps a couple of packets in the tbf, so the probe's
// RTT (a TCP request/response, a sparse flow, 600 of them in 6 s) stays
// within 5 ms of idle at p99 (logged, not asserted, with 64 streams at
// 1 Gbit/s, where the two netstacks keep both cores busy and the p99 is
// the scheduler's) (gVisor's TCP as it is filled
// the tbf: 58 ms p50 and hundreds of
// drops at 100 Mbit/s), the tbf drops at most 0.1% of what it sends, and
// the link carries at least 0.95 of the rate. (Before the sender's wake
// took the endpoint as a syscall does, TCP's processor goroutines spun on
// its lock: at 1 Gbit/s 0.86-0.91 of the rate, p99 9-24 ms.)
func TestSmallQueues(t *testing.T) {
	for _, tc := range []struct {
		rate, burst uint64 // bytes/s, bytes
		streams     int
		above       time.Duration // the probe's p99 bound over idle; 0: logged only
	}{
		{12_500_000, 125_000, 4, 5 * time.Millisecond},
		{12_500_000, 125_000, 16, 5 * time.Millisecond},
		{125_000_000, 1_250_000, 1, 5 * time.Millisecond},
		{125_000_000, 1_250_000, 8, 5 * time.Millisecond},
		// 64 streams at 1 Gbit/s keep both of this VM's cores busy
		// with two netstacks: the probe's p99 is the scheduler's, 3.8
		// to 11.9 ms over 14 runs on 2026-11-29, as much before issue
		// 49's changes as after (3395416: 4.2-5.5 ms). Its rate and
		// drops are asserted; its p99 is logged.
		{125_000_000, 1_250_000, 64, 0},
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
			t.Logf("on the link %.2f Mbit/s, probe RTT idle %v, p50 %v p99 %v, drops %d of %d packets, CPU %.1f s/GB",
				res.WireBps*8/1e6, res.IdleRTT, p50, p99, res.Drops, res.Stats.Packets, res.CPU.Seconds()/(float64(res.WireBytes)/1e9))
			if bound := res.IdleRTT + tc.above; tc.above != 0 && p99 > bound {
				t.Errorf("the probe's RTT under load is %v at p99 (p50 %v), want at most %v (%v above idle)", p99, p50, bound, tc.above)
			}
			if res.Drops*1000 > max(res.Stats.Packets, 1000) {
				t.Errorf("the tbf dropped %d of %d packets, want at most 0.1%%", res.Drops, res.Stats.Packets)
			}
			if got := res.WireBps / float64(tc.rate); got < 0.95 {
				t.Errorf("the link carried %.4f of the rate, want at least 0.95", got)
			}
		})
	}
}
