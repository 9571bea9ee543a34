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
// received in cake's tins (runsc_network_qdisc_cake_tin_sent_bytes), and
// the receive path's cake the peer's ACKs in its own.
func TestRunscCake(t *testing.T) {
	if raceDetector {
		t.Skip("the sandbox is the same runsc either way: measured once, in the run without -race")
	}
	r := newRunscRig(t)
	s := r.start(t, lab.SandboxOptions{Flags: []string{"--qdisc=cake", "--qdisc-cake=bandwidth 20mbit dual-dsthost", "--qdisc-ingress-cake=bandwidth 1gbit", "--gso=false", "--metric-server=" + lab.MetricServer}})
	out, err := s.QDisc("show")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "root refcnt 2 bandwidth 20Mbit diffserv3 dual-dsthost") || !strings.Contains(out, "thresh") {
		t.Fatalf("runsc qdisc show:\n%s\nwant cake bandwidth 20Mbit with dual-dsthost, and its statistics per tin", out)
	}
	change(t, s, []string{"--qdisc-cake-bandwidth=10mbit"}, "root refcnt 2 bandwidth 10Mbit diffserv3 dual-dsthost")
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
	// The receive path's cake (the qdisc an ingress shaper holds) counts
	// the peer's ACKs in its tins.
	var received uint64
	for _, v := range regexp.MustCompile(`(?m)^runsc_network_ingress_cake_tin_sent_bytes\{[^}]*\} (\d+)`).FindAllStringSubmatch(string(m), -1) {
		n, _ := strconv.ParseUint(v[1], 10, 64)
		received += n
	}
	if received == 0 {
		t.Errorf("runsc_network_ingress_cake_tin_sent_bytes sum to 0: the receive path's cake counted none of the peer's ACKs:\n%s", m)
	}
}

// TestRunscCakeIrtt: irtt, the CAKE paper's probe, as the sparse flow
// under load: its server in a runsc sandbox shaped by cake bandwidth
// 100mbit, its client on the peer sending a probe every 10 ms, while the
// sandbox sends 4 bulk TCP streams to the peer. Each reply leaves through
// cake beside the bulk: the probe's RTT p99 within 5 ms of its idle
// median, with the wire at 0.95 or more of the bandwidth (issue 29), and
// no probe lost.
func TestRunscCakeIrtt(t *testing.T) {
	if raceDetector {
		t.Skip("the sandbox is the same runsc either way: measured once, in the run without -race")
	}
	if _, err := exec.LookPath("irtt"); err != nil {
		t.Skip("irtt is not installed (Debian's irtt; .ci/run installs it)")
	}
	r := newRunscRig(t)
	s := r.start(t, lab.SandboxOptions{Flags: []string{"--qdisc=cake", "--qdisc-cake=bandwidth 100mbit", "--gso=false"}})
	res, err := r.MeasureSandboxIrtt(s, 10*time.Millisecond, measure.Options{Streams: 4, Warmup: time.Second, Window: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ratio := res.WireBps / (100 * mbit)
	p50, p99 := res.LoadedAboveIdle(0.5), res.LoadedAboveIdle(0.99)
	t.Logf("cake 100mbit in runsc: on the wire %.2f Mbit/s (%.4f); irtt idle median %v, under load %v (p50) %v (p99) above idle; %d of %d probes lost",
		res.WireBps*8/1e6, ratio, measure.Quantile(res.Idle, 0.5), p50, p99, res.Lost, res.Sent)
	checkRate(t, "on the wire, of the bandwidth", ratio, 0.95, 1.005)
	if p99 > 5*time.Millisecond {
		t.Errorf("irtt RTT p99 %v above idle under load; want at most 5 ms", p99)
	}
	if res.Sent == 0 || res.Lost != 0 {
		t.Errorf("%d of %d irtt probes lost", res.Lost, res.Sent)
	}
}
