package e2e

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
)

// TestRunscCake: a sandbox started with --qdisc=cake and cake's words
// shows cake in `runsc qdisc show`; `runsc qdisc change
// --qdisc-cake-bandwidth=10mbit` changes its bandwidth in place (as tc
// qdisc change ... cake bandwidth does), keeping the rest of cake; the sandbox then
// sends at 10 Mbit/s on the wire (cake charges each frame's length, what
// the peer's veth counts), and runsc export-metrics counts what the peer
// received in cake's tins (runsc_network_qdisc_cake_tin_sent_bytes).
func TestRunscCake(t *testing.T) {
	if raceDetector {
		t.Skip("the sandbox is the same runsc either way: measured once, in the run without -race")
	}
	r := newRunscRig(t)
	s := r.start(t, lab.SandboxOptions{Flags: []string{"--qdisc=cake", "--qdisc-cake=bandwidth 20mbit dual-dsthost", "--gso=false", "--metric-server=" + lab.MetricServer}})
	out, err := s.QDisc("show")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "qdisc cake bandwidth 20Mbit diffserv3 dual-dsthost") || !strings.Contains(out, "thresh") {
		t.Fatalf("runsc qdisc show:\n%s\nwant cake bandwidth 20Mbit with dual-dsthost, and its statistics per tin", out)
	}
	change(t, s, []string{"--qdisc-cake-bandwidth=10mbit"}, "qdisc cake bandwidth 10Mbit diffserv3 dual-dsthost")
	res, err := r.MeasureSandbox(s, measure.Options{Streams: 4, Warmup: time.Second, Window: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ratio := res.WireBps / (10 * mbit)
	t.Logf("cake changed from 20 to 10 Mbit/s: on-wire %.3f Mbit/s = %.4f of 10 Mbit/s", res.WireBps*8/1e6, ratio)
	checkRate(t, "on-wire of cake's bandwidth", ratio, 0.99, 1.01)
	m, err := exec.Command(r.runsc, "--root", s.Root(), "--metric-server="+lab.MetricServer, "export-metrics", s.ID()).CombinedOutput()
	if err != nil {
		t.Fatalf("runsc export-metrics: %v: %s", err, m)
	}
	var sent uint64
	for _, v := range regexp.MustCompile(`(?m)^runsc_network_qdisc_cake_tin_sent_bytes\{[^}]*\} (\d+)`).FindAllStringSubmatch(string(m), -1) {
		n, _ := strconv.ParseUint(v[1], 10, 64)
		sent += n
	}
	if sent < res.WireBytes {
		t.Errorf("runsc_network_qdisc_cake_tin_sent_bytes sum to %d, fewer than the %d bytes the peer received in the window", sent, res.WireBytes)
	}
}
