package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// nodeClass is a sandbox's class on a node: the rate it is guaranteed and
// its ceil, in Mbit/s, and its prio.
type nodeClass struct {
	rate, ceil uint64
	prio       int
}

// nodeRoot is the node's root class, in Mbit/s (the uplink's rate), and
// nodeTree the node's tree file: that class alone, in htb's words.
const (
	nodeRoot = 100
	nodeTree = "class root classid 1:1 rate 100mbit ceil 100mbit"
)

// nodeOptions are each case's window: the shares of both settle within
// the warm-up, and each sandbox's bytes are counted at the peer.
var nodeOptions = measure.Options{Warmup: 2 * time.Second, Window: 5 * time.Second}

// nodeFirstWindow is the node's window in TestNodeSharesAgainstKernelHTB:
// from 1 s after every sandbox's streams reach the peer (the node's
// change; lab.NodeResult.Flowing, runsc exec's hundreds of milliseconds
// before it), in samples of 500 ms, with a ping every 20 ms. Every 1 s of
// it is within [0.97, 1.03] of the kernel's shares and every 500 ms at
// least 0.95 of a guarantee (checkNodeWindows): issue 48's promise.
var nodeFirstWindow = measure.Options{Warmup: time.Second, Window: 5 * time.Second, Sample: 500 * time.Millisecond, PingInterval: 20 * time.Millisecond}

// nodeStreams are a busy sandbox's iperf streams. The kernel's htb drops
// what overflows a leaf's pfifo (1000 packets), and a TCP that lost a
// burst can leave its class idle for a while: with 2 streams a sandbox
// the kernel's shares were 10% apart from run to run, and with 4 a class
// once got half its rate for a whole window. With 8, over 24 cases on a
// machine loaded up to 9 on its 2 cores, each share was within 6% of
// htb's steady state (nodeCases), and most within 1%.
const nodeStreams = 8

// nodeCases are issue 38's: a 100 Mbit/s root and 3 sandboxes guaranteed
// 10, 20 and 30 Mbit/s with a ceil of 100, all busy, one idle, and two
// prios. streams[i] is sandbox i's iperf streams (0: it sends nothing).
// Cases with the same classes follow each other: they share the node's
// sandboxes. (htb's steady state, with tc's default quanta 125000,
// 200000 and 200000 bytes, is 19.5, 35.2 and 45.2 Mbit/s; 36.9 and 63.1;
// 50, 20 and 30.)
var nodeCases = []nodeCase{
	{"all busy", []nodeClass{{10, 100, 0}, {20, 100, 0}, {30, 100, 0}}, []int{nodeStreams, nodeStreams, nodeStreams}, []float64{10 + 40*125.0/525, 20 + 40*200.0/525, 30 + 40*200.0/525}},
	{"the 30 idle", []nodeClass{{10, 100, 0}, {20, 100, 0}, {30, 100, 0}}, []int{nodeStreams, nodeStreams, 0}, []float64{10 + 70*125.0/325, 20 + 70*200.0/325, 0}},
	{"two prios", []nodeClass{{10, 100, 0}, {20, 100, 1}, {30, 100, 1}}, []int{nodeStreams, nodeStreams, nodeStreams}, []float64{50, 20, 30}},
}

// nodeCase is a case of a node's test: its classes, each sandbox's iperf
// streams (0: it sends nothing), and htb's steady state for them.
type nodeCase struct {
	name    string
	classes []nodeClass
	streams []int
	steady  []float64 // htb's steady state, Mbit/s
}

// offSteady returns the largest relative distance of a window's busy
// shares from htb's steady state.
func offSteady(bps []float64, steady []float64) float64 {
	var worst float64
	for i, want := range steady {
		if want > 0 {
			worst = max(worst, math.Abs(bps[i]*8/1e6/want-1))
		}
	}
	return worst
}

// nodeKernelScript is the kernel's htb for classes on one of the node's
// links, in htb's words: the node's root 1:1, sandbox i's class 1:i0
// under it, and a filter by the address addrs[i] its traffic goes to
// (the peer's for sandbox i on the send path, sandbox i's own on the
// receive path).
func nodeKernelScript(classes []nodeClass, addrs []string) string {
	lines := []string{nodeTree}
	for i, c := range classes {
		lines = append(lines, fmt.Sprintf("class parent 1:1 classid 1:%d0 rate %dmbit ceil %dmbit prio %d", i+1, c.rate, c.ceil, c.prio))
	}
	for i, a := range addrs {
		lines = append(lines, fmt.Sprintf("filter dst %s/32 classid 1:%d0", a, i+1))
	}
	return strings.Join(lines, "\n")
}

// nodeDirFlags are a sandbox's runsc flags as a class, in direction dir
// ("node" or "ingress-node"), of the node whose tree is the file tree:
// under the root 1:1, with its rate, ceil and prio.
func nodeDirFlags(dir, tree string, c nodeClass) []string {
	return []string{
		"--gso=false", "--qdisc-" + dir + "=" + tree, "--qdisc-" + dir + "-parent=1:1",
		fmt.Sprintf("--qdisc-%s-rate=%dmbit", dir, c.rate), fmt.Sprintf("--qdisc-%s-ceil=%dmbit", dir, c.ceil), fmt.Sprintf("--qdisc-%s-prio=%d", dir, c.prio),
	}
}

// nodeFlags are nodeDirFlags on the send path.
func nodeFlags(tree string, c nodeClass) []string { return nodeDirFlags("node", tree, c) }

// nodeRig is a Node with runsc sandboxes: every sandbox's processes, the
// namespaces and the cgroups must be gone once the test ends, pass or
// fail.
type nodeRig struct {
	*lab.Node
	runsc string

	mu sync.Mutex
	// +checklocks:mu
	pids []int
	// +checklocks:mu
	ids []string
}

// newNodeRig makes a Node of n sandbox places, or skips the test saying
// what is missing.
func newNodeRig(t *testing.T, n int) *nodeRig {
	t.Helper()
	skipSandboxUnderRace(t)
	if err := lab.Check(); err != nil {
		t.Skipf("real-sandbox tests skipped: %v", err)
	}
	bin, err := lab.RunscBinary(false)
	if err != nil {
		t.Skipf("real-sandbox tests skipped: %v", err)
	}
	nd, err := lab.NewNode(n)
	if err != nil {
		t.Fatal(err)
	}
	r := &nodeRig{Node: nd, runsc: bin}
	t.Cleanup(func() {
		nd.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, pid := range r.pids {
			if lab.Alive(pid) {
				t.Errorf("sandbox process %d is still running after the test", pid)
			}
		}
		out, _ := exec.Command("ip", "netns", "list").Output()
		for _, ns := range nd.Namespaces() {
			if strings.Contains(string(out), ns) {
				t.Errorf("namespace %s is still there after the test", ns)
			}
		}
		for _, id := range r.ids {
			for _, cg := range []string{filepath.Join("/sys/fs/cgroup/cpuacct", id), filepath.Join("/sys/fs/cgroup", id)} {
				if _, err := os.Stat(cg); err == nil {
					t.Errorf("cgroup %s is still there after the test", cg)
				}
			}
		}
	})
	return r
}

// startAll starts a sandbox in each place of the node at once, place i's
// with flags(i).
func (r *nodeRig) startAll(t *testing.T, flags func(i int) []string) []*lab.Sandbox {
	t.Helper()
	sandboxes := make([]*lab.Sandbox, len(r.Hosts))
	errs := make([]error, len(r.Hosts))
	var wg sync.WaitGroup
	for i := range r.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sandboxes[i], errs[i] = r.start(i, lab.SandboxOptions{Flags: flags(i)})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return sandboxes
}

// start starts a sandbox in place i of the node with o (runsc is the
// rig's), and keeps its processes and cgroup for the checks at the end.
func (r *nodeRig) start(i int, o lab.SandboxOptions) (*lab.Sandbox, error) {
	o.Runsc = r.runsc
	s, err := r.StartSandbox(i, o)
	if err != nil {
		return nil, fmt.Errorf("sandbox %d: %v", i+1, err)
	}
	r.mu.Lock()
	r.pids = append(r.pids, s.Pids()...)
	r.ids = append(r.ids, s.ID())
	r.mu.Unlock()
	return s, nil
}

// closeAll closes the sandboxes at once.
func closeAll(sandboxes []*lab.Sandbox) {
	var wg sync.WaitGroup
	for _, s := range sandboxes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Close()
		}()
	}
	wg.Wait()
}

// hasRunscFlag says whether runsc has the flag name (runsc flags lists
// netqdisc's; runsc --help points to it).
func hasRunscFlag(runsc, name string) bool {
	out, _ := exec.Command(runsc, "flags").CombinedOutput()
	return strings.Contains(string(out), "-"+name+" ")
}

// TestNodeSharesAgainstKernelHTB: three runsc sandboxes on one node share
// its 100 Mbit/s uplink as the kernel's htb on that uplink shares it
// (issue 38). Each sandbox is routed through one router namespace whose
// uplink is the node's NIC, and sends iperf streams (nodeStreams) to its
// own address at the peer. The control: sandboxes unshaped (runsc's
// fifo) and Linux's sch_htb on the router's uplink with a class per
// sandbox, keyed by its destination. The node: no qdisc on the uplink,
// and each sandbox a class of the node (--qdisc-node*) with the same
// rate, ceil and prio. For the cases all busy, one idle and two prios,
// what the peer receives for each busy sandbox over a window (its frames'
// bytes a second) is within [0.97, 1.03] of what it receives under the
// kernel's htb, and the node's uplink never sends more than 1.005 of the
// root's rate (its frames, as htb counts them); the window's 500 ms
// samples are held to it second by second (checkNodeWindows). The peer pings each busy sandbox
// every 20 ms: under the node, the p99 is within 5 ms of idle
// (checkNodeRTTs).
// `runsc qdisc show` of a sandbox names the node's three classes. Each case is measured once,
// the control and the node alike (issue 48: with small queues and fq
// under the class, no window is taken again); a control that did not
// give a busy sandbox its rate is an error of its own: it says nothing
// of htb.
func TestNodeSharesAgainstKernelHTB(t *testing.T) {
	if raceDetector {
		t.Skip("shares are measured on real peers, timing-sensitive and CPU-bound: measured without -race (.ci/run runs go test ./e2e/ too, and CI's time is tight)")
	}
	start := time.Now()
	r := newNodeRig(t, 3)
	// The control: unshaped sandboxes, the kernel's htb between cases.
	unshaped := r.startAll(t, func(int) []string { return []string{"--gso=false"} })
	t.Logf("%d unshaped sandboxes up after %v", len(unshaped), time.Since(start).Round(time.Millisecond))
	kernel := kernelControl(t, r.SendLink(), nodeCases, func(classes []nodeClass) string {
		var addrs []string
		for _, h := range r.Hosts {
			addrs = append(addrs, h.PeerAddr)
		}
		return nodeKernelScript(classes, addrs)
	},
		func(streams []int) (lab.NodeResult, error) {
			o := nodeOptions
			o.PingInterval = nodeFirstWindow.PingInterval // for checkNodeRTTs' log
			return r.Measure(unshaped, streams, o)
		},
		func(res lab.NodeResult) []float64 { return res.Bps })
	for k, c := range nodeCases {
		t.Logf("%s, the kernel's htb: %s; the uplink sent %.2f Mbit/s", c.name, mbits(kernel[k].Bps), kernel[k].UplinkBps*8/1e6)
	}
	closeAll(unshaped)
	if !hasRunscFlag(r.runsc, runscflags.FlagNodeRate) {
		t.Skipf("%s has no --qdisc-node-rate: the kernel's half ran (above), the node's needs a runsc built with the node's flags (runsc/build.sh)", r.runsc)
	}
	sandboxes, classes := r.eachCase(t, nodeCases, nodeFlags, func(t *testing.T, k int, c nodeCase, sandboxes []*lab.Sandbox) {
		node, err := r.Measure(sandboxes, c.streams, nodeFirstWindow)
		if err != nil {
			t.Fatal(err)
		}
		checkNodeShares(t, c.classes, c.streams, kernel[k], node)
		checkNodeWindows(t, c.classes, c.streams, kernel[k], node)
		checkNodeRTTs(t, c.streams, kernel[k], node)
	})
	show, err := sandboxes[0].QDisc("show")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("runsc qdisc show %s:\n%s", sandboxes[0].ID(), show)
	for _, c := range classes {
		re := regexp.MustCompile(fmt.Sprintf(`class htb \S+ parent 1:1 prio %d rate %dMbit ceil %dMbit`, c.prio, c.rate, c.ceil))
		if !re.MatchString(show) {
			t.Errorf("runsc qdisc show names no class %q", re)
		}
	}
	closeAll(sandboxes)
	t.Logf("the test took %v", time.Since(start).Round(time.Millisecond))
}

// kernelControl measures each case once with measure (on sandboxes that
// shape nothing) under the kernel's htb on link, its classes and filters
// script's, and returns each case's window. wire is a window's rate for
// each sandbox on the wire, where htb shapes: a window more than 3% off
// htb's steady state is logged.
func kernelControl[R any](t *testing.T, link lab.NodeLink, cases []nodeCase, script func([]nodeClass) string, measure func(streams []int) (R, error), wire func(R) []float64) []R {
	t.Helper()
	kernel := make([]R, len(cases))
	for k, c := range cases {
		s, err := htb.ParseScript(script(c.classes))
		if err != nil {
			t.Fatal(err)
		}
		// tc warns that the 20 and 30 Mbit/s classes' quanta are big:
		// it clamps them to 200000 bytes, as the node does.
		if _, err := link.HTB(s.Tree(classify.Egress)); err != nil {
			t.Fatal(err)
		}
		if kernel[k], err = measure(c.streams); err == nil && offSteady(wire(kernel[k]), c.steady) > 0.03 {
			t.Logf("%s, the kernel's htb: %s, %.1f%% off htb's steady state", c.name, mbits(wire(kernel[k])), 100*offSteady(wire(kernel[k]), c.steady))
		}
		classes, _ := link.Classes()
		if derr := link.DeleteHTB(); err == nil {
			err = derr
		}
		if err != nil {
			t.Fatalf("%s, the kernel's htb: %v\n%s", c.name, err, classes)
		}
	}
	return kernel
}

// eachCase runs run for each case, in a subtest, on sandboxes of the
// node: a set of them for each run of cases with the same classes, each
// sandbox started with flags(tree, its class) on a tree file (and so a
// node's allocator) of the set's own. It returns the last set and its classes.
func (r *nodeRig) eachCase(t *testing.T, cases []nodeCase, flags func(tree string, c nodeClass) []string, run func(t *testing.T, k int, c nodeCase, sandboxes []*lab.Sandbox)) ([]*lab.Sandbox, []nodeClass) {
	t.Helper()
	var sandboxes []*lab.Sandbox
	var classes []nodeClass
	for k, c := range cases {
		if sandboxes == nil || !sameClasses(classes, c.classes) {
			closeAll(sandboxes)
			tree := filepath.Join(t.TempDir(), "node.htb")
			if err := os.WriteFile(tree, []byte(nodeTree+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			classes = c.classes
			sandboxes = r.startAll(t, func(i int) []string { return flags(tree, classes[i]) })
		}
		t.Run(c.name, func(t *testing.T) { run(t, k, c, sandboxes) })
	}
	return sandboxes, classes
}

// checkNodeShares logs a case's table and checks the node's shares against
// the kernel's, and the node's total against the root's rate.
func checkNodeShares(t *testing.T, classes []nodeClass, streams []int, kernel, node lab.NodeResult) {
	t.Helper()
	var table strings.Builder
	fmt.Fprintf(&table, "%-8s %5s %5s %5s %14s %12s %7s\n", "sandbox", "rate", "ceil", "prio", "kernel Mbit/s", "node Mbit/s", "ratio")
	for i, c := range classes {
		ratio := "idle"
		if streams[i] > 0 {
			ratio = fmt.Sprintf("%.4f", node.Bps[i]/kernel.Bps[i])
		}
		fmt.Fprintf(&table, "%-8d %5d %5d %5d %14.2f %12.2f %7s\n", i+1, c.rate, c.ceil, c.prio, kernel.Bps[i]*8/1e6, node.Bps[i]*8/1e6, ratio)
	}
	fmt.Fprintf(&table, "%-26s %14.2f %12.2f\n", "uplink (all)", kernel.UplinkBps*8/1e6, node.UplinkBps*8/1e6)
	fmt.Fprintf(&table, "the sandboxes' CPU over the window: kernel's (unshaped) %v, node's %v", cpuSecs(kernel.CPU), cpuSecs(node.CPU))
	t.Logf("\n%s", table.String())
	for i, c := range classes {
		if streams[i] == 0 {
			continue
		}
		// htb guarantees a busy class its rate: a control below it did
		// not keep the class busy, and says nothing of htb's sharing.
		if k := kernel.Bps[i] / float64(c.rate*mbit); k < 0.97 {
			t.Errorf("the control is void: the kernel's htb sent %.4f of sandbox %d's rate (its streams did not keep its class busy)", k, i+1)
			continue
		}
		checkRate(t, fmt.Sprintf("sandbox %d (%d Mbit/s prio %d): the node's share of the kernel's", i+1, c.rate, c.prio), node.Bps[i]/kernel.Bps[i], 0.97, 1.03)
	}
	checkRate(t, "the node's uplink of the root's rate", node.UplinkBps/(nodeRoot*mbit), 0, 1.005)
}

// checkNodeWindows logs a node's window sample by sample (its 500 ms
// samples, nodeFirstWindow), and checks each busy sandbox's every second
// against the kernel's share over its window, within [0.97, 1.03], and
// its every 500 ms against its guarantee, at least 0.95.
func checkNodeWindows(t *testing.T, classes []nodeClass, streams []int, kernel, node lab.NodeResult) {
	t.Helper()
	from := nodeFirstWindow.Warmup.Seconds()
	var table strings.Builder
	for k, s := range node.Samples {
		fmt.Fprintf(&table, "%4.1fs %s\n", from+0.5*float64(k+1), mbits(s))
	}
	for i, c := range classes {
		if streams[i] == 0 {
			continue
		}
		lo, hi, floor := math.Inf(1), math.Inf(-1), math.Inf(1)
		for k, s := range node.Samples {
			floor = min(floor, s[i]/float64(c.rate*mbit))
			if k >= 1 { // every second: each two samples in a row
				r := (node.Samples[k-1][i] + s[i]) / 2 / kernel.Bps[i]
				lo, hi = min(lo, r), max(hi, r)
			}
		}
		fmt.Fprintf(&table, "sandbox %d: each second %.4f-%.4f of the kernel's share, each 500 ms at least %.2f of its guarantee\n", i+1, lo, hi, floor)
		if lo < 0.97 || hi > 1.03 {
			t.Errorf("sandbox %d: its seconds from %.1f s were %.4f to %.4f of the kernel's share, want each within [0.97, 1.03]", i+1, from, lo, hi)
		}
		if floor < 0.95 {
			t.Errorf("sandbox %d: a 500 ms from %.1f s carried %.2f of its guarantee, want at least 0.95", i+1, from, floor)
		}
	}
	t.Logf("the node's 500 ms samples from %.1f s after every sandbox's streams reached the peer (%v after they were started):\n%s", from, node.Flowing.Round(time.Millisecond), table.String())
}

// checkNodeRTTs logs the peer's pings of each busy sandbox under the
// kernel's htb and under the node, and checks the node's: a sparse flow
// beside a sandbox's own streams, its echo reply through the sandbox's
// class (fq under it by default, small queues above), within 5 ms of idle
// at p99 (issue 48), and at most 1% of the pings lost.
func checkNodeRTTs(t *testing.T, streams []int, kernel, node lab.NodeResult) {
	t.Helper()
	var table strings.Builder
	for i, n := range streams {
		if n == 0 {
			continue
		}
		fmt.Fprintf(&table, "sandbox %d: ping idle %v, loaded p50 %v p99 %v (%d of %d answered); under the kernel's htb, idle %v, loaded p50 %v p99 %v (%d of %d)\n", i+1,
			node.IdleRTT[i], measure.Quantile(node.RTTs[i], 0.5), measure.Quantile(node.RTTs[i], 0.99), len(node.RTTs[i]), node.PingsSent[i],
			kernel.IdleRTT[i], measure.Quantile(kernel.RTTs[i], 0.5), measure.Quantile(kernel.RTTs[i], 0.99), len(kernel.RTTs[i]), kernel.PingsSent[i])
	}
	t.Logf("a sparse flow beside each sandbox's streams:\n%s", table.String())
	for i, n := range streams {
		if n == 0 {
			continue
		}
		if lost := node.PingsSent[i] - len(node.RTTs[i]); lost*100 > node.PingsSent[i] || len(node.RTTs[i]) == 0 {
			t.Errorf("sandbox %d: %d of %d pings lost, want at most 1%%", i+1, lost, node.PingsSent[i])
			continue
		}
		if p99, bound := measure.Quantile(node.RTTs[i], 0.99), node.IdleRTT[i]+5*time.Millisecond; p99 > bound {
			t.Errorf("sandbox %d: the ping's p99 under load is %v, want at most %v (5 ms above idle)", i+1, p99, bound)
		}
	}
}

// cpuSecs prints CPU times in seconds.
func cpuSecs(d []time.Duration) string {
	s := make([]string, len(d))
	for i, t := range d {
		s[i] = fmt.Sprintf("%.2f", t.Seconds())
	}
	return strings.Join(s, ", ") + " s"
}

// sameClasses says whether a and b are the same classes.
func sameClasses(a, b []nodeClass) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// mbits prints rates in bytes/s as Mbit/s.
func mbits(bps []float64) string {
	s := make([]string, len(bps))
	for i, b := range bps {
		s[i] = fmt.Sprintf("%.2f", b*8/1e6)
	}
	return strings.Join(s, ", ") + " Mbit/s"
}
