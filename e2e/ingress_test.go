package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/runsc-flags"
)

// TestIngressAgainstTheKernel shapes what the netstack receives, 4 bulk TCP
// streams from the peer's kernel, with netqdisc's ingress shaper at 10 and
// 100 Mbit/s (burst 10 ms of rate, latency 25 ms, as the CNI bandwidth
// plugin's), and the same traffic into the kernel sender's namespace with
// Linux's ingress qdisc, mirred and an ifb with tbf: what passes the shaper
// must be within [0.97, 1.01] of the rate in L2 bytes, and the median ping
// RTT from the peer under the load at most the latency + the idle RTT +
// 15 ms. (A ping the shaper tail-drops under a kernel TCP sender, which
// fills any queue to its limit, is logged for both.) Under -race the
// 100 Mbit/s netstack case skips: the receiving netstack, not the shaper,
// is then the bottleneck.
func TestIngressAgainstTheKernel(t *testing.T) {
	l := newLab(t)
	const latency = 25 * time.Millisecond
	o := measure.Options{Streams: 4, Warmup: warmup, Window: measureFor, PingInterval: 100 * time.Millisecond}
	for _, tc := range []struct {
		rate, burst uint64
	}{{10 * mbit, 12500}, {100 * mbit, 125000}} {
		cfg, err := lab.FromFlags([]string{fmt.Sprintf("--qdisc-ingress-rate=%d", tc.rate), fmt.Sprintf("--qdisc-ingress-burst=%d", tc.burst), "--qdisc-ingress-latency=25ms"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, who := range []struct {
			name string
			run  func() (measure.Result, error)
		}{
			{"netqdisc", func() (measure.Result, error) {
				return l.MeasureNetstackIngress(cfg.NewQueueingDiscipline, lab.IngressFrom(cfg), o)
			}},
			{"kernel", func() (measure.Result, error) { return l.MeasureKernelIngress(tc.rate, tc.burst, latency, o) }},
		} {
			t.Run(fmt.Sprintf("%dmbit/%s", tc.rate/mbit, who.name), func(t *testing.T) {
				if raceDetector && who.name == "netqdisc" && tc.rate > 10*mbit {
					t.Skip("100 Mbit/s into the netstack is CPU-bound under -race on 2 cores (it measured 0.87 of the rate: the race detector's cost, not the shaper's): measured without -race (.ci/run runs go test ./e2e/ too)")
				}
				r, err := who.run()
				if err != nil {
					t.Fatal(err)
				}
				ratio := r.WireBps / float64(tc.rate)
				t.Logf("%s: shaped %.3f Mbit/s = %.4f of the rate; RTT idle %v, loaded p50 %v p99 %v; %d/%d pings answered",
					who.name, r.WireBps*8/1e6, ratio, r.IdleRTT, r.RTT(0.5), r.RTT(0.99), len(r.RTTs), r.PingsSent)
				checkRate(t, "shaped rate of the configured rate", ratio, 0.97, 1.01)
				if limit := latency + r.IdleRTT + 15*time.Millisecond; r.RTT(0.5) > limit {
					t.Errorf("median RTT under load %v; want at most %v (latency + idle + 15ms)", r.RTT(0.5), limit)
				}
				if r.PingsSent == 0 {
					t.Errorf("no ping sent")
				} else if r.PingsLost() != 0 {
					t.Logf("%s lost %d of %d pings", who.name, r.PingsLost(), r.PingsSent)
				}
			})
		}
	}
}

// TestIngressRefusals: a bad receive-direction value, as a flag, a
// dev.gvisor.flag annotation or a Kubernetes bandwidth annotation, is an
// error that names it, and no shaper is built.
func TestIngressRefusals(t *testing.T) {
	operator := []string{"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=12500"}
	for _, tc := range []struct {
		name        string
		args        []string
		annotations map[string]string
		says        []string
	}{
		{"unparsable flag", []string{"--qdisc-ingress-rate=fast"}, nil, []string{"qdisc-ingress-rate", "fast"}},
		{"burst too small for the link", []string{"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=1000"}, nil, []string{"--qdisc-ingress-burst"}},
		{"zero by annotation", operator, map[string]string{runscflags.AnnotationPrefix + "qdisc-ingress-rate": "0"}, []string{"dev.gvisor.flag.qdisc-ingress-rate", "0 would unset"}},
		{"above the ceiling by annotation", operator, map[string]string{runscflags.AnnotationPrefix + "qdisc-ingress-rate": "20mbit"}, []string{"dev.gvisor.flag.qdisc-ingress-rate", "--allow-flag-override"}},
		{"unparsable Kubernetes bandwidth", nil, map[string]string{runscflags.AnnotationKubeIngress: "10mbit"}, []string{runscflags.AnnotationKubeIngress, "10M, 1G or 500k"}},
		{"zero Kubernetes bandwidth", nil, map[string]string{runscflags.AnnotationKubeIngress: "0"}, []string{runscflags.AnnotationKubeIngress, "out of range"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			var err error
			if cfg, ferr := lab.FromFlags(tc.args, tc.annotations); ferr != nil {
				err = ferr
			} else {
				var n *lab.Netstack
				n, err = l.StartNetstackOn(cfg.NewQueueingDiscipline, lab.IngressFrom(cfg))
				if err == nil {
					n.Close()
				}
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}
