package e2e

import (
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

// ingressHTBScript is the receive path's classes of these tests: a
// 1 Gbit/s root, the cluster class 1:10 (rate 980 Mbit/s, ceil 1 Gbit/s)
// for what comes from 10.77.1.0/24 (on ingress a rule's dst matches the
// sender), and the internet class 1:20 at 20 Mbit/s, the default.
const ingressHTBScript = "qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:10 rate 980mbit ceil 1gbit; " +
	"class parent 1:1 classid 1:20 rate 20mbit; filter dst 10.77.1.0/24 classid 1:10"

// unshapedFactor is how far above the internet class's 20 Mbit/s a
// download from the cluster must get to count as unshaped. It is not a
// rate claim: the cluster class may take up to 1 Gbit/s, but what the
// receiver reaches on 2 cores shared with both senders is its CPU's to
// say. 5x (100 Mbit/s) is far above any 20 Mbit/s cap a misclassified
// download would be held to, and well below what an unshaped one gets.
const unshapedFactor = 5

// TestHTBIngressByClass: htb classes on what the netstack receives, from
// runsc's --qdisc-ingress-htb: a download from the peer, which no filter
// places in the cluster class (its rules match the sender: 10.77.1.0/24,
// not the peer's 10.77.0.2), is held to the internet class's 20 Mbit/s on
// the wire, within [0.99, 1.01], counted at the netstack's NIC.
func TestHTBIngressByClass(t *testing.T) {
	l := newLab(t)
	cfg, err := lab.FromFlags([]string{"--qdisc-ingress-htb=" + ingressHTBScript}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.MeasureNetstackIngress(cfg.NewQueueingDiscipline, lab.IngressFrom(cfg), measure.Options{Streams: 4, Warmup: warmup, Window: measureFor, PingInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ratio := r.WireBps / float64(20*mbit)
	t.Logf("received %.3f Mbit/s = %.4f of the internet class's 20 Mbit/s; RTT idle %v, loaded p50 %v", r.WireBps*8/1e6, ratio, r.IdleRTT, r.RTT(0.5))
	checkRate(t, "download from the internet of its class's rate", ratio, 0.99, 1.01)
}

// ingressLoads are the downloads of an htb ingress case: 4 streams from
// the cluster host (in a namespace of its own, behind the peer), from the
// peer (the internet), or both at once.
func ingressLoads(cluster, internet bool) []lab.IngressLoad {
	var l []lab.IngressLoad
	if internet {
		l = append(l, lab.IngressLoad{Class: lab.InternetClass, From: lab.PeerAddr, Streams: 4})
	}
	if cluster {
		l = append(l, lab.IngressLoad{Class: lab.ClusterClass, From: lab.PeerClusterAddr, Streams: 4})
	}
	return l
}

// TestHTBIngressTwoPeers: the same classes with two senders, the peer
// (the internet) and a cluster host in a namespace of its own, whose
// address the filter matches. Both downloading at once, the internet
// class sends the stack within [0.99, 1.01] of its 20 Mbit/s (its class
// counter, exact) while the cluster's download is not held to it: its
// class gets more than unshapedFactor times the internet class's rate.
// Alone, the cluster's download gets more than unshapedFactor times
// 20 Mbit/s. Each download's own rate on the wire (what its sender's TCP
// had delivered) is logged beside its class's, with how often each
// class's queue was seen empty. The netstack's packet socket has runsc's
// 4 MB receive buffer: with the kernel's default the socket, not the
// classes, dropped what the receiver could not keep up with, both
// downloads alike (the internet class then got 0.63 of its rate). Seen
// on 2 shared cores (docs/classes.md has all the runs): 0.9954-1.0013
// when the machine was not too busy, down to 0.80 when it was (load
// average 6-10), 0.28 when the test process itself was starved; the
// cluster's download 14-48x the internet class's.
func TestHTBIngressTwoPeers(t *testing.T) {
	l := newLab(t)
	cfg, err := lab.FromFlags([]string{"--qdisc-ingress-htb=" + ingressHTBScript}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name              string
		cluster, internet bool
	}{
		{"both busy", true, true},
		{"cluster alone", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := l.MeasureNetstackIngressHTB(cfg, ingressLoads(tc.cluster, tc.internet), htbOptions)
			if err != nil {
				t.Fatal(err)
			}
			checkIngressHTB(t, r, 20*mbit, true)
			t.Logf("the netstack's NIC received %.2f Mbit/s in all; its packet socket dropped %d frames", r.RxBps*8/1e6, r.SocketDrops)
			if t.Failed() {
				t.Logf("the ingress classes at the end:\n%s", r.TC)
			}
		})
	}
}

// checkIngressHTB logs each download of r and asserts: the internet
// class within [0.99, 1.01] of internet (its class counter if byClass,
// else its sender's delivered bytes on the wire), and the cluster's above
// unshapedFactor times the internet class's rate when both are busy, or
// times internet alone.
func checkIngressHTB(t *testing.T, r lab.IngressHTBResult, internet float64, byClass bool) {
	t.Helper()
	internetBps := internet
	for _, c := range r.Loads {
		t.Logf("from %s, class %s: %.3f Mbit/s at the class, %.3f Mbit/s delivered on the wire, %d bytes sent again", c.From, classify.ClassID(c.Class), c.Bps*8/1e6, c.WireBps*8/1e6, c.RetransBytes)
		if c.Samples > 0 {
			t.Logf("class %s's queue was empty at %d of %d looks, 10 ms apart", classify.ClassID(c.Class), c.Empty, c.Samples)
		}
		if c.Class == lab.InternetClass {
			got, at := c.WireBps, "on the wire"
			if byClass {
				got, at = c.Bps, "at its class counter"
			}
			checkRate(t, "download from the internet "+at+" of its class's rate", got/internet, 0.99, 1.01)
			internetBps = got
		}
	}
	for _, c := range r.Loads {
		if c.Class != lab.ClusterClass {
			continue
		}
		t.Logf("the cluster's download: %.1f Mbit/s = %.1fx the internet class's %.3f", c.Bps*8/1e6, c.Bps/internetBps, internetBps*8/1e6)
		switch {
		case c.Bps > unshapedFactor*internetBps:
		case raceDetector:
			t.Logf("the cluster's download %.1f Mbit/s, not above %dx %.3f Mbit/s: not asserted under -race (the receiving netstack is CPU-bound there; the run without -race asserts it)", c.Bps*8/1e6, unshapedFactor, internetBps*8/1e6)
		default:
			t.Errorf("the cluster's download %.1f Mbit/s at its class: want above %dx %.3f Mbit/s, unshaped", c.Bps*8/1e6, unshapedFactor, internetBps*8/1e6)
		}
	}
}

// runscIngressHTBOptions are TestHTBIngressInRunsc's: TestRunscIngress's
// 5 s window (the senders' delivered bytes follow the sandbox's ACKs,
// which a loaded machine delays by tens of ms: 1% of 3 s is 30 ms).
var runscIngressHTBOptions = measure.Options{Warmup: warmup, Window: measureFor}

// TestHTBIngressInRunsc: a runsc sandbox (runsc/build.sh's) started with
// --qdisc-ingress-htb of the same classes and --gso=false (MTU-sized
// frames both ways, as TestRunscIngress's flags case), iperf's server in
// it. The download from the peer (the internet), alone and with the
// cluster host's at once, is within [0.99, 1.01] of 20 Mbit/s on the wire,
// as TestRunscIngress counts it: what the sender's TCP had delivered
// (PeerDeliveredBytes); the class counters `runsc qdisc show` prints are
// logged beside it. The cluster's download, alone and with the peer's, is
// above unshapedFactor times the internet class's rate. Seen on 2 shared
// cores: 0.9960-1.0095 in 8 of 12 cases, 0.87-0.96 in 3 and 0.65 once
// when the machine was busiest (load average 6-10); the cluster's
// download 13-34x. It skips without a runsc binary.
func TestHTBIngressInRunsc(t *testing.T) {
	r := newRunscRig(t)
	for _, tc := range []struct {
		name              string
		cluster, internet bool
	}{
		{"internet alone", false, true},
		{"both busy", true, true},
		{"cluster alone", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := r.StartIngressHTBSandbox(lab.SandboxOptions{Runsc: r.runsc, Flags: []string{"--qdisc-ingress-htb=" + ingressHTBScript, "--gso=false"}})
			if err != nil {
				t.Fatal(err)
			}
			r.sandboxes = append(r.sandboxes, s)
			r.pids = append(r.pids, s.Pids()...)
			defer s.Close()
			res, err := r.MeasureSandboxIngressHTB(s, ingressLoads(tc.cluster, tc.internet), runscIngressHTBOptions)
			if err != nil {
				t.Fatal(err)
			}
			checkIngressHTB(t, res, 20*mbit, false)
			t.Logf("the senders delivered %.2f Mbit/s in all", res.RxBps*8/1e6)
			if t.Failed() {
				t.Logf("runsc qdisc show, the ingress classes at the end:\n%s", res.TC)
			}
		})
	}
}
