package e2e

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/runsc-flags"
)

func TestMain(m *testing.M) {
	if err := lab.Check(); err == nil {
		lab.Sweep() // what an interrupted run left
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			<-sig
			lab.CloseAll()
			os.Exit(2)
		}()
	}
	code := m.Run()
	lab.CloseAll()
	os.Exit(code)
}

func newLab(t *testing.T) *lab.Lab {
	t.Helper()
	if err := lab.Check(); err != nil {
		t.Skipf("real-peer tests skipped: %v", err)
	}
	l, err := lab.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// qdiscFrom builds the netstack's qdisc as runsc would, from flags and
// annotations.
func qdiscFrom(t *testing.T, args []string, annotations map[string]string) (lab.MakeQDisc, *runscflags.Config) {
	t.Helper()
	cfg, err := lab.FromFlags(args, annotations)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.NewQueueingDiscipline, cfg
}

const (
	mbit = 125_000
	// The window excludes the first burst and TCP's start.
	warmup     = 2 * time.Second
	measureFor = 5 * time.Second
)

// TestShapingAgainstTheKernel shapes 4 bulk TCP streams to 10 Mbit/s (burst
// 12500 B, latency 50 ms) through netqdisc's tbf and, on an identical veth,
// through the kernel's: the on-wire rate at the peer must be within
// [0.97, 1.01] of the configured rate, the median ping RTT under the load
// at most the latency + the idle RTT + 15 ms, and no ping lost to
// netqdisc. (The kernel, the control, is held to the rate and the RTT; a
// ping its tbf tail-drops under 4 streams, seen once in a CI run while
// other tests loaded both cores, is logged, not failed: it is the
// kernel's behaviour, not ours.)
func TestShapingAgainstTheKernel(t *testing.T) {
	l := newLab(t)
	const rate, burst, latency = 10 * mbit, 12500, 50 * time.Millisecond
	o := measure.Options{Streams: 4, Warmup: warmup, Window: measureFor, PingInterval: 100 * time.Millisecond}
	// The kernel's TCP does not overfill its qdisc (TCP small queues);
	// gVisor's would keep the 75 KB queue at its limit, and tail drops
	// would take pings too (seen: 2 of 50). 16 KiB per stream, 64 KiB in
	// all, gives the netstack's streams the kernel's restraint; the rate
	// is unaffected (the window is far above the bandwidth-delay product).
	on := o
	on.SendBuffer = 16 << 10
	mk, _ := qdiscFrom(t, []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-latency=50ms"}, nil)
	for _, tc := range []struct {
		name     string
		run      func() (measure.Result, error)
		noneLost bool
	}{
		{"netqdisc", func() (measure.Result, error) { return l.MeasureNetstack(mk, on) }, true},
		{"kernel", func() (measure.Result, error) { return l.MeasureKernel(rate, burst, latency, o) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.run()
			if err != nil {
				t.Fatal(err)
			}
			ratio := r.WireBps / rate
			t.Logf("%s: on-wire %.3f Mbit/s = %.4f of the rate; RTT idle %v, loaded p50 %v p99 %v; %d/%d pings answered",
				tc.name, r.WireBps*8/1e6, ratio, r.IdleRTT, r.RTT(0.5), r.RTT(0.99), len(r.RTTs), r.PingsSent)
			checkRate(t, "on-wire rate of the configured rate", ratio, 0.97, 1.01)
			if limit := latency + r.IdleRTT + 15*time.Millisecond; r.RTT(0.5) > limit {
				t.Errorf("median RTT under load %v; want at most %v (latency + idle + 15ms)", r.RTT(0.5), limit)
			}
			switch {
			case r.PingsSent == 0:
				t.Errorf("no ping sent")
			case r.PingsLost() != 0 && tc.noneLost:
				t.Errorf("%d of %d pings lost", r.PingsLost(), r.PingsSent)
			case r.PingsLost() != 0:
				t.Logf("the kernel's tbf lost %d of %d pings", r.PingsLost(), r.PingsSent)
			}
		})
	}
}

// TestAnnotationsEndToEnd: the operator's ceiling is 10 Mbit/s; a pod's
// annotation of 5 Mbit/s shapes to 5, and one of 20 Mbit/s is refused
// before any traffic.
func TestAnnotationsEndToEnd(t *testing.T) {
	operator := []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-latency=50ms"}
	t.Run("raise refused", func(t *testing.T) {
		_, err := lab.FromFlags(operator, map[string]string{runscflags.AnnotationPrefix + "qdisc-tbf-rate": "20mbit"})
		if err == nil || !strings.Contains(err.Error(), "--allow-flag-override") {
			t.Fatalf("annotation raising the rate to 20mbit: %v; want a refusal naming --allow-flag-override", err)
		}
	})
	t.Run("lower to 5mbit", func(t *testing.T) {
		l := newLab(t)
		mk, cfg := qdiscFrom(t, operator, map[string]string{runscflags.AnnotationPrefix + "qdisc-tbf-rate": "5mbit"})
		if cfg.TBFRate != 5*mbit {
			t.Fatalf("rate %d after the annotation, want %d", cfg.TBFRate, 5*mbit)
		}
		r, err := l.MeasureNetstack(mk, measure.Options{Streams: 4, Warmup: warmup, Window: measureFor})
		if err != nil {
			t.Fatal(err)
		}
		ratio := r.WireBps / (5 * mbit)
		t.Logf("on-wire %.3f Mbit/s = %.4f of 5 Mbit/s", r.WireBps*8/1e6, ratio)
		checkRate(t, "on-wire rate of 5 Mbit/s", ratio, 0.97, 1.01)
	})
}

// TestStreamIntegrity: what the netstack sent is what the peer's kernel
// received, byte for byte (SHA-256 of the stream), through fifo and none
// at full speed and through a tbf that drops at its limit.
func TestStreamIntegrity(t *testing.T) {
	l := newLab(t)
	for _, tc := range []struct {
		name string
		args []string
		size uint64
	}{
		{"none", []string{"--qdisc=none"}, 64 << 20},
		{"fifo", []string{"--qdisc=fifo"}, 64 << 20},
		{"tbf dropping at its limit", []string{"--qdisc=tbf", "--qdisc-tbf-rate=20mbit", "--qdisc-tbf-burst=3028", "--qdisc-tbf-limit=6056"}, 3 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mk, _ := qdiscFrom(t, tc.args, nil)
			start := time.Now()
			sent, got, n, err := l.Integrity(mk, tc.size)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes in %v (%.0f Mbit/s), sha256 %s", n, time.Since(start).Round(time.Millisecond), float64(n)*8/1e6/time.Since(start).Seconds(), got)
			if sent != got || n != tc.size {
				t.Errorf("sent %d bytes with sha256 %s; the peer received sha256 %s", n, sent, got)
			}
		})
	}
}

func TestCheckSaysWhatIsMissing(t *testing.T) {
	err := lab.Check()
	if err == nil {
		return
	}
	if !strings.Contains(err.Error(), "root") && !strings.Contains(err.Error(), "apt-get install") {
		t.Errorf("Check() = %v; want it to say what to do", err)
	}
	fmt.Println("e2e:", err)
}

// TestSmallBursts: with a bucket of one or two full-size packets, at 10 and
// 100 Mbit/s, netqdisc's tbf holds the rate on a real veth within
// [0.98, 1.01] (gVisor's upstream tbf, 100 Mbit/s and 3028 B, holds about
// 0.3 here: its late timer wake-ups cost credit). The child is the
// default, fq, and the sender gVisor's TCP as upstream has it (no small
// queues): it fills the tbf's limit, where fq drops from the head of the
// longest flow (refusing the arriving packets instead stalled every flow
// for up to a second in 4 of 24 runs at 10 Mbit/s).
func TestSmallBursts(t *testing.T) {
	if raceDetector {
		t.Skip("small-burst accuracy is timing-sensitive: measured without -race (.ci/run runs go test ./e2e/ too)")
	}
	l := newLab(t)
	for _, rate := range []uint64{10 * mbit, 100 * mbit} {
		for _, burst := range []uint64{1514, 3028} {
			t.Run(fmt.Sprintf("%dmbit burst %d", rate/mbit, burst), func(t *testing.T) {
				mk, _ := qdiscFrom(t, []string{"--qdisc=tbf", fmt.Sprintf("--qdisc-tbf-rate=%d", rate), fmt.Sprintf("--qdisc-tbf-burst=%d", burst)}, nil)
				r, err := l.MeasureNetstack(mk, measure.Options{Streams: 4, Warmup: warmup, Window: measureFor})
				if err != nil {
					t.Fatal(err)
				}
				ratio := r.WireBps / float64(rate)
				t.Logf("on-wire %.3f Mbit/s = %.4f of the rate", r.WireBps*8/1e6, ratio)
				checkRate(t, "on-wire rate of the configured rate", ratio, 0.98, 1.01)
			})
		}
	}
}

// checkRate asserts that ratio, what was measured over what was
// configured, is within [lo, hi]: outside -race. Under -race it only logs
// it: `go test -race ./...` runs every package's race-instrumented tests
// beside these on the same cores, and a loaded machine starves the kernel
// peers and the netstack alike (CI once measured the kernel's own tbf at
// 0.955 there). .ci/run runs `go test ./e2e/` again without -race, alone,
// where every rate is asserted.
func checkRate(t *testing.T, what string, ratio, lo, hi float64) {
	t.Helper()
	switch {
	case ratio >= lo && ratio <= hi:
	case raceDetector:
		t.Logf("%s: %.4f, outside [%.2f, %.2f]: not asserted under -race (the run without -race asserts it)", what, ratio, lo, hi)
	default:
		t.Errorf("%s: %.4f, want within [%.2f, %.2f]", what, ratio, lo, hi)
	}
}
