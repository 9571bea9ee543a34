package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestRunscSmallQueues: a runsc sandbox's TCP slows at its qdisc (TCP
// small queues, runsc patch 0006) instead of filling it. Bulk iperf
// streams from the sandbox to a kernel peer under an operator's tbf
// (host GSO on, as runsc defaults), each case measured once:
//
//   - with the operator's rate and burst only (fq under the bucket, the
//     default) at 10 and 100 Mbit/s with 1, 8 and 64 streams, and a
//     pod's kubernetes.io/egress-bandwidth alone or the sandbox as a
//     node's class (fq under it) with 64 streams at 10 Mbit/s and 8 at
//     100, a sparse flow (the peer's ping, and a 64-byte TCP
//     request/response to an echo server in the sandbox) keeps its p99
//     RTT within 5 ms of idle, the tbf drops at most 0.1% of what it
//     sends, and the link carries at least 0.95 of the rate;
//   - with the byte FIFO under it, the queue holds about two packets of
//     each flow, not its congestion window: the ping's median waits for
//     those (two packets of at least two segments a flow at the rate, and
//     5 ms), where gVisor's TCP as it is gave 92 ms and 2192 drops in 11 s
//     at 100 Mbit/s with 4 streams.
func TestRunscSmallQueues(t *testing.T) {
	if raceDetector {
		t.Skip("RTTs and drops on real peers are timing-sensitive: measured without -race (.ci/run runs go test ./e2e/ too, and CI's time is tight)")
	}
	r := newRunscRig(t)
	for _, tc := range []struct {
		rate    float64 // bytes/s
		flag    string
		streams int
		child   string
		// kube, if set, is the pod's kubernetes.io/egress-bandwidth, in
		// place of the operator's tbf flags.
		kube string
		// node, if set, makes the sandbox a class of a node of its own
		// at the rate (--qdisc-node-rate and -ceil), in place of the
		// operator's tbf flags.
		node bool
	}{
		{100 * mbit, "100mbit", 1, "fq", "", false},
		{100 * mbit, "100mbit", 8, "fq", "", false},
		{100 * mbit, "100mbit", 64, "fq", "", false},
		{10 * mbit, "10mbit", 1, "fq", "", false},
		{10 * mbit, "10mbit", 8, "fq", "", false},
		{10 * mbit, "10mbit", 64, "fq", "", false},
		{100 * mbit, "100mbit", 8, "fifo", "", false},
		{10 * mbit, "10mbit", 64, "fq", "10M", false},
		{100 * mbit, "100mbit", 8, "fq", "100M", false},
		{10 * mbit, "10mbit", 64, "fq", "", true},
		{100 * mbit, "100mbit", 8, "fq", "", true},
	} {
		name := fmt.Sprintf("%s %d streams %s", tc.flag, tc.streams, tc.child)
		switch {
		case tc.kube != "":
			name = fmt.Sprintf("egress-bandwidth %s %d streams", tc.kube, tc.streams)
		case tc.node:
			name = fmt.Sprintf("node class %s %d streams", tc.flag, tc.streams)
		}
		t.Run(name, func(t *testing.T) {
			opts := lab.SandboxOptions{Flags: []string{"--qdisc=tbf", "--qdisc-tbf-rate=" + tc.flag, "--qdisc-tbf-burst=128kb"}}
			if tc.child != "fq" { // fq is the default: the operator sets a rate only
				opts.Flags = append(opts.Flags, "--qdisc-tbf-child="+tc.child)
			}
			switch {
			case tc.kube != "": // the pod's annotation alone
				opts = lab.SandboxOptions{Annotations: map[string]string{runscflags.AnnotationKubeEgress: tc.kube}}
			case tc.node: // a node's class: fq under it by default
				tree := filepath.Join(t.TempDir(), "node.htb")
				if err := os.WriteFile(tree, []byte("class root classid 1:1 rate "+tc.flag+" ceil "+tc.flag+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				opts = lab.SandboxOptions{Flags: []string{"--qdisc-node=" + tree, "--qdisc-node-parent=1:1", "--qdisc-node-rate=" + tc.flag, "--qdisc-node-ceil=" + tc.flag}}
			}
			s := r.start(t, opts)
			defer s.Close()
			sent0, drops0 := egressCounters(t, s)
			res, err := r.MeasureSandbox(s, measure.Options{Streams: tc.streams, Warmup: 3 * time.Second, Window: 5 * time.Second, PingInterval: 20 * time.Millisecond, RR: tc.child == "fq"})
			if err != nil {
				t.Fatal(err)
			}
			sent, drops := egressCounters(t, s)
			sent, drops = sent-sent0, drops-drops0
			if len(res.RTTs) < res.PingsSent*9/10 || len(res.RTTs) == 0 {
				t.Fatalf("%d of %d pings answered under load", len(res.RTTs), res.PingsSent)
			}
			p50, p99 := res.RTT(0.5), res.RTT(0.99)
			rr50, rr99 := measure.Quantile(res.RRs, 0.5), measure.Quantile(res.RRs, 0.99)
			t.Logf("on the wire %.2f Mbit/s; ping idle %v, under load p50 %v p99 %v; TCP request/response idle %v, p50 %v p99 %v (%d); the qdisc sent %d packets and dropped %d; sandbox CPU %v",
				res.WireBps*8/1e6, res.IdleRTT, p50, p99, res.IdleRR, rr50, rr99, len(res.RRs), sent, drops, res.CPU.Round(time.Millisecond))
			defer func() {
				if t.Failed() {
					show, _ := s.QDisc("show")
					t.Logf("runsc qdisc show:\n%s", show)
				}
			}()
			checkRate(t, "on the wire, of the rate", res.WireBps/tc.rate, 0.95, 1.01)
			// The promise of next to no drops is the flow queues'. The
			// byte FIFO (not the default) meets its limit now and then:
			// 0 drops in most runs, 264 of 16360 once in CI (logged above).
			if tc.child == "fq" && drops*1000 > max(sent, 1000) {
				t.Errorf("the qdisc dropped %d of %d packets, want at most 0.1%%", drops, sent)
			}
			if tc.child == "fifo" {
				if bound := time.Duration(float64(tc.streams*2*2*1514)/tc.rate*float64(time.Second)) + 5*time.Millisecond; p50 > bound {
					t.Errorf("the ping's median RTT under load is %v, want at most %v: the tbf's queue holds more than two packets a flow", p50, bound)
				}
				return
			}
			if bound := res.IdleRTT + 5*time.Millisecond; p99 > bound {
				t.Errorf("the ping's p99 RTT under load is %v, want at most %v (5 ms above idle)", p99, bound)
			}
			if len(res.RRs) < 200 {
				t.Errorf("%d TCP request/responses in the window, want about 250", len(res.RRs))
			} else if bound := res.IdleRR + 5*time.Millisecond; rr99 > bound {
				t.Errorf("the TCP request/response's p99 under load is %v, want at most %v (5 ms above idle); the round trips in order: %v", rr99, bound, res.RRs)
			}
		})
	}
}
