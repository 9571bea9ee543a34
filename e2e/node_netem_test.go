package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// nodeNetemClass is the class of each of TestNodeNetem's two sandboxes
// on a node under its 100 Mbit/s root (nodeTree): 10 Mbit/s guaranteed,
// a ceil of 40.
var nodeNetemClass = nodeClass{rate: 10, ceil: 40}

// nodeNetemWords are the first sandbox's own qdisc, netem, in tc's
// words, and nodeNetemDelay their delay; the second sandbox has runsc's
// default (fq under a class).
const (
	nodeNetemWords = "delay 20ms"
	nodeNetemDelay = 20 * time.Millisecond
)

// nodeNetemPings is how many pings measure a sandbox's RTT, and how far
// apart: 2 s a sandbox. nodeNetemWarmPings go before, uncounted: a
// sandbox's first reply waits for its ARP of the router, which leaves
// through netem too.
const (
	nodeNetemPings     = 200
	nodeNetemInterval  = 10 * time.Millisecond
	nodeNetemWarmPings = 5
)

// nodeNetemRTT is the round trip a bulk stream of the netem sandbox is
// sized for: netem's 20 ms, and as much again and more for what the
// machine adds. Each of nodeStreams streams' send buffers (iperf -w,
// which gVisor doubles) holds the streams together to twice what it
// keeps in flight at the class's ceil, as netemRate sizes them: 500 KB,
// five times netem's 20 ms at 40 Mbit/s, so that the class's share is
// never left waiting for an ACK, and some 350 packets, well within
// netem's limit of 1000.
const nodeNetemRTT = 0.05

// TestNodeNetem: a runsc sandbox that is a class of a node (rate
// 10 Mbit/s, ceil 40, under the root's 100) and whose own qdisc is
// netem's 20 ms of delay (--qdisc=netem --qdisc-netem="delay 20ms";
// host GSO off, as the node's tests run), beside a second sandbox of the
// same class without netem.
//
//   - delay: the peer's ping RTT to the netem sandbox is its RTT to the
//     other, pinged at the same moment, plus 20 ms, within 1 ms at p50
//     and p99 (200 pings 10 ms apart each, after 5 uncounted for ARP):
//     the class holds nothing back from a sparse flow, and netem's delay
//     is released on time through the class's gate.
//   - ceil: bulk TCP from the netem sandbox alone (nodeStreams iperf
//     streams, their send buffers sized for the RTT, nodeNetemRTT) is
//     held to its class's ceil, 40 Mbit/s, within [0.99, 1.005] on the
//     peer's wire over one window (2 s warm-up, 4 s), and its goodput at
//     the peer is not above it. netem's delay does not cost the class its
//     share: netem orphans what it holds (pkg/qdisc/netem/orphan.go), so
//     TCP small queues do not count the 20 ms as the sender's queue.
//
// Each is measured once.
func TestNodeNetem(t *testing.T) {
	if raceDetector {
		t.Skip("a node's class under netem is measured on real peers, timing-sensitive and CPU-bound: measured without -race (.ci/run runs go test ./e2e/ too)")
	}
	start := time.Now()
	r := newNodeRig(t, 2)
	if !hasRunscFlag(r.runsc, runscflags.FlagNodeRate) {
		t.Skipf("%s has no --qdisc-node-rate: build runsc with the node's flags (runsc/build.sh)", r.runsc)
	}
	tree := filepath.Join(t.TempDir(), "node.htb")
	if err := os.WriteFile(tree, []byte(nodeTree+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sandboxes := r.startAll(t, func(i int) []string {
		flags := nodeFlags(tree, nodeNetemClass)
		if i == 0 {
			flags = append(flags, "--qdisc=netem", "--qdisc-netem="+nodeNetemWords)
		}
		return flags
	})
	defer closeAll(sandboxes)
	t.Logf("2 sandboxes up after %v", time.Since(start).Round(time.Millisecond))
	show, err := sandboxes[0].QDisc("show")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"qdisc netem", "delay 20ms", fmt.Sprintf("rate %dMbit ceil %dMbit", nodeNetemClass.rate, nodeNetemClass.ceil)} {
		if !strings.Contains(show, want) {
			t.Errorf("runsc qdisc show %s:\n%s\nwant %q", sandboxes[0].ID(), show, want)
		}
	}
	t.Run("delay", func(t *testing.T) {
		rtts := nodePingAtOnce(t, r, 1, 0)
		checkAdded(t, "the netem sandbox over the one without netem", rtts[0], rtts[1], nodeNetemDelay)
	})
	t.Run("ceil", func(t *testing.T) {
		ceil := float64(nodeNetemClass.ceil * mbit) // bytes/s
		o := measure.Options{Warmup: 2 * time.Second, Window: 4 * time.Second, SendBuffer: max(8<<10, int(ceil*nodeNetemRTT)/nodeStreams)}
		res, err := r.MeasureGoodput(sandboxes, []int{nodeStreams, 0}, o)
		if err != nil {
			t.Fatal(err)
		}
		ratio := res.Bps[0] / ceil
		t.Logf("%d streams of -w %d bytes from the netem sandbox, flowing %v after they were started: the peer's wire %.4g Mbit/s = %.4f of its ceil of %d Mbit/s; goodput %.4g Mbit/s (%.4f of the wire); the uplink sent %.4g Mbit/s",
			nodeStreams, o.SendBuffer, res.Flowing.Round(time.Millisecond), res.Bps[0]*8/1e6, ratio, nodeNetemClass.ceil, res.Goodput[0]*8/1e6, res.Goodput[0]/res.Bps[0], res.UplinkBps*8/1e6)
		checkRate(t, "the netem sandbox's class on the wire, of its ceil", ratio, 0.99, 1.005)
		if res.Goodput[0] > ceil {
			t.Errorf("goodput %.4g Mbit/s above the class's ceil of %d Mbit/s", res.Goodput[0]*8/1e6, nodeNetemClass.ceil)
		}
		if t.Failed() {
			show, _ := sandboxes[0].QDisc("show")
			t.Logf("runsc qdisc show %s:\n%s", sandboxes[0].ID(), show)
		}
	})
	t.Logf("the test took %v", time.Since(start).Round(time.Millisecond))
}

// nodePingAtOnce pings each of the node's places from the peer, all at
// once (pingAtOnce), after nodeNetemWarmPings uncounted pings each.
func nodePingAtOnce(t *testing.T, r *nodeRig, places ...int) [][]time.Duration {
	t.Helper()
	var ps []pinger
	for _, i := range places {
		ps = append(ps, pinger{
			name: fmt.Sprintf("ping %s", lab.NodeSandboxAddr(i+1)),
			warm: func() error {
				_, _, err := r.PingSandbox(i, nodeNetemWarmPings, nodeNetemInterval)
				return err
			},
			ping: func() ([]time.Duration, int, error) { return r.PingSandbox(i, nodeNetemPings, nodeNetemInterval) },
		})
	}
	return pingAtOnce(t, ps...)
}
