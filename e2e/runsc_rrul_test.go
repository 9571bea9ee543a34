package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/benchmarks"
	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
)

// TestRunscRRUL is seed 002's RRUL picture in a runsc sandbox: 4 bulk TCP
// streams up to a kernel peer and 4 down from it, at once, with the peer
// pinging the sandbox every 20 ms for 2 s idle, 10 s of load and 2 s idle.
// The operator sets a rate each way: --qdisc-tbf-rate=20mbit for what the
// sandbox sends (fq under the bucket, the default) and ingress cake at 20
// Mbit/s for what it receives. Measured once each:
//
//   - with backpressure (runsc, its TCP's small queues): the ping's p99
//     under load is within 5 ms of idle, the tbf drops at most 0.1% of what
//     it sends, the upload streams together get at least 0.9 of the rate in
//     goodput and share it fairly (Jain's index at least 0.95: seed 002
//     saw TSQ over an EDT FIFO keep its flows' unfairness);
//   - without it (runsc-notsq, gVisor's TCP as it is, over the byte FIFO
//     that was the default): the control, whose loaded median the test
//     must see above the first's p99 for its RTTs to mean anything.
//
// With $NETQDISC_RRUL_SVG set to a directory, each run is drawn there
// (rrul-<name>.svg), as docs/backpressure.md shows them.
func TestRunscRRUL(t *testing.T) {
	if raceDetector {
		t.Skip("RTTs and shares on real peers are timing-sensitive: measured without -race (.ci/run runs go test ./e2e/ too, and CI's time is tight)")
	}
	r := newRunscRig(t)
	notsq, err := lab.RunscNoTSQBinary()
	if err != nil {
		t.Skipf("the control is missing: %v", err)
	}
	const rate = 20 * mbit
	o := lab.RRULOptions{Streams: 4, Idle: 2 * time.Second, Load: 10 * time.Second, PingInterval: 20 * time.Millisecond, Sample: 200 * time.Millisecond}
	ingress := []string{"--qdisc-ingress=cake", "--qdisc-ingress-cake=bandwidth 20mbit"}
	var withP99 time.Duration
	for _, tc := range []struct {
		name, runsc string
		flags       []string
		control     bool
	}{
		{"backpressure", r.runsc, []string{"--qdisc=tbf", "--qdisc-tbf-rate=20mbit", "--qdisc-tbf-burst=128kb"}, false},
		{"none", notsq, []string{"--qdisc=tbf", "--qdisc-tbf-rate=20mbit", "--qdisc-tbf-burst=128kb", "--qdisc-tbf-child=fifo"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := r.start(t, lab.SandboxOptions{Runsc: tc.runsc, Flags: append(tc.flags, ingress...)})
			defer s.Close()
			sent0, drops0 := egressCounters(t, s)
			res, err := r.MeasureSandboxRRUL(s, o)
			if err != nil {
				t.Fatal(err)
			}
			sent, drops := egressCounters(t, s)
			sent, drops = sent-sent0, drops-drops0
			if dir := os.Getenv("NETQDISC_RRUL_SVG"); dir != "" {
				drawRRUL(t, filepath.Join(dir, "rrul-"+tc.name+".svg"), tc.name, res)
			}
			// ping sends one every 20 ms or a little more: about 420
			// under the load, after its first second. The control's
			// queue may drop some; with backpressure, at most 1% of all
			// go unanswered.
			loaded := res.LoadedRTTs()
			if len(loaded) < 100 {
				t.Fatalf("%d pings answered under load (of %d sent in all), want at least 100", len(loaded), res.PingsSent)
			}
			if lost := res.PingsSent - len(res.Pings); !tc.control && lost*100 > res.PingsSent {
				t.Errorf("%d of %d pings went unanswered, want at most 1%%", lost, res.PingsSent)
			}
			idle, p50, p99 := res.IdleRTT(), measure.Quantile(loaded, 0.5), measure.Quantile(loaded, 0.99)
			up, down := res.Goodputs(res.Up), res.Goodputs(res.Down)
			t.Logf("ping idle %v, under load p50 %v p99 %v (%d answered; %d of %d in all); upload %s = %.2f (Jain %.3f); download %s = %.2f; the tbf sent %d packets and dropped %d",
				idle, p50, p99, len(loaded), len(res.Pings), res.PingsSent, mbits(bytesPerSec(up)), sum(up)/1e6, jain(up), mbits(bytesPerSec(down)), sum(down)/1e6, sent, drops)
			if tc.control {
				if p50 <= withP99 {
					t.Errorf("without backpressure the loaded median RTT is %v, not above the p99 with it (%v): the run does not see the queue", p50, withP99)
				}
				return
			}
			withP99 = p99
			checkRate(t, "upload goodput, of the rate", sum(up)*1/8/rate, 0.90, 1.01)
			if drops*1000 > max(sent, 1000) {
				t.Errorf("the tbf dropped %d of %d packets, want at most 0.1%%", drops, sent)
			}
			if bound := idle + 5*time.Millisecond; p99 > bound {
				t.Errorf("the ping's p99 RTT under load is %v, want at most %v (5 ms above idle)", p99, bound)
			}
			if j := jain(up); j < 0.95 {
				t.Errorf("the upload streams' Jain index is %.3f (%s), want at least 0.95", j, mbits(bytesPerSec(up)))
			}
		})
	}
}

// drawRRUL writes an RRUL run's chart to path.
func drawRRUL(t *testing.T, path, name string, r lab.RRULResult) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := benchmarks.WriteRRULChart(f, "RRUL, "+name, r); err != nil {
		t.Fatal(err)
	}
}

func sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

// jain is Jain's fairness index of v: 1 when all are equal, 1/n when one
// has everything.
func jain(v []float64) float64 {
	var sq float64
	for _, x := range v {
		sq += x * x
	}
	if sq == 0 {
		return 0
	}
	s := sum(v)
	return s * s / (float64(len(v)) * sq)
}

// bytesPerSec turns rates in bits/s into bytes/s (for mbits).
func bytesPerSec(bits []float64) []float64 {
	out := make([]float64, len(bits))
	for i, b := range bits {
		out[i] = b / 8
	}
	return out
}
