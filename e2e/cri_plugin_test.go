package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestCRIBandwidthPlugin: the anchor, and double shaping, with the CNI
// bandwidth plugin chained after the bridge (CRIOptions.BandwidthPlugin).
// containerd hands it a pod's kubernetes.io/*-bandwidth with a burst of
// 2^32-1 bits; it shapes on the host side of the pod's veth: a tbf on the
// veth for what the pod receives, an ifb with a tbf for what it sends
// (25 ms latency). Each case streams for 10 s and logs the four figures.
//
// runc, the anchor: the plugin's bucket (512 MiB at 20M; at 10M its time in
// kernel ticks overflows tc's 32-bit field and wraps to 193 MB) lets the
// stream's start through unshaped: the first second carries over 10 s of
// the rate, the average is several times the steady rate, and the steady
// rate is near the annotation (goodput about 0.96: the tbf charges each
// segment with its headers).
// Senders have the 16 KiB send buffer of the runsc tests, and once the
// default (the measurement: the plugin's queue holds all of it).
//
// runsc with netqdisc and the plugin (double shaping): the two tbfs are in
// series and the stricter holds. netqdisc holds the stream to the rate
// from the first byte, so the plugin's tbf holds nothing (overlimits and
// drops 0) and the figures are netqdisc's (checkShaped). What the pod
// sends and what it receives both count alike (each segment with its
// headers; netqdisc's ingress shaper cuts a GRO/GSO packet that stands for
// more than its bucket, as Linux's tbf_segment does, rather than charging
// it the bucket, which counted 4.4% less and drained the plugin's bucket):
// the plugin's bucket never drains. Meanwhile the pair costs a second
// queue on the host and, for what pods send, an ifb redirect per packet,
// for nothing.
func TestCRIBandwidthPlugin(t *testing.T) {
	c := newCRI(t, func(o *lab.CRIOptions) { o.BandwidthPlugin = true })
	small := []string{"-sndbuf", "16384"} // as TestCRIEgressBandwidth's and TestCRIIngressBandwidth's
	for i, tc := range []struct {
		name, handler string
		ingress       bool
		annotation    string
		rate          float64
		senderArgs    []string
	}{
		{"runc egress 10M", "runc", false, "10M", 10e6, small},
		{"runc egress 10M, default send buffer", "runc", false, "10M", 10e6, nil},
		{"runc ingress 20M", "runc", true, "20M", 20e6, small},
		{"runsc egress 10M and the plugin", "runsc", false, "10M", 10e6, small},
		{"runsc ingress 20M and the plugin", "runsc", true, "20M", 20e6, small},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := runscflags.AnnotationKubeEgress
			if tc.ingress {
				key = runscflags.AnnotationKubeIngress
			}
			p := &lab.Pod{Name: fmt.Sprintf("plugin-%d", i), RuntimeHandler: tc.handler, Annotations: map[string]string{key: tc.annotation}}
			var qs []lab.CRITBF
			r := criStream(t, c, p, lab.CRIStream{Ingress: tc.ingress, For: 10 * time.Second, SenderArgs: tc.senderArgs},
				func(string) { qs = pluginTBFs(t, c) })
			for _, q := range qs {
				t.Logf("the plugin's %s: sent %d bytes (%.4f of the sink's), %d pkt, dropped %d, overlimits %d", q.Line, q.Bytes, float64(q.Bytes)/float64(r.Bytes), q.Packets, q.Dropped, q.Overlimits)
			}
			if len(qs) != 1 {
				t.Fatalf("%d tbf qdiscs in the CRI's namespace; want the plugin's one", len(qs))
			}
			if tc.handler == "runc" {
				checkPluginShaped(t, r, tc.rate, qs[0])
				return
			}
			checkShaped(t, r, tc.rate, kubeBurst, 0.97)
			prefix, kind := "Enabling qdisc on", "qdisc"
			if tc.ingress {
				prefix, kind = "Enabling ingress shaping on", "ingress"
			}
			sent := shaperSent(checkBootLine(t, c, "runsc", r.PodID, prefix, "tbf rate "+tc.annotation+"bit"), kind)
			q := qs[0]
			if q.Overlimits != 0 || q.Dropped != 0 {
				t.Errorf("the plugin's tbf held packets behind netqdisc's (overlimits %d, dropped %d); want none", q.Overlimits, q.Dropped)
			}
			// The plugin's bucket drains by what it counts above netqdisc.
			if sent == 0 {
				t.Fatalf("no statistics of netqdisc's %s in the boot log", kind)
			}
			excess := float64(q.Bytes)/float64(sent) - 1
			t.Logf("the plugin counted %d bytes, netqdisc %d: %+.4f", q.Bytes, sent, excess)
			if excess > 0.002 {
				t.Errorf("the plugin counted %.4f of what netqdisc charged; want both to count each segment with its headers (at most 0.002 apart)", 1+excess)
			}
			if excess > 0.001 {
				t.Logf("at the full rate the plugin's bucket of %d bytes would empty after %.0f minutes, and then hold the pod to %.4f of netqdisc's rate",
					q.Burst(), float64(q.Burst())*8/(excess*tc.rate)/60, 1/(1+excess))
			}
		})
	}
}

// checkPluginShaped asserts what the plugin alone makes of a stream: its
// unshaped start (a first second above 10 seconds of the rate; an average
// from the first byte at least 3 times the steady rate), a steady rate
// within [0.90, 1.01] of the rate, and a tbf that did hold packets.
func checkPluginShaped(t *testing.T, r lab.CRIStreamResult, rate float64, q lab.CRITBF) {
	t.Helper()
	logFigures(t, r, rate)
	if min := int64(10 * rate / 8); r.FirstSecondBytes() < min {
		t.Errorf("the first second carried %d bytes; the plugin's burst should let more than 10 s of the rate (%d) through", r.FirstSecondBytes(), min)
	}
	if steady := r.SteadyBps(2); r.GoodputBps < 3*steady {
		t.Errorf("average from the first byte %.2f Mbit/s, steady %.2f: want the average at least 3 times the steady rate", r.GoodputBps/1e6, steady/1e6)
	}
	checkRate(t, "steady goodput of the rate", r.SteadyBps(2)/rate, 0.90, 1.01)
	if q.Overlimits == 0 {
		t.Errorf("the plugin's tbf never held a packet: %s", q.Line)
	}
}

// pluginTBFs lists the tbf qdiscs in the CRI's namespace (CRI.TBFs).
func pluginTBFs(t *testing.T, c *lab.CRI) []lab.CRITBF {
	t.Helper()
	qs, err := c.TBFs()
	if err != nil {
		t.Fatal(err)
	}
	return qs
}
