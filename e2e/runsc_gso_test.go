package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
)

// TestRunscGSONoSpuriousRetransmissions: one TCP stream from a sandbox
// shaped at 100 Mbit/s (burst 128 KiB, latency 50 ms: docs/docker.md's
// example) with host GSO on, runsc's default. gVisor's tail loss probe
// used to fire while the probed segment still waited in the tbf for its
// tokens (a 64 KiB packet waits 5.2 ms; the stream's SRTT was under 1
// ms), so the receiver got the segment twice and D-SACKed the copy:
// 1500-2900 times in 8 s, 3-7% of the goodput, each a spurious recovery
// that cut the window. runsc/patches' TCP patch holds the probe while the
// segment is still queued, as Linux's skb_still_in_host_queue does: at
// most 50 D-SACKs now (0-11 measured), and on-wire at most 1.01 of the
// rate.
func TestRunscGSONoSpuriousRetransmissions(t *testing.T) {
	r := newRunscRig(t)
	s := r.start(t, lab.SandboxOptions{Flags: []string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=128kb", "--qdisc-tbf-latency=50ms", "--metric-server=" + lab.MetricServer}})
	before, err := TCPExt(r.NSP, "TCPDSACKOldSent")
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.MeasureSandbox(s, measure.Options{Streams: 1, Warmup: warmup, Window: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	after, err := TCPExt(r.NSP, "TCPDSACKOldSent")
	if err != nil {
		t.Fatal(err)
	}
	spurious, err := s.Metric("netstack_tcp_spurious_recovery")
	if err != nil {
		t.Fatal(err)
	}
	ratio := res.WireBps / (100 * mbit)
	t.Logf("on-wire %.2f Mbit/s (%.4f of the rate); the receiver D-SACKed %d segments; the sandbox counted %d spurious recoveries; CPU %.1f s/GB", res.WireBps*8/1e6, ratio, after-before, spurious, res.CPUPerGB())
	// One stream with a large send buffer fills the tbf's queue and takes
	// tail drops, so its rate depends on TCP's loss recovery (0.86-1.0007
	// measured); the shaper's accuracy with GSO on is TestRunscShaping's.
	// What the shaper sends is never above the rate.
	checkRate(t, "on-wire of the rate", ratio, 0, 1.01)
	if d := after - before; d > 50 {
		t.Errorf("the receiver D-SACKed %d segments (TcpExtTCPDSACKOldSent): the sandbox resent segments it had not lost", d)
	}
}

// TCPExt reads one TcpExt counter of /proc/net/netstat in namespace ns.
func TCPExt(ns, name string) (uint64, error) {
	out, err := lab.Run(ns, "cat", "/proc/net/netstat")
	if err != nil {
		return 0, err
	}
	lines := strings.Split(out, "\n")
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "TcpExt:" || len(values) != len(names) {
			continue
		}
		for k, n := range names {
			if n == name {
				return strconv.ParseUint(values[k], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no TcpExt %s in %s's /proc/net/netstat", name, ns)
}
