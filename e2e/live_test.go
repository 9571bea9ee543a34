package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
)

// liveStart is how the live tests' sandboxes start: a tbf at 100 Mbit/s
// with a 2-packet bucket (as TestRunscShaping) and a 50 ms queue, which a
// change keeps (the limit follows the rate).
var liveStart = []string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=3028", "--qdisc-tbf-latency=50ms", "--gso=false"}

// The changes the live tests make: to 10 Mbit/s with a 10 ms bucket, and
// back.
var (
	to10mbit  = []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"}
	to100mbit = []string{"--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=3028"}
)

// TestLiveChange changes a running sandbox's tbf from 100 to 10 Mbit/s and
// back with `runsc qdisc change`: after each change 4 iperf streams from
// the sandbox reach the kernel peer within [0.97, 1.01] of the rate in
// force, and the boot log records each change. Then, with numbered UDP
// datagrams above the rate (a standing queue) while the rate changes
// twice, nothing arrives reordered or twice, no more is lost than the
// qdisc counts as dropped, and the packets `runsc qdisc show` counts as
// sent are those the peer's veth received.
func TestLiveChange(t *testing.T) {
	r := newRunscRig(t)
	bin := buildSequdp(t)
	s := r.start(t, lab.SandboxOptions{Flags: liveStart, Mounts: []string{filepath.Dir(bin)}})
	measureAt(t, r, s, "at start", 100*mbit)
	change(t, s, to10mbit, "root refcnt 2 rate 10Mbit burst 12500b lat 50ms")
	measureAt(t, r, s, "after 100 -> 10 Mbit/s", 10*mbit)
	t.Run("in order, lost only as dropped, show agrees with the peer", func(t *testing.T) {
		checkIntegrity(t, r, s, bin)
	})
	change(t, s, to100mbit, "root refcnt 2 rate 100Mbit burst 3028b lat 50ms")
	measureAt(t, r, s, "after 10 -> 100 Mbit/s", 100*mbit)
	log := bootLog(t, s)
	if n := strings.Count(log, "runsc qdisc change --qdisc-tbf-rate="); n < 4 {
		t.Errorf("the boot log records %d qdisc changes, want 4 (two here, two in the integrity check):\n%s", n, lab.LastLines(log, 30))
	}
}

// TestLiveCheckpointRestore: a sandbox changed from 100 to 10 Mbit/s, then
// checkpointed and restored with the flags it started with, shapes at
// 10 Mbit/s, and `runsc qdisc show` and its boot log say so. The change
// keeps the burst: a checkpoint's changes may only tighten the flags the
// restore is given (runscflags.NIC.Restore), and to10mbit's burst is
// larger than liveStart's.
func TestLiveCheckpointRestore(t *testing.T) {
	r := newRunscRig(t)
	s := r.start(t, lab.SandboxOptions{Flags: liveStart})
	change(t, s, []string{"--qdisc-tbf-rate=10mbit"}, "root refcnt 2 rate 10Mbit burst 3028b lat 50ms")
	if out := r.checkpointRestore(t, s); !strings.Contains(out, "root refcnt 2 rate 10Mbit burst 3028b lat 50ms") {
		t.Errorf("runsc qdisc show after the restore:\n%s\nwant the changed tbf rate 10Mbit burst 3028b lat 50ms", out)
	}
	measureAt(t, r, s, "restored after 100 -> 10 Mbit/s", 10*mbit)
	change(t, s, to100mbit, "root refcnt 2 rate 100Mbit burst 3028b lat 50ms")
	measureAt(t, r, s, "restored, then 10 -> 100 Mbit/s", 100*mbit)
}

// TestLiveCeilingOnFIFO sets a ceiling on a sandbox started with runsc's
// default fifo (as Firecracker sets a rate limiter where there was none),
// then removes it with a rate of 0 (its 0-sized bucket); a change that
// one NIC refuses changes nothing.
func TestLiveCeilingOnFIFO(t *testing.T) {
	r := newRunscRig(t)
	s := r.start(t, lab.SandboxOptions{Flags: []string{"--qdisc=fifo", "--gso=false"}})
	if _, err := s.QDisc("change", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=100"); err == nil || !strings.Contains(err.Error(), "--qdisc-tbf-burst") {
		t.Errorf("a burst smaller than the NIC's MTU: %v; want a refusal naming --qdisc-tbf-burst", err)
	}
	if _, err := s.QDisc("change", "--qdisc=tbf"); err == nil || !strings.Contains(err.Error(), "--qdisc cannot change") {
		t.Errorf("changing the qdisc's kind: %v; want a refusal naming --qdisc", err)
	}
	if out, err := s.QDisc("show"); err != nil || !strings.Contains(out, "root refcnt 2 queues") {
		t.Errorf("after refused changes, runsc qdisc show: %v\n%s\nwant the fifo unchanged", err, out)
	}
	change(t, s, to10mbit, "parent 8001:1 queues") // the fifo grafted under the ceiling's tbf
	measureAt(t, r, s, "fifo with a 10 Mbit/s ceiling", 10*mbit)
	change(t, s, []string{"--qdisc-tbf-rate=0"}, "root refcnt 2 queues")
	res, err := r.MeasureSandbox(s, measure.Options{Streams: 4, Warmup: warmup, Window: measureFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ceiling removed: on-wire %.1f Mbit/s", res.WireBps*8/1e6)
	if res.WireBps < 2*10*mbit {
		t.Errorf("with the ceiling removed the sandbox sent %.1f Mbit/s, not above twice the removed 10 Mbit/s", res.WireBps*8/1e6)
	}
}

// checkpointRestore checkpoints s and restores it with the flags it
// started with, and returns what `runsc qdisc show` then prints.
func (r *runscRig) checkpointRestore(t *testing.T, s *lab.Sandbox) string {
	t.Helper()
	image := t.TempDir()
	if err := s.Checkpoint(image); err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(image); err != nil {
		t.Fatal(err)
	}
	r.pids = append(r.pids, s.Pids()...)
	out, err := s.QDisc("show")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// change runs `runsc qdisc change` on s and checks that what it then shows
// contains want.
func change(t *testing.T, s *lab.Sandbox, args []string, want string) {
	t.Helper()
	out, err := s.QDisc("change", args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, want) {
		t.Fatalf("runsc qdisc change %s shows:\n%s\nwant %q", strings.Join(args, " "), out, want)
	}
}

// measureAt measures 4 iperf streams from s and checks the on-wire rate
// against rate (bytes/s).
func measureAt(t *testing.T, r *runscRig, s *lab.Sandbox, what string, rate float64) {
	t.Helper()
	res, err := r.MeasureSandbox(s, measure.Options{Streams: 4, Warmup: warmup, Window: measureFor})
	if err != nil {
		t.Fatal(err)
	}
	ratio := res.WireBps / rate
	t.Logf("%s: on-wire %.3f Mbit/s = %.4f of %.0f Mbit/s", what, res.WireBps*8/1e6, ratio, rate*8/1e6)
	checkRate(t, what+": on-wire of the rate", ratio, 0.97, 1.01)
}

// checkIntegrity sends numbered UDP datagrams from s to the peer at
// 12 Mbit/s for 4 s, above the 10 Mbit/s in force, changing the rate to
// 100 Mbit/s after 1 s (the standing queue drains) and back after 2 s.
func checkIntegrity(t *testing.T, r *runscRig, s *lab.Sandbox, bin string) {
	// What the last iperf run left (its queue, its connections' ends)
	// must be gone first, or it counts at one end and not the other.
	waitQuiet(t, s)
	sentBefore, dropsBefore := egressCounters(t, s)
	rxBefore, rxDropBefore := peerRxPackets(t, r)
	sent, got := seqUDP{PPS: 1500, Size: 1000, For: 4 * time.Second, During: func() {
		time.Sleep(time.Second)
		change(t, s, to100mbit, "root refcnt 2 rate 100Mbit")
		time.Sleep(time.Second)
		change(t, s, to10mbit, "root refcnt 2 rate 10Mbit")
	}}.run(t, r, s, bin, 9100)
	waitQuiet(t, s)
	sentAfter, dropsAfter := egressCounters(t, s)
	rxAfter, rxDropAfter := peerRxPackets(t, r)
	lost := sent.Sent - got.Received
	drops := dropsAfter - dropsBefore
	t.Logf("sent %d datagrams (%d sends refused), received %d (%d reordered, %d twice), lost %d; the qdisc dropped %d; runsc qdisc show counts %d sent, the peer's veth received %d (and dropped %d)",
		sent.Sent, sent.Errors, got.Received, got.Reordered, got.Duplicates, lost, drops, sentAfter-sentBefore, rxAfter-rxBefore, rxDropAfter-rxDropBefore)
	if got.Reordered != 0 || got.Duplicates != 0 {
		t.Errorf("%d datagrams arrived reordered and %d twice; want none", got.Reordered, got.Duplicates)
	}
	if lost > drops {
		t.Errorf("%d datagrams lost, more than the %d the qdisc dropped", lost, drops)
	}
	// Both ends were read quiet, and the sandbox's only other packets
	// (ARP, neighbour discovery) pass the qdisc too: the counts match.
	if sentAfter-sentBefore != rxAfter-rxBefore {
		t.Errorf("runsc qdisc show counts %d packets sent, the peer's veth received %d", sentAfter-sentBefore, rxAfter-rxBefore)
	}
}

// buildSequdp builds testdata/sequdp into a directory of its own, for a
// sandbox to mount.
func buildSequdp(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("testdata/sequdp/main.go"); err != nil {
		t.Skipf("no testdata/sequdp to build (%v)", err)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("building testdata/sequdp needs the go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "sequdp")
	build := exec.Command(goBin, "build", "-o", bin, "./testdata/sequdp")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building sequdp: %v: %s", err, out)
	}
	return bin
}

// waitQuiet waits, for 10 s at most, until the sandbox's egress qdisc has
// sent nothing for 300 ms.
func waitQuiet(t *testing.T, s *lab.Sandbox) {
	t.Helper()
	last, _ := egressCounters(t, s)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		sent, _ := egressCounters(t, s)
		if sent == last {
			return
		}
		last = sent
	}
	t.Fatalf("the sandbox kept sending for 10 s after its last load")
}

// egressCounters returns the packets sent and dropped that `runsc qdisc
// show` prints for the sandbox's egress qdisc (its first Sent line).
func egressCounters(t *testing.T, s *lab.Sandbox) (sent, dropped uint64) {
	t.Helper()
	out, err := s.QDisc("show")
	if err != nil {
		t.Fatal(err)
	}
	m := sentLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("runsc qdisc show has no Sent line:\n%s", out)
	}
	sent, _ = strconv.ParseUint(m[2], 10, 64)
	dropped, _ = strconv.ParseUint(m[3], 10, 64)
	return sent, dropped
}

// peerRxPackets returns the packets the peer's veth has received, and
// those it dropped as they came (its backlog full).
func peerRxPackets(t *testing.T, r *runscRig) (rx, dropped uint64) {
	t.Helper()
	read := func(stat string) uint64 {
		out, err := lab.Run(r.NSP, "cat", "/sys/class/net/"+r.VethP1+"/statistics/"+stat)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return read("rx_packets"), read("rx_dropped")
}
