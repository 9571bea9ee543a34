package e2e

import (
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
)

// TestHTBIngressByClass: htb classes on what the netstack receives, from
// runsc's --qdisc-ingress-htb: a download from the peer, which no filter
// places in the cluster class (its rules match the sender: 10.77.1.0/24,
// not the peer's 10.77.0.2), is held to the internet class's 20 Mbit/s on
// the wire, within [0.99, 1.01], counted at the netstack's NIC.
func TestHTBIngressByClass(t *testing.T) {
	l := newLab(t)
	script := "qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:10 rate 980mbit ceil 1gbit; " +
		"class parent 1:1 classid 1:20 rate 20mbit; filter dst 10.77.1.0/24 classid 1:10"
	cfg, err := lab.FromFlags([]string{"--qdisc-ingress-htb=" + script}, nil)
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
