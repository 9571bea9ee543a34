package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// nodeIngressCases are the receive direction's cases: nodeCases (all
// busy, one idle, two prios), with the same classes, streams and htb's
// steady state. The three take about 55 s, the node's sandboxes started
// twice (the prios are other classes).
var nodeIngressCases = nodeCases

// nodeIngressFlags are nodeDirFlags on the receive path.
func nodeIngressFlags(tree string, c nodeClass) []string {
	return nodeDirFlags("ingress-node", tree, c)
}

// TestNodeIngressAgainstKernelHTB: three runsc sandboxes on one node
// share what the node receives over its 100 Mbit/s uplink as the
// kernel's htb shares it, the mirror of TestNodeSharesAgainstKernelHTB.
// The peer sends iperf streams (nodeStreams) to each sandbox's address,
// through the router namespace, to iperf's server in the sandbox. The
// control: sandboxes unshaped (nothing queues what they receive) and
// Linux's sch_htb on the one link all of it crosses, the peer's end of
// the uplink, with a class per sandbox keyed by its address (as an ifb's
// htb on the node's NIC would shape it). The node: no qdisc on the link,
// and each sandbox a class of the receive direction's node
// (--qdisc-ingress-node*) with the same rate, ceil and prio. For the
// cases all busy, one idle and two prios, what each busy sandbox's TCP
// takes over a window (the bytes it acknowledged, as the peer's kernel
// counts them: lab.PeerAcked) is within [0.97, 1.03] of what it takes
// under the kernel's htb, the node's uplink carries no more than
// nodeIngressTotal of the root, and each sandbox's `runsc qdisc show`
// names its class.
//
// The wire to each sandbox is not its class's rate in this direction: a
// sandbox can hold back only what already arrived, in its receive queue,
// which holds up to a second of its share and swings by hundreds of
// packets over a window (NodeIngressResult.Acked), and what it drops the
// peer sends again. So the node's wire is logged beside what the
// sandboxes took. The uplink carried a little less than the root
// (97.1-99.4 Mbit/s in 9 windows): the queues filled in the warm-up (the
// peer's slow start) drain over the window, and seldom overflow (sandbox
// 1's dropped 0-15 packets a run, whose retransmissions the wire carries
// again).
//
// As in the send test, each case is measured once, the control and the
// node alike. A control that did not give a busy sandbox its rate is an
// error of its own.
func TestNodeIngressAgainstKernelHTB(t *testing.T) {
	if raceDetector {
		t.Skip("shares are measured on real peers, timing-sensitive and CPU-bound: measured without -race (.ci/run runs go test ./e2e/ too, and CI's time is tight)")
	}
	start := time.Now()
	r := newNodeRig(t, 3)
	unshaped := r.startAll(t, func(int) []string { return []string{"--gso=false"} })
	t.Logf("%d unshaped sandboxes up after %v", len(unshaped), time.Since(start).Round(time.Millisecond))
	kernel := kernelControl(t, r.ReceiveLink(), nodeIngressCases, func(classes []nodeClass) string {
		var addrs []string
		for _, h := range r.Hosts {
			addrs = append(addrs, h.Addr)
		}
		return nodeKernelScript(classes, addrs)
	},
		func(streams []int) (lab.NodeIngressResult, error) {
			return r.MeasureIngress(unshaped, streams, nodeOptions)
		},
		func(res lab.NodeIngressResult) []float64 { return res.Bps })
	for k, c := range nodeIngressCases {
		t.Logf("%s, the kernel's htb: %s; the uplink carried %.2f Mbit/s", c.name, mbits(kernel[k].Bps), kernel[k].UplinkBps*8/1e6)
	}
	closeAll(unshaped)
	if !hasRunscFlag(r.runsc, runscflags.FlagIngressNodeRate) {
		t.Skipf("%s has no --qdisc-ingress-node-rate: the kernel's half ran (above), the node's needs a runsc built with the node's flags (runsc/build.sh)", r.runsc)
	}
	sandboxes, classes := r.eachCase(t, nodeIngressCases, nodeIngressFlags, func(t *testing.T, k int, c nodeCase, sandboxes []*lab.Sandbox) {
		node, err := r.MeasureIngress(sandboxes, c.streams, nodeOptions)
		if err != nil {
			t.Fatal(err)
		}
		checkIngressShares(t, c.classes, c.streams, kernel[k], node)
	})
	// Each sandbox's show names its own class of the receive node (the
	// node's lines list only the live classes: an idle one parks, and
	// after 500 ms the others count it gone).
	for i, sb := range sandboxes {
		show, err := sb.QDisc("show")
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			t.Logf("runsc qdisc show %s:\n%s", sb.ID(), show)
		}
		c := classes[i]
		re := regexp.MustCompile(fmt.Sprintf(`(?m)^ingress: node \S+ class htb \S+ parent 1:1 rate %dMbit ceil %dMbit prio %d `, c.rate, c.ceil, c.prio))
		if !re.MatchString(show) {
			t.Errorf("runsc qdisc show of sandbox %d names no class %q", i+1, re)
		}
	}
	closeAll(sandboxes)
	t.Logf("the test took %v", time.Since(start).Round(time.Millisecond))
}

// nodeIngressTotal bounds what the node's uplink carried in the receive
// direction, of the root's rate (TestNodeIngressAgainstKernelHTB).
const nodeIngressTotal = 1.005

// checkIngressTotals checks what the node's uplink carried against the
// root's rate.
func checkIngressTotals(t *testing.T, node lab.NodeIngressResult, which string) {
	t.Helper()
	checkRate(t, "the node's uplink of the root's rate"+which, node.UplinkBps/(nodeRoot*mbit), 0, nodeIngressTotal)
}

// checkIngressShares logs a receive case's table and checks what each
// busy sandbox took under the node against what it took under the
// kernel's htb, and the node's uplink against the root's rate.
func checkIngressShares(t *testing.T, classes []nodeClass, streams []int, kernel, node lab.NodeIngressResult) {
	t.Helper()
	var table strings.Builder
	fmt.Fprintf(&table, "took (TCP payload, Mbit/s) and the wire (frames)\n%-8s %5s %5s %5s %12s %12s %7s %12s %10s\n", "sandbox", "rate", "ceil", "prio", "kernel took", "node took", "ratio", "kernel wire", "node wire")
	var took [2]float64
	for i, c := range classes {
		ratio := "idle"
		if streams[i] > 0 {
			ratio = fmt.Sprintf("%.4f", node.Acked[i]/kernel.Acked[i])
		}
		took[0] += kernel.Acked[i]
		took[1] += node.Acked[i]
		fmt.Fprintf(&table, "%-8d %5d %5d %5d %12.2f %12.2f %7s %12.2f %10.2f\n", i+1, c.rate, c.ceil, c.prio, kernel.Acked[i]*8/1e6, node.Acked[i]*8/1e6, ratio, kernel.Bps[i]*8/1e6, node.Bps[i]*8/1e6)
	}
	fmt.Fprintf(&table, "%-26s %12.2f %12.2f\n", "took (all)", took[0]*8/1e6, took[1]*8/1e6)
	fmt.Fprintf(&table, "%-26s %12.2f %12.2f\n", "uplink rx (all)", kernel.UplinkBps*8/1e6, node.UplinkBps*8/1e6)
	fmt.Fprintf(&table, "the sandboxes' CPU over the window: kernel's (unshaped) %v, node's %v", cpuSecs(kernel.CPU), cpuSecs(node.CPU))
	t.Logf("\n%s", table.String())
	for i, c := range classes {
		if streams[i] == 0 {
			continue
		}
		// htb guarantees a busy class its rate: a control below it did
		// not keep the class busy, and says nothing of htb's sharing.
		if k := kernel.Bps[i] / float64(c.rate*mbit); k < 0.97 {
			t.Errorf("the control is void: the kernel's htb passed %.4f of sandbox %d's rate (its streams did not keep its class busy)", k, i+1)
			continue
		}
		checkRate(t, fmt.Sprintf("sandbox %d (%d Mbit/s prio %d): what it took under the node, of what it took under the kernel's htb", i+1, c.rate, c.prio), node.Acked[i]/kernel.Acked[i], 0.97, 1.03)
	}
	checkIngressTotals(t, node, "")
}
