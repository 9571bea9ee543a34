package benchmarks

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/refs"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/runsc-flags"
)

func TestMain(m *testing.M) {
	refs.SetLeakMode(refs.LeaksPanic)
	m.Run()
	// The netstacks' own packet pools outlive a run; the qdisc tests check
	// references exactly.
}

func TestFillIsPositional(t *testing.T) {
	whole := make([]byte, 1000)
	fill(whole, 7, 0)
	part := make([]byte, 333)
	fill(part, 7, 101)
	if string(part) != string(whole[101:434]) {
		t.Fatal("fill at an offset differs from the same bytes of a fill from 0")
	}
	other := make([]byte, 1000)
	fill(other, 8, 0)
	if string(other) == string(whole) {
		t.Fatal("two streams have the same content")
	}
}

// TestReceiveDetectsCorruption feeds receive a stream with one byte changed.
func TestReceiveDetectsCorruption(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt int // -1: none
	}{{"intact", -1}, {"corrupt", 70_000}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			go func() {
				defer a.Close()
				a.Write([]byte{3, 0, 0, 0, 0, 0, 0, 0})
				data := make([]byte, 200_000)
				fill(data, 3, 0)
				if tc.corrupt >= 0 {
					data[tc.corrupt] ^= 1
				}
				a.Write(data)
			}()
			var n atomic.Uint64
			perStream := make([]atomic.Uint64, 4)
			err := receive(b, &n, perStream)
			if (err != nil) != (tc.corrupt >= 0) {
				t.Fatalf("receive: %v", err)
			}
			if err == nil && (perStream[3].Load() != n.Load() || n.Load() != 200_000) {
				t.Errorf("stream 3 counted %d bytes of %d received, want all 200000", perStream[3].Load(), n.Load())
			}
			if err != nil && !strings.Contains(err.Error(), "byte 70000") {
				t.Errorf("error %q does not say which byte", err)
			}
		})
	}
}

// TestRun runs each kind of candidate briefly and checks that traffic flowed
// with its content intact and the figures are filled in. It asserts no
// speed. The streams offer less than the shaped rate: upstream's tbf holds
// 1000 packets whatever the rate, 1.2 s at 10 Mbit/s, so an overloaded run
// of about a second may see no RTT sample come back at all.
func TestRun(t *testing.T) {
	tbfCfg := &runscflags.Config{QDisc: "tbf", TBFRate: 10 * Mbit, TBFBurst: 12500, TBFLatency: 20 * time.Millisecond}
	for _, c := range []Candidate{
		FromConfig(tbfCfg), Upstream(tbfCfg),
		FromConfig(&runscflags.Config{QDisc: "fifo"}), Upstream(&runscflags.Config{QDisc: "fifo"}),
		FromConfig(&runscflags.Config{QDisc: runscflags.QDiscNone}),
	} {
		t.Run(slug(c.Name()), func(t *testing.T) {
			var ticks int
			r, err := Run(c, measure.Options{Streams: 2, Warmup: 100 * time.Millisecond, Window: 1100 * time.Millisecond, Pace: 8 * Mbit, Progress: func(measure.Progress) { ticks++ }})
			if err != nil {
				t.Fatal(err)
			}
			if r.Received == 0 || r.WireBps == 0 || r.GoodputBps == 0 || r.IdleRTT == 0 || len(r.RTTs) == 0 || len(r.Timeline) == 0 || ticks == 0 {
				t.Errorf("missing figures: %+v (%d progress calls)", r, ticks)
			}
			if (c.Impl == "netqdisc" && c.QDisc != "none") != r.HasStats {
				t.Errorf("HasStats = %v for %s", r.HasStats, c.Name())
			}
			if r.HasStats && r.Stats.Packets == 0 {
				t.Errorf("qdisc stats show nothing sent: %v", r.Stats)
			}
		})
	}
}

func TestRunRefusesBadConfig(t *testing.T) {
	c := FromConfig(&runscflags.Config{QDisc: "tbf", TBFRate: 10 * Mbit, TBFBurst: 1000})
	if _, err := Run(c, measure.Options{Window: time.Second}); err == nil || !strings.Contains(err.Error(), "--qdisc-tbf-burst") {
		t.Errorf("Run with a burst below the MTU: %v; want an error naming --qdisc-tbf-burst", err)
	}
}

// TestFailedSetUpLeavesNothing: whichever set-up step fails, Run returns
// its error and leaves no goroutine behind: not the qdisc's dispatchers,
// the stacks', the receivers', the probe's or the senders'.
func TestFailedSetUpLeavesNothing(t *testing.T) {
	for _, step := range []string{"stacks", "servers", "probe", "senders"} {
		t.Run(step, func(t *testing.T) {
			before := runtime.NumGoroutine()
			setUpFault = func(s string) error {
				if s == step {
					return fmt.Errorf("injected failure after %s", s)
				}
				return nil
			}
			defer func() { setUpFault = nil }()
			c := FromConfig(&runscflags.Config{QDisc: "tbf", TBFRate: 10 * Mbit, TBFBurst: 12500})
			if _, err := Run(c, measure.Options{Streams: 2, Window: time.Second}); err == nil || !strings.Contains(err.Error(), "injected failure after "+step) {
				t.Fatalf("Run: %v; want the injected failure", err)
			}
			// Goroutines that were told to stop may still be returning.
			deadline := time.Now().Add(10 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				buf := make([]byte, 1<<20)
				t.Fatalf("%d goroutines before Run, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

func TestTablesAndJSON(t *testing.T) {
	r := func(wire, good float64) measure.Result {
		return measure.Result{WireBps: wire, WireBytes: uint64(wire), GoodputBps: good, Elapsed: time.Second, Streams: 4, RTTs: []time.Duration{5 * time.Millisecond}, CPU: time.Second / 10}
	}
	cands := SideBySide(FarRate, FarBurst)
	var sums []Summary
	for i, c := range cands {
		sums = append(sums, Summary{Suite: "throughput", Setting: "4", Candidate: c, Rounds: []measure.Result{r(float64(100+i), float64(90+i)), r(float64(110+i), float64(92+i))}})
	}
	var sb strings.Builder
	WriteTables(&sb, sums)
	if !strings.Contains(sb.String(), "tbf/fifo netqdisc") {
		t.Errorf("throughput table:\n%s", sb.String())
	}
	b, err := JSON(sums)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"runs"`, `"qdisc"`, `"impl"`, `"streams"`, `"rate_Bps"`, `"wire_Bps"`, `"goodput_Bps"`, `"rtt_idle_ms"`, `"rtt_p50_ms"`, `"rtt_p99_ms"`, `"drops"`, `"cpu_s_per_GB"`, `"rounds"`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("JSON lacks %s", field)
		}
	}
	_ = io.Discard
}

func TestJain(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{5, 5, 5, 5}, 1},
		{[]float64{8, 0, 0, 0}, 0.25},
		{[]float64{1, 3}, 0.8},
		{nil, 0},
	} {
		if got := Jain(tc.x); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("Jain(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
}

// TestSparseRun: a run with sparse flows measures the UDP echo and each
// stream's goodput (fq_codel under a 10 Mbit/s tbf). The window is three
// of the echo's timeouts (udpProbeTimeout): an echo lost just before it
// holds the probe for one, and under CI's race run beside the real-peer
// tests a 1 s window once saw no echo sent.
func TestSparseRun(t *testing.T) {
	s := BufferbloatSuite([]uint64{10 * Mbit}, measure.Options{Warmup: 200 * time.Millisecond, Window: 3 * udpProbeTimeout})
	i := slices.IndexFunc(s.Settings[0].Candidates, func(c Candidate) bool { return c.Variant == "fq_codel" })
	if i < 0 {
		t.Fatal("the bufferbloat suite has no tbf with an fq_codel child")
	}
	r, err := Run(s.Settings[0].Candidates[i], s.Settings[0].Options)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.StreamBps) != 4 || r.UDPSent == 0 || r.UDPRTT(0.5) == 0 {
		t.Errorf("streams %v, UDP echoes %d sent, p50 %v: want 4 streams and echoes", r.StreamBps, r.UDPSent, r.UDPRTT(0.5))
	}
	for i, bps := range r.StreamBps {
		if bps == 0 {
			t.Errorf("stream %d delivered nothing", i+1)
		}
	}
}
