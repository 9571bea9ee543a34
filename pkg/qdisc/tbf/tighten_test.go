package tbf_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// mustParse parses a tbf's words, failing t on an error.
func mustParse(t *testing.T, words string) tbf.Config {
	t.Helper()
	c, err := tbf.Parse(words)
	if err != nil {
		t.Fatalf("Parse(%q): %v", words, err)
	}
	return c
}

// fields prints c field by field: its String, as tc shows a tbf, leaves
// some out.
func fields(c tbf.Config) string {
	type plain tbf.Config
	return fmt.Sprintf("%+v", plain(c))
}

// tightenOperator is the operator's tbf the Tighten cases start from:
// every knob Tighten compares set, with lanes and slack of its own.
func tightenOperator(t *testing.T) tbf.Config {
	t.Helper()
	c := mustParse(t, "rate 10mbit burst 32k latency 25ms peakrate 20mbit mtu 1514 mpu 64 overhead 14")
	c.PacketRate, c.PacketBurst = 1000, 16
	c.Lanes, c.Slack = 4, 2*time.Millisecond
	return c
}

// TestTightenAccepts: a pod's tbf whose every rate and bucket is at most
// the operator's, whose queue is bounded the same way and no longer, and
// that charges each packet no less, is taken as the pod gives it: that is
// what runs (New builds it, with the pod's rates), on the operator's
// lanes and slack, whatever lanes and slack the pod asks for.
func TestTightenAccepts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		operator func(t *testing.T) tbf.Config
		pod      func(c *tbf.Config)
	}{
		{
			name:     "the operator's own",
			operator: tightenOperator,
			pod:      func(*tbf.Config) {},
		},
		{
			name:     "every rate, bucket and the latency lower",
			operator: tightenOperator,
			pod: func(c *tbf.Config) {
				c.Rate, c.Burst = 625_000, 16<<10 // 5mbit, 16k
				c.PeakRate, c.MTU = 1_250_000, 1514
				c.PacketRate, c.PacketBurst = 500, 8
				c.Latency = 10 * time.Millisecond
			},
		},
		{
			name:     "packets charged more: overhead, mpu, linklayer atm",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.Overhead, c.MPU, c.ATM = 100, 128, true },
		},
		{
			name:     "lanes and slack of the pod's own are the operator's",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.Lanes, c.Slack = 1, tbf.NoSlack },
		},
		{
			name:     "a lower limit under the operator's limit",
			operator: func(t *testing.T) tbf.Config { return mustParse(t, "rate 10mbit burst 32k limit 100k") },
			pod:      func(c *tbf.Config) { c.Limit = 50 << 10 },
		},
		{
			name:     "a peak rate and a packet rate the operator left unset",
			operator: func(t *testing.T) tbf.Config { return mustParse(t, "rate 10mbit burst 32k limit 100k") },
			pod: func(c *tbf.Config) {
				c.PeakRate, c.MTU = 2_500_000, 1514
				c.PacketRate, c.PacketBurst = 100, 4
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.operator(t)
			pod := op
			pod.Lanes, pod.Slack = 0, 0
			tc.pod(&pod)
			if err := pod.Check(); err != nil {
				t.Fatalf("the test's pod %v is not a valid tbf: %v", pod, err)
			}
			got, err := op.Tighten(pod)
			if err != nil {
				t.Fatalf("operator %v: Tighten(%v): %v; want it accepted", op, pod, err)
			}
			want := pod
			want.Lanes, want.Slack, want.Child = op.Lanes, op.Slack, op.Child
			if got != want {
				t.Errorf("operator %v: Tighten(%v) =\n%s\nwant\n%s", op, pod, fields(got), fields(want))
			}
			viaKind, err := tbf.Kind.Tighten(tbf.Options(op), tbf.Options(pod))
			if err != nil || viaKind != qdisc.Options(tbf.Options(got)) {
				t.Errorf("Kind.Tighten = %v, %v; want Config.Tighten's %v", viaKind, err, got)
			}

			// What Tighten returns is what runs.
			clock := faketime.NewManualClock()
			q, err := tbf.Kind.New(qdisctest.NewLink(clock), clock, tbf.Options(got))
			if err != nil {
				t.Fatalf("New(%v): %v", got, err)
			}
			defer q.Close()
			run := q.(*tbf.Discipline).Config()
			if run.Rate != pod.Rate || run.Burst != pod.Burst || run.PeakRate != pod.PeakRate || run.PacketRate != pod.PacketRate || q.Lanes() != max(op.Lanes, 1) {
				t.Errorf("New(%v) runs %+v on %d lanes; want the pod's rates and buckets on the operator's %d lanes", got, run, q.Lanes(), max(op.Lanes, 1))
			}
		})
	}
}

// TestTightenRefuses: a pod's tbf that is looser than the operator's in
// any knob (a faster rate, a deeper bucket, a longer or differently
// bounded queue, a packet charged less, or a bucket the operator sets
// left out) is refused with a *ConfigError naming that knob in tc's
// words and the operator's value, so that the pod's author knows what to
// give.
func TestTightenRefuses(t *testing.T) {
	limitOperator := func(t *testing.T) tbf.Config { return mustParse(t, "rate 10mbit burst 32k limit 100k") }
	defaultLimitOperator := func(t *testing.T) tbf.Config { return mustParse(t, "rate 10mbit burst 32k") }
	for _, tc := range []struct {
		name     string
		operator func(t *testing.T) tbf.Config
		pod      func(c *tbf.Config)
		field    string   // the ConfigError's Field
		says     []string // what its message says
		notSay   string   // what it must not say, if not ""
	}{
		{
			name:     "a faster rate",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.Rate = 2_500_000; c.PeakRate = 5_000_000 },
			field:    "rate",
			says:     []string{"rate 20Mbit is above the operator's 10Mbit", "give 10Mbit or less"},
		},
		{
			name:     "no rate where the operator sets one",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.Rate, c.Burst, c.PeakRate, c.MTU = 0, 0, 0, 0 },
			field:    "rate",
			says:     []string{"the operator sets rate 10Mbit"},
		},
		{
			name:     "a deeper bucket",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.Burst = 64 << 10 },
			field:    "burst",
			says:     []string{"burst 64Kb is above the operator's 32Kb"},
		},
		{
			name:     "a faster peak",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.PeakRate = 5_000_000 },
			field:    "peakrate",
			says:     []string{"peakrate 40Mbit is above the operator's 20Mbit"},
		},
		{
			name:     "no peak where the operator sets one",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.PeakRate, c.MTU = 0, 0 },
			field:    "peakrate",
			says:     []string{"the operator sets peakrate 20Mbit"},
		},
		{
			name:     "a deeper peak bucket",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.MTU = 9000 },
			field:    "mtu",
			says:     []string{"above the operator's 1514b"},
		},
		{
			name:     "a faster packet rate",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.PacketRate = 2000 },
			field:    "pkt_rate",
			says:     []string{"pkt_rate 2000 is above the operator's 1000"},
		},
		{
			name:     "no packet rate where the operator sets one",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.PacketRate, c.PacketBurst = 0, 0 },
			field:    "pkt_rate",
			says:     []string{"the operator sets pkt_rate 1000"},
		},
		{
			name:     "a deeper packet bucket",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.PacketBurst = 32 },
			field:    "pkt_burst",
			says:     []string{"pkt_burst 32 is above the operator's 16"},
		},
		{
			name:     "a longer latency",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.Latency = 50 * time.Millisecond },
			field:    "latency",
			says:     []string{"latency 50ms is above the operator's 25ms"},
		},
		{
			name:     "a limit where the operator bounds by latency",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.Latency, c.Limit = 0, 10<<10 },
			field:    "latency",
			says:     []string{"the operator bounds the queue by latency 25ms"},
		},
		{
			name:     "a latency where the operator bounds by limit",
			operator: limitOperator,
			pod:      func(c *tbf.Config) { c.Limit, c.Latency = 0, 10*time.Millisecond },
			field:    "latency",
			says:     []string{"the operator bounds the queue by its limit", "give limit 100Kb or less"},
		},
		{
			name:     "a longer limit",
			operator: limitOperator,
			pod:      func(c *tbf.Config) { c.Limit = 200 << 10 },
			field:    "limit",
			says:     []string{"limit 200Kb is above the operator's 100Kb"},
		},
		{
			name:     "no limit (the link's default) where the operator sets one",
			operator: limitOperator,
			pod:      func(c *tbf.Config) { c.Limit = 0 },
			field:    "limit",
			says:     []string{"the operator sets limit 100Kb"},
		},
		{
			// The operator's default limit is DefaultLimitPackets packets
			// of the link's largest size: 1000 * 1514 bytes on an
			// Ethernet link, far below a gigabyte.
			name:     "a gigabyte limit over the operator's default limit",
			operator: defaultLimitOperator,
			pod:      func(c *tbf.Config) { c.Limit = 1 << 30 },
			field:    "limit",
			says:     []string{"limit"},
		},
		{
			name:     "a latency over the operator's default limit",
			operator: defaultLimitOperator,
			pod:      func(c *tbf.Config) { c.Latency = 10 * time.Millisecond },
			field:    "latency",
			says:     []string{"latency"},
			notSay:   "give limit 0b or less",
		},
		{
			name:     "less overhead",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.Overhead = 0 },
			field:    "overhead",
			says:     []string{"overhead 0 is below the operator's 14"},
		},
		{
			name:     "a smaller mpu",
			operator: tightenOperator,
			pod:      func(c *tbf.Config) { c.MPU = 0 },
			field:    "mpu",
			says:     []string{"mpu 0 is below the operator's 64"},
		},
		{
			name:     "ethernet where the operator charges atm cells",
			operator: func(t *testing.T) tbf.Config { return mustParse(t, "rate 10mbit burst 32k latency 25ms linklayer atm") },
			pod:      func(c *tbf.Config) { c.ATM = false },
			field:    "linklayer",
			says:     []string{"keep linklayer atm"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.operator(t)
			pod := op
			tc.pod(&pod)
			got, err := op.Tighten(pod)
			var ce *tbf.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("operator %v: Tighten(%v) = %v, %v; want a *ConfigError naming %s", op, pod, got, err, tc.field)
			}
			if ce.Field != tc.field {
				t.Errorf("Tighten(%v): %v names %q; want %q", pod, err, ce.Field, tc.field)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Tighten(%v): %q; want it to say %q", pod, err, s)
				}
			}
			if tc.notSay != "" && strings.Contains(err.Error(), tc.notSay) {
				t.Errorf("Tighten(%v): %q; it says %q, which is no bound the operator set", pod, err, tc.notSay)
			}
			if got != (tbf.Config{}) {
				t.Errorf("Tighten(%v) refused it but returned %v; want the zero Config", pod, got)
			}
			if o, kerr := tbf.Kind.Tighten(tbf.Options(op), tbf.Options(pod)); kerr == nil || o != nil {
				t.Errorf("Kind.Tighten = %v, %v; want Config.Tighten's error", o, kerr)
			}
		})
	}
}

// TestFit: a Kubernetes bandwidth annotation lowers the tbf's rate to the
// bandwidth, and never raises it: a rate at or below the bandwidth, and
// every other knob, stay as they were; the result is a valid tbf.
func TestFit(t *testing.T) {
	packetOnly := tbf.Config{PacketRate: 1000, PacketBurst: 10}
	for _, tc := range []struct {
		name      string
		in        tbf.Config
		bandwidth uint64
		wantRate  uint64
	}{
		{name: "a lower bandwidth lowers the rate", in: mustParse(t, "rate 10mbit burst 32k latency 25ms"), bandwidth: 1_000_000, wantRate: 1_000_000},
		{name: "a higher bandwidth keeps the rate", in: mustParse(t, "rate 10mbit burst 32k latency 25ms"), bandwidth: 2_000_000, wantRate: 1_250_000},
		{name: "the same bandwidth keeps the rate", in: mustParse(t, "rate 10mbit burst 32k limit 100k"), bandwidth: 1_250_000, wantRate: 1_250_000},
		{name: "a much higher bandwidth keeps the rate", in: mustParse(t, "rate 1mbit burst 10k"), bandwidth: 1 << 40, wantRate: 125_000},
		{name: "the peak stays above a lowered rate", in: mustParse(t, "rate 10mbit burst 32k latency 25ms peakrate 20mbit mtu 1514"), bandwidth: 500_000, wantRate: 500_000},
		{name: "a packet-only ceiling gains the bandwidth as its rate", in: packetOnly, bandwidth: 1_000_000, wantRate: 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.in.Check(); err != nil {
				t.Fatalf("the test's tbf %v is not valid: %v", tc.in, err)
			}
			got := tc.in.Fit(tc.bandwidth)
			if got.Rate != tc.wantRate {
				t.Errorf("%v: Fit(%d).Rate = %d; want %d", tc.in, tc.bandwidth, got.Rate, tc.wantRate)
			}
			if got.Rate > tc.in.Rate && tc.in.Rate != 0 {
				t.Errorf("%v: Fit(%d) raised the rate to %d", tc.in, tc.bandwidth, got.Rate)
			}
			rest, in := got, tc.in
			rest.Rate, in.Rate = 0, 0
			if tc.in.Rate == 0 {
				rest.Burst = in.Burst // a packet-only ceiling may gain a bucket with its rate
			}
			if rest != in {
				t.Errorf("%v: Fit(%d) =\n%s\nwant only the rate changed from\n%s", tc.in, tc.bandwidth, fields(got), fields(tc.in))
			}
			if err := got.Check(); err != nil {
				t.Errorf("%v: Fit(%d) = %v, which is not a valid tbf: %v", tc.in, tc.bandwidth, got, err)
			}
			if o, err := tbf.Kind.Fit(tbf.Options(tc.in), tc.bandwidth); err != nil || o != qdisc.Options(tbf.Options(got)) {
				t.Errorf("Kind.Fit = %v, %v; want Config.Fit's %v", o, err, got)
			}
		})
	}
}

// TestKindRoundTrip: what Kind.Parse reads, String writes back in words
// Kind.Parse reads to the same Config, as qdisc.Options promises: a
// runtime keeps a kind's options as their String and parses them again
// (flags, annotations, checkpoints), so a knob String drops or changes is
// lost on the way.
func TestKindRoundTrip(t *testing.T) {
	for _, words := range []string{
		"rate 10mbit burst 32k latency 25ms",
		"rate 100mbit burst 64k latency 10ms",
		"rate 10mbit burst 15k",
		"rate 1mbit burst 10k limit 20k",
		"rate 10mbit burst 10k limit 100k",
		"rate 1mbit burst 10k latency 50ms peakrate 2mbit mtu 1514",
		"rate 10mbit burst 32k latency 25ms overhead 14",
		"rate 10mbit burst 32k latency 25ms mpu 64",
		"rate 10mbit burst 32k latency 25ms linklayer atm",
		"rate 3mbit burst 12345 latency 7ms",
	} {
		t.Run(words, func(t *testing.T) {
			o, err := tbf.Kind.Parse(words)
			if err != nil {
				t.Fatalf("Kind.Parse(%q): %v", words, err)
			}
			again, err := tbf.Kind.Parse(o.String())
			if err != nil {
				t.Fatalf("Kind.Parse(%q), of Kind.Parse(%q).String(): %v", o.String(), words, err)
			}
			if again != o {
				t.Errorf("Kind.Parse(%q) =\n%s\nKind.Parse of its String %q =\n%s\nwant the same Config", words, fields(tbf.Config(o.(tbf.Options))), o.String(), fields(tbf.Config(again.(tbf.Options))))
			}
		})
	}
}
