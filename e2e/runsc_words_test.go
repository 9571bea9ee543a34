package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestRunscWordsFlags: runsc's words flags, tc's words in one flag, in a
// real sandbox, measured in the bytes that reach the other end. The
// operator's --qdisc=tbf --qdisc-tbf="rate 20mbit burst 32k latency 25ms"
// (runsc's default host GSO on) holds 4 iperf streams from the sandbox to
// [0.97, 1.01] of 20 Mbit/s on the wire at the peer, TestRunscShaping's
// bound; a dev.gvisor.flag.qdisc-tbf annotation of "rate 10mbit ..." under
// it shapes the sandbox to 10 Mbit/s; one of "rate 40mbit ..." is refused
// as a rate annotation above the operator's is (TestRunscAnnotations):
// runsc run exits non-zero naming the annotation, the knob, the operator's
// ceiling and --allow-flag-override, and no sandbox runs nor any packet
// reaches the peer. --qdisc-ingress=tbf --qdisc-ingress-tbf="rate 20mbit
// burst 32k limit 64k" with --gso=false holds 4 iperf streams from the
// peer's kernel to iperf in the sandbox to [0.97, 1.01] of 20 Mbit/s as
// TestRunscIngress counts it (what the sandbox's TCP acknowledged, each
// segment with its headers), and the shaper's own count agrees within 2%;
// with host GSO on, those words are refused as the knob's flag is (the
// receive path cannot cut a 64 KiB packet to a 32 KiB bucket: docs/runsc.md,
// Host GSO). Each sandbox's boot log describes the tbf the words (and the
// annotation) made. Five sandboxes, three measured for 2 + 5 s: about 35 s.
func TestRunscWordsFlags(t *testing.T) {
	operator := []string{"--qdisc=tbf", "--qdisc-tbf=rate 20mbit burst 32k latency 25ms"}
	key := runscflags.AnnotationPrefix + "qdisc-tbf"
	const ingressWords = "rate 20mbit burst 32k limit 64k"
	for _, tc := range []struct {
		name        string
		flags       []string
		annotations map[string]string
		// ingress measures what the sandbox receives (from the peer), not
		// what it sends.
		ingress bool
		// rate is what the sandbox must be held to, bytes/s; 0: runsc
		// must refuse to start it, its error saying each of refusal.
		rate    float64
		refusal []string
		// log is what the boot log's "Enabling ... on NIC: " line must
		// describe the shaper as, as tc qdisc show does.
		log string
	}{
		{name: "egress words", flags: operator, rate: 20 * mbit,
			log: "tbf rate 20Mbit burst 32Kb lat 25ms"},
		{name: "annotation tightens", flags: operator, annotations: map[string]string{key: "rate 10mbit burst 32k latency 25ms"}, rate: 10 * mbit,
			log: "tbf rate 10Mbit burst 32Kb lat 25ms"},
		{name: "annotation loosens", flags: operator, annotations: map[string]string{key: "rate 40mbit burst 32k latency 25ms"},
			refusal: []string{key, "rate 40mbit", "--qdisc-tbf-rate=5000000", "exceeds the operator's ceiling --qdisc-tbf-rate=2500000 bytes/s (20Mbit)", "--allow-flag-override"}},
		{name: "ingress words", flags: []string{"--qdisc-ingress=tbf", "--qdisc-ingress-tbf=" + ingressWords, "--gso=false"}, ingress: true, rate: 20 * mbit,
			log: "tbf rate 20Mbit burst 32Kb lat 13.1ms" /* limit 64k: (64k-32k) / 20 Mbit/s */},
		{name: "ingress words host GSO", flags: []string{"--qdisc-ingress=tbf", "--qdisc-ingress-tbf=" + ingressWords},
			refusal: []string{"creating ingress shaper", "--qdisc-ingress-burst: burst 32768 bytes is smaller than the lower link's largest host-GSO packet", "raise burst to at least 65550 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRunscRig(t)
			if tc.rate == 0 {
				r.checkRefused(t, lab.SandboxOptions{Runsc: r.runsc, Flags: tc.flags, Annotations: tc.annotations}, tc.refusal...)
				return
			}
			s := r.start(t, lab.SandboxOptions{Flags: append(slices.Clone(tc.flags), "--metric-server="+lab.MetricServer), Annotations: tc.annotations})
			o := measure.Options{Streams: 4, Warmup: warmup, Window: measureFor}
			measureIt, what := r.MeasureSandbox, "on-wire at the peer"
			if tc.ingress {
				measureIt, what = r.MeasureSandboxIngress, "delivered to the sandbox"
			}
			res, err := measureIt(s, o)
			if err != nil {
				t.Fatal(err)
			}
			ratio := res.WireBps / tc.rate
			t.Logf("%s %.2f Mbit/s (%.4f of %.0f Mbit/s; %d bytes in %v), sandbox CPU %.2f s/GB",
				what, res.WireBps*8/1e6, ratio, tc.rate*8/1e6, res.WireBytes, res.Elapsed.Round(time.Millisecond), res.CPUPerGB())
			checkRate(t, what+" of the rate", ratio, 0.97, 1.01)
			if tc.ingress {
				// As TestRunscIngress: the shaper's tc -s Sent over the
				// peer's count of the same span.
				shaper := float64(res.ShaperBytes) / float64(res.ShaperPeerBytes)
				t.Logf("the shaper counted %d bytes in the window: %.4f of what the peer had delivered", res.ShaperBytes, shaper)
				checkRate(t, "the shaper's count (tc -s Sent) of what the peer had delivered", shaper, 0.98, 1.02)
			}
			log := bootLog(t, s)
			enabling := fmt.Sprintf("Enabling qdisc on %q: ", r.VethN)
			if tc.ingress {
				enabling = fmt.Sprintf("Enabling ingress shaping on %q: ", r.VethN)
			}
			i := strings.Index(log, enabling)
			if i < 0 {
				t.Fatalf("boot log does not say %q; it ends:\n%s", enabling, lab.LastLines(log, 15))
			}
			line, _, _ := strings.Cut(log[i:], "\n")
			t.Logf("boot log: %s", line)
			if !strings.Contains(line, tc.log) {
				t.Errorf("boot log says %q; want the shaper described as %q", line, tc.log)
			}
			if tc.ingress {
				return // the shaper's count is checked above, from its metric
			}
			m := sentLine.FindStringSubmatch(log)
			if m == nil {
				t.Fatalf("boot log has no tc -s statistics; it ends:\n%s", lab.LastLines(log, 15))
			}
			if sent, _ := strconv.ParseUint(m[1], 10, 64); sent < res.WireBytes {
				t.Errorf("tc -s says %s bytes sent, fewer than the %d the peer received in the window", m[1], res.WireBytes)
			}
		})
	}
}
