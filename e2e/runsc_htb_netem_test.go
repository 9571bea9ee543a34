package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
)

// The operator's tree of the netem-leaf tests (docs/netem.md, "Under an
// htb class"): the cluster's class 1:10, which a filter fills with what
// goes to the peer's cluster address, and the internet's, 1:20, the
// default, whose leaf is netem's 50 ms: a WAN's delay for one class and
// none for the other. (50 ms, not 100: ping prints an RTT of 100 ms or
// more in whole milliseconds.)
const (
	htbNetemClasses = "class root classid 1:1 rate 200mbit; class parent 1:1 classid 1:10 rate 100mbit ceil 200mbit; class parent 1:1 classid 1:20 rate 10mbit"
	htbNetemTree    = "qdisc default 20; " + htbNetemClasses + "; filter dst " + lab.PeerClusterAddr + "/32 classid 1:10"
	htbNetemLeaf    = "qdisc parent 1:20 netem delay 50ms"
	htbNetemScript  = htbNetemTree + "; " + htbNetemLeaf
	htbNetemDelay   = 50 * time.Millisecond
	htbNetemRate    = 10 * mbit // class 1:20's, bytes/s
)

// htbNetemPings is how many pings measure a class's RTT, and how far
// apart: 2 s a class.
const (
	htbNetemPings    = 200
	htbNetemInterval = 10 * time.Millisecond
)

// startHTBNetem starts a sandbox of r whose egress qdisc is htb with
// script, host GSO off, and the pod's annotations, and puts the cluster
// address on the peer.
func startHTBNetem(t *testing.T, r *runscRig, script string, annotations map[string]string) *lab.Sandbox {
	t.Helper()
	s, err := r.StartHTBSandbox(lab.SandboxOptions{Runsc: r.runsc, Flags: []string{"--qdisc=htb", "--qdisc-htb=" + script, "--gso=false"}, Annotations: annotations})
	if err != nil {
		t.Fatal(err)
	}
	r.sandboxes = append(r.sandboxes, s)
	r.pids = append(r.pids, s.Pids()...)
	if err := r.AddClusterPeer(nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// classPing is a class's pings: to rig r's sandbox from the peer's
// address from, whose class the replies go through.
type classPing struct {
	r    *runscRig
	from string
}

// classPings pings each of ps's sandboxes from its address, all at once
// (pingAtOnce). Five pings before are not counted: a sandbox's first
// replies to an address wait for its ARP, which, not IP, goes to the
// default class and its netem.
func classPings(t *testing.T, ps ...classPing) [][]time.Duration {
	t.Helper()
	var pings []pinger
	for _, p := range ps {
		pings = append(pings, pinger{
			name: "ping from " + p.from,
			warm: func() error {
				_, _, err := p.r.PingFrom(p.from, 5, htbNetemInterval)
				return err
			},
			ping: func() ([]time.Duration, int, error) { return p.r.PingFrom(p.from, htbNetemPings, htbNetemInterval) },
		})
	}
	return pingAtOnce(t, pings...)
}

// checkAdded checks that rtts are base's plus want, within 1 ms, at p50
// and p99.
func checkAdded(t *testing.T, what string, base, rtts []time.Duration, want time.Duration) {
	t.Helper()
	for _, q := range []float64{0.5, 0.99} {
		b, got := measure.Quantile(base, q), measure.Quantile(rtts, q)
		d := got - b - want
		t.Logf("%s: p%.0f RTT %v, against %v: %v added, %v from the %v wanted", what, q*100, got, b, got-b, d, want)
		if d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("%s: p%.0f RTT %v is %v more than %v; want %v within 1ms", what, q*100, got, got-b, b, want)
		}
	}
}

// checkShowsLeaf checks that runsc qdisc show lists netem's 50 ms under
// class 1:20 and that class with classLine.
func checkShowsLeaf(t *testing.T, r *runscRig, s *lab.Sandbox, classLine string) {
	t.Helper()
	out, err := s.QDisc("show")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"qdisc netem 8001: dev " + r.VethN + " parent 1:20 limit 1000 delay 50ms", classLine} {
		if !strings.Contains(out, want) {
			t.Errorf("runsc qdisc show:\n%s\nwant %q", out, want)
		}
	}
}

// TestRunscHTBNetemLeaf: in a runsc sandbox whose htb grafts netem's
// 50 ms on the internet class (qdisc parent 1:20 netem delay 50ms), the
// peer's ping RTT through the internet class is its RTT through the same
// tree without the leaf plus 50 ms, and through the cluster class the
// same as without it, within 1 ms at p50 and p99 (200 pings 10 ms apart
// from each class's peer address). Then bulk TCP in the delayed class (4
// streams, host GSO off) is held to the class's 10 Mbit/s within
// [0.99, 1.005] on the peer's wire, its goodput no higher: the rate
// holds at any delay, as netem's own does (TestRunscNetemRate). Both need
// the leaf to orphan what it holds (netem as a child, orphan.go) and the
// tree's lane to wake for it to the microsecond (htb's shaper leaves):
// without them 0.39 of the rate and 0.6 ms more at p50 were measured. Each stream's send buffer holds the
// streams together to twice what netemRTT keeps in flight, as
// netemRate's: enough to keep the leaf from emptying, not so much that
// its 1000 packets overflow.
func TestRunscHTBNetemLeaf(t *testing.T) {
	r := netemRig(t)
	s := startHTBNetem(t, r, htbNetemScript, nil)
	t.Run("delay", func(t *testing.T) {
		checkShowsLeaf(t, r, s, "class htb 1:20 parent 1:1 leaf 8001: prio 0 rate 10Mbit")
		r0 := netemRig(t) // the same tree without the leaf, gone with the subtest
		startHTBNetem(t, r0, htbNetemTree, nil)
		rtts := classPings(t, classPing{r0, lab.PeerClusterAddr}, classPing{r0, lab.PeerAddr}, classPing{r, lab.PeerClusterAddr}, classPing{r, lab.PeerAddr})
		baseCluster, baseInternet, cluster, internet := rtts[0], rtts[1], rtts[2], rtts[3]
		checkAdded(t, "the internet class", baseInternet, internet, htbNetemDelay)
		checkAdded(t, "the cluster class", baseCluster, cluster, 0)
		for _, q := range []float64{0.5, 0.99} {
			t.Logf("p%.0f: the internet class's RTT less the cluster class's: %v", q*100, measure.Quantile(internet, q)-measure.Quantile(cluster, q))
		}
	})
	t.Run("rate", func(t *testing.T) {
		const streams = 4
		o := measure.Options{Streams: streams, Warmup: 2 * time.Second, Window: 4 * time.Second, SendBuffer: max(8<<10, int(htbNetemRate*netemRTT)/streams)}
		res, err := r.MeasureSandboxHTB(s, []lab.ClassLoad{{Class: 0x10020, Dst: lab.PeerAddr, Streams: streams}}, o)
		if err != nil {
			t.Fatal(err)
		}
		c := res.Classes[0]
		ratio := res.PeerBps / htbNetemRate // the class's streams alone reach the peer
		t.Logf("bulk TCP in the delayed class: the peer's wire %.4g Mbit/s = %.4f of 10 Mbit/s; the class's counter %.4g Mbit/s, goodput %.4g Mbit/s",
			res.PeerBps*8/1e6, ratio, c.Bps*8/1e6, c.Goodput*8/1e6)
		checkRate(t, "class 1:20 under netem's delay, on the wire, of its rate", ratio, 0.99, 1.005)
		if c.Goodput > htbNetemRate {
			t.Errorf("goodput %.4g Mbit/s above the class's rate", c.Goodput*8/1e6)
		}
		if t.Failed() {
			t.Logf("runsc qdisc show:\n%s", res.TC)
		}
	})
}

// TestRunscHTBNetemLeafPodCannotRemove: the netem leaf is the operator's.
// A pod's annotations that would lower its delay or take it away (a leaf
// of its own words, the operator's classes with a shorter leaf, netem,
// fifo or a tbf in htb's place, netem's words over htb) are refused
// before any sandbox runs, the error naming the annotation and what it
// may give instead; so is one that lengthens the delay: a pod gives
// class and filter statements, and leaves a leaf's words unread. The
// operator's whole script less its netem statement is refused at its
// qdisc statement; the operator's classes alone, the internet's lowered
// to 5 Mbit/s, are accepted and merged into the operator's tree, which
// keeps its leaf: runsc qdisc show lists it, and the internet class's
// ping RTT is the cluster class's plus 50 ms within 1 ms at p50 and p99.
func TestRunscHTBNetemLeafPodCannotRemove(t *testing.T) {
	const key = "dev.gvisor.flag.qdisc-htb"
	r := netemRig(t)
	operator := []string{"--qdisc=htb", "--qdisc-htb=" + htbNetemScript, "--gso=false"}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		says        []string
	}{
		{"a shorter delay on the leaf", map[string]string{key: "qdisc parent 1:20 netem delay 10ms"},
			[]string{key, "qdisc parent 1:20 netem delay 10ms", "a leaf's qdisc (qdisc parent 1:20 netem ...) is the operator's", "gives class and filter statements"}},
		{"the leaf without netem", map[string]string{key: "qdisc parent 1:20 fq_codel"},
			[]string{key, "a leaf's qdisc (qdisc parent 1:20 netem ...) is the operator's"}},
		{"the operator's classes with a shorter leaf", map[string]string{key: htbNetemClasses + "; qdisc parent 1:20 netem delay 10ms"},
			[]string{key, "statement 4 (qdisc parent 1:20 netem delay 10ms)", "is the operator's"}},
		{"the operator's script less its netem", map[string]string{key: htbNetemTree},
			[]string{key, "statement 1 (qdisc default 20)", "stay as they are", "change classes"}},
		{"a longer delay on the leaf", map[string]string{key: "qdisc parent 1:20 netem delay 80ms"},
			[]string{key, "qdisc parent 1:20 netem delay 80ms", "is the operator's"}},
		{"netem in htb's place", map[string]string{"dev.gvisor.flag.qdisc": "netem", "dev.gvisor.flag.qdisc-netem": "delay 0ms"},
			[]string{"dev.gvisor.flag.qdisc=\"netem\"", "qdisc=netem over the operator's htb", "--allow-flag-override"}},
		{"fifo in htb's place", map[string]string{"dev.gvisor.flag.qdisc": "fifo"},
			[]string{"dev.gvisor.flag.qdisc=\"fifo\"", "qdisc=fifo over the operator's htb", "--allow-flag-override"}},
		{"a tbf in htb's place", map[string]string{"dev.gvisor.flag.qdisc": "tbf", "dev.gvisor.flag.qdisc-tbf-rate": "5mbit", "dev.gvisor.flag.qdisc-tbf-burst": "12500"},
			[]string{"dev.gvisor.flag.qdisc,", "--qdisc-htb gives htb's classes and needs --qdisc=htb"}},
		{"netem's words over htb", map[string]string{"dev.gvisor.flag.qdisc-netem": "delay 0ms"},
			[]string{"dev.gvisor.flag.qdisc-netem", "the operator does not run netem there (--qdisc=htb)", "--allow-flag-override"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.checkRefused(t, lab.SandboxOptions{Runsc: r.runsc, Flags: operator, Annotations: tc.annotations}, tc.says...)
		})
	}
	t.Run("the operator's classes alone", func(t *testing.T) {
		pod := strings.Replace(htbNetemClasses, "classid 1:20 rate 10mbit", "classid 1:20 rate 5mbit", 1)
		s := startHTBNetem(t, r, htbNetemScript, map[string]string{key: pod})
		checkShowsLeaf(t, r, s, "class htb 1:20 parent 1:1 leaf 8001: prio 0 rate 5Mbit")
		rtts := classPings(t, classPing{r, lab.PeerClusterAddr}, classPing{r, lab.PeerAddr})
		checkAdded(t, "the internet class over the cluster class", rtts[0], rtts[1], htbNetemDelay)
	})
}
