// Package smallqueues tests runsc patch 0006 (TCP small queues) in
// process: this module builds gVisor's netstack from the patched tree
// (runsc/build.sh makes it), so netqdisc's benchmark harness run here
// shapes a patched TCP, where the root module's runs gVisor's TCP as it
// is. runsc/build.sh runs it after the patches build.
package smallqueues

import (
	"slices"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/benchmarks"
	"github.com/netqdisc/netqdisc/lab/measure"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestSmallQueues: the main command's default (tbf at 100 Mbit/s, 4
// bulk streams, its RTT probe) between two netstacks in process: with
// the small queues the tbf holds about two packets a flow, so the probe's
// median RTT stays within the time those take at the rate (4 flows of 2
// packets of at most 64 KiB, 42 ms, and 5 ms more) where gVisor's TCP as
// it is gave 58 ms (issue 48), and the tbf drops at most 0.5% of what it
// sends, against hundreds before.
func TestSmallQueues(t *testing.T) {
	cfg := &runscflags.Config{QDisc: runscflags.QDiscTBF, TBFRate: 12_500_000, TBFBurst: 125_000}
	res, err := benchmarks.Run(benchmarks.FromConfig(cfg), measure.Options{Streams: 4, Warmup: time.Second, Window: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rtts := slices.Clone(res.RTTs)
	slices.Sort(rtts)
	if len(rtts) == 0 {
		t.Fatal("no RTT sample")
	}
	p50, p99 := rtts[len(rtts)/2], rtts[len(rtts)*99/100]
	t.Logf("on the link %.2f Mbit/s, probe RTT p50 %v p99 %v, drops %d of %d packets", res.WireBps*8/1e6, p50, p99, res.Drops, res.Stats.Packets)
	if bound := 47 * time.Millisecond; p50 > bound {
		t.Errorf("the probe's median RTT under load is %v, want at most %v", p50, bound)
	}
	if res.Drops*200 > max(res.Stats.Packets, 200) {
		t.Errorf("the tbf dropped %d of %d packets, want at most 0.5%%", res.Drops, res.Stats.Packets)
	}
}
