package cake_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// TestParseQdisc: every keyword of tc-cake, and what it sets, from
// DefaultConfig.
func TestParseQdisc(t *testing.T) {
	type cfg = cake.Config
	for _, tc := range []struct {
		words string
		want  func(*cfg)
	}{
		{"", func(*cfg) {}},
		{"cake", func(*cfg) {}},
		{"bandwidth 100mbit", func(c *cfg) { c.Bandwidth = 12_500_000 }},
		{"bandwidth 100Mbit", func(c *cfg) { c.Bandwidth = 12_500_000 }},
		{"bandwidth 1000000", func(c *cfg) { c.Bandwidth = 125_000 }}, // tc: a bare number is bits/s
		{"bandwidth 125kbps", func(c *cfg) { c.Bandwidth = 125_000 }},
		{"bandwidth 512bit", func(c *cfg) { c.Bandwidth = 64 }},
		{"bandwidth 0", func(c *cfg) {}},
		{"bandwidth unlimited", func(c *cfg) {}},
		{"bandwidth 1gbit unlimited", func(c *cfg) {}},
		{"unlimited", func(c *cfg) {}},
		{"autorate-ingress", func(c *cfg) { c.Autorate = true }},
		{"bandwidth 10mbit autorate-ingress", func(c *cfg) { c.Bandwidth, c.Autorate = 1_250_000, true }},
		{"autorate-ingress bandwidth 10mbit", func(c *cfg) { c.Bandwidth = 1_250_000 }}, // q_cake.c: bandwidth turns autorate off
		{"autorate-ingress unlimited", func(c *cfg) {}},
		{"rtt 50ms", func(c *cfg) { c.RTT, c.Target = 50*time.Millisecond, 2500*time.Microsecond }},
		{"rtt 1.5ms", func(c *cfg) { c.RTT, c.Target = 1500*time.Microsecond, 75*time.Microsecond }},
		{"rtt 300", func(c *cfg) { c.RTT, c.Target = 300*time.Microsecond, 15*time.Microsecond }}, // bare: us
		{"rtt 2S", func(c *cfg) { c.RTT, c.Target = 2*time.Second, 100*time.Millisecond }},
		{"rtt 2secs", func(c *cfg) { c.RTT, c.Target = 2*time.Second, 100*time.Millisecond }},
		{"rtt 7msec", func(c *cfg) { c.RTT, c.Target = 7*time.Millisecond, 350*time.Microsecond }},
		{"rtt 19usecs", func(c *cfg) { c.RTT, c.Target = 19*time.Microsecond, time.Microsecond }}, // target at least 1us
		{"rtt 1us", func(c *cfg) { c.RTT, c.Target = time.Microsecond, time.Microsecond }},
		{"rtt 4294967295us", func(c *cfg) { c.RTT, c.Target = cake.MaxTime, 214748364*time.Microsecond }},
		{"datacentre", func(c *cfg) { c.RTT, c.Target = 100*time.Microsecond, 5*time.Microsecond }},
		{"lan", func(c *cfg) { c.RTT, c.Target = time.Millisecond, 50*time.Microsecond }},
		{"metro", func(c *cfg) { c.RTT, c.Target = 10*time.Millisecond, 500*time.Microsecond }},
		{"regional", func(c *cfg) { c.RTT, c.Target = 30*time.Millisecond, 1500*time.Microsecond }},
		{"internet", func(c *cfg) {}},
		{"oceanic", func(c *cfg) { c.RTT, c.Target = 300*time.Millisecond, 15*time.Millisecond }},
		{"satellite", func(c *cfg) { c.RTT, c.Target = time.Second, 50*time.Millisecond }},
		{"interplanetary", func(c *cfg) { c.RTT, c.Target = 1000*time.Second, 50*time.Second }},
		{"metro rtt 20ms", func(c *cfg) { c.RTT, c.Target = 20*time.Millisecond, time.Millisecond }},
		{"rtt 20ms metro", func(c *cfg) { c.RTT, c.Target = 10*time.Millisecond, 500*time.Microsecond }},
		{"target 1ms", func(c *cfg) { c.Target = time.Millisecond }},
		{"target 1ms rtt 50ms", func(c *cfg) { c.RTT, c.Target = 50*time.Millisecond, time.Millisecond }},
		{"rtt 50ms target 50ms", func(c *cfg) { c.RTT, c.Target = 50*time.Millisecond, 50*time.Millisecond }},
		{"besteffort", func(c *cfg) { c.Diffserv = cake.BestEffort }},
		{"precedence", func(c *cfg) { c.Diffserv = cake.Precedence }},
		{"diffserv8", func(c *cfg) { c.Diffserv = cake.Diffserv8 }},
		{"diffserv4", func(c *cfg) { c.Diffserv = cake.Diffserv4 }},
		{"diffserv", func(c *cfg) { c.Diffserv = cake.Diffserv4 }},
		{"besteffort diffserv3", func(c *cfg) {}},
		{"flowblind", func(c *cfg) { c.Isolation = cake.FlowBlind }},
		{"srchost", func(c *cfg) { c.Isolation = cake.SrcHost }},
		{"dsthost", func(c *cfg) { c.Isolation = cake.DstHost }},
		{"hosts", func(c *cfg) { c.Isolation = cake.Hosts }},
		{"flows", func(c *cfg) { c.Isolation = cake.Flows }},
		{"dual-srchost", func(c *cfg) { c.Isolation = cake.DualSrcHost }},
		{"dual-dsthost", func(c *cfg) { c.Isolation = cake.DualDstHost }},
		{"flows triple-isolate", func(c *cfg) {}},
		{"nonat", func(c *cfg) {}},
		{"wash", func(c *cfg) { c.Wash = true }},
		{"wash nowash", func(c *cfg) {}},
		{"no-split-gso", func(c *cfg) { c.SplitGSO = false }},
		{"no-split-gso split-gso", func(c *cfg) {}},
		{"ack-filter", func(c *cfg) { c.AckFilter = cake.AckFilterOn }},
		{"ack-filter-aggressive", func(c *cfg) { c.AckFilter = cake.AckFilterAggressive }},
		{"ack-filter no-ack-filter", func(c *cfg) {}},
		{"ingress", func(c *cfg) { c.Ingress = true }},
		{"ingress egress", func(c *cfg) {}},
		{"memlimit 32mb", func(c *cfg) { c.Memlimit = 32 << 20 }},
		{"memlimit 65536", func(c *cfg) { c.Memlimit = 65536 }},
		{"memlimit 64k", func(c *cfg) { c.Memlimit = 65536 }},
		{"memlimit 4294967295", func(c *cfg) { c.Memlimit = math.MaxUint32 }},
		{"memlimit 0", func(c *cfg) {}},
		{"fwmark 0", func(c *cfg) {}},
		{"fwmark 0x0", func(c *cfg) {}},
		// Overhead and framing, as q_cake.c adds them up.
		{"atm", func(c *cfg) { c.ATM = cake.ATMCells }},
		{"ptm", func(c *cfg) { c.ATM = cake.PTM }},
		{"atm noatm", func(c *cfg) {}},
		{"overhead 0", func(c *cfg) { c.Raw = false }},
		{"overhead -64", func(c *cfg) { c.Raw, c.Overhead = false, -64 }},
		{"overhead 256", func(c *cfg) { c.Raw, c.Overhead = false, 256 }},
		{"overhead +5", func(c *cfg) { c.Raw, c.Overhead = false, 5 }},
		{"mpu 256", func(c *cfg) { c.MPU = 256 }},
		{"mpu 0", func(c *cfg) {}},
		{"raw", func(c *cfg) {}},
		{"raw overhead 10", func(c *cfg) { c.Overhead = 10 }},
		{"overhead 10 raw", func(c *cfg) {}},
		{"atm raw", func(c *cfg) {}},
		{"raw atm overhead 10", func(c *cfg) { c.ATM, c.Overhead = cake.ATMCells, 10 }},
		{"raw ethernet", func(c *cfg) { c.Overhead, c.MPU = 38, 84 }},
		{"conservative", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 48, cake.ATMCells }},
		{"ipoa-vcmux", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 8, cake.ATMCells }},
		{"ipoa-llcsnap", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 16, cake.ATMCells }},
		{"bridged-vcmux", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 24, cake.ATMCells }},
		{"bridged-llcsnap", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 32, cake.ATMCells }},
		{"pppoa-vcmux", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 10, cake.ATMCells }},
		{"pppoa-llc", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 14, cake.ATMCells }},
		{"pppoe-vcmux", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 32, cake.ATMCells }},
		{"pppoe-llcsnap", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 40, cake.ATMCells }},
		{"pppoe-ptm", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 30, cake.PTM }},
		{"bridged-ptm", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 22, cake.PTM }},
		{"via-ethernet", func(c *cfg) {}},
		{"ethernet", func(c *cfg) { c.Raw, c.Overhead, c.MPU = false, 38, 84 }},
		{"ether-vlan", func(c *cfg) { c.Raw, c.Overhead = false, 4 }},
		{"docsis", func(c *cfg) { c.Raw, c.Overhead, c.MPU = false, 18, 64 }},
		{"atm docsis", func(c *cfg) { c.Raw, c.Overhead, c.MPU = false, 18, 64 }}, // docsis sets noatm
		{"atm ethernet", func(c *cfg) { c.Raw, c.Overhead, c.MPU, c.ATM = false, 38, 84, cake.ATMCells }},
		{"ethernet ether-vlan ether-vlan", func(c *cfg) { c.Raw, c.Overhead, c.MPU = false, 46, 84 }},
		{"pppoe-ptm ether-vlan", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 34, cake.PTM }},
		{"overhead 10 pppoe-ptm", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 40, cake.PTM }},
		{"pppoe-ptm overhead 10", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 10, cake.PTM }},
		{"ether-vlan conservative", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 48, cake.ATMCells }},
		{"conservative ether-vlan", func(c *cfg) { c.Raw, c.Overhead, c.ATM = false, 52, cake.ATMCells }},
		{"ethernet mpu 0", func(c *cfg) { c.Raw, c.Overhead = false, 38 }},
		{"mpu 100 ethernet", func(c *cfg) { c.Raw, c.Overhead, c.MPU = false, 38, 84 }},
		{"overhead 200 ethernet ether-vlan ether-vlan ether-vlan ether-vlan", func(c *cfg) { c.Raw, c.Overhead, c.MPU = false, 254, 84 }},
		// What tc shows reads back.
		{"bandwidth 100Mbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms noatm overhead 38 mpu 84",
			func(c *cfg) { c.Bandwidth, c.Raw, c.Overhead, c.MPU = 12_500_000, false, 38, 84 }},
		{"bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100.0ms raw overhead 0", func(c *cfg) {}},
	} {
		t.Run(tc.words, func(t *testing.T) {
			want := cake.DefaultConfig()
			tc.want(&want)
			got, err := cake.ParseQdisc(tc.words)
			if err != nil {
				t.Fatalf("ParseQdisc(%q) = %v", tc.words, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParseQdisc(%q) (-want +got):\n%s", tc.words, diff)
			}
		})
	}
}

// TestParseQdiscRefuses: words tc refuses, words the netstack cannot do,
// and bounds; each error names the word.
func TestParseQdiscRefuses(t *testing.T) {
	for _, tc := range []struct {
		words string
		want  []string
	}{
		{"nat", []string{"nat", "conntrack", "nonat"}},
		{"bandwidth 10mbit nat", []string{"nat", "conntrack"}},
		{"fwmark 0xff", []string{`fwmark "0xff"`, "leave fwmark out"}},
		{"fwmark 1", []string{`fwmark "1"`, "carry none"}},
		{"fwmark banana", []string{`fwmark "banana"`, "mask of 32 bits"}},
		{"fwmark 0x100000000", []string{"fwmark", "32 bits"}},
		{"fwmark", []string{`"fwmark" needs a value`}},
		{"bandwidth", []string{`"bandwidth" needs a value`}},
		{"bandwidth fast", []string{`bandwidth "fast"`, "rate"}},
		{"bandwidth 10%", []string{`bandwidth "10%"`}},
		{"bandwidth 511bit", []string{`bandwidth "511bit"`, "64 bytes/s"}},
		{"bandwidth 137438953472000000001bps", []string{"bandwidth", "out of range"}},
		{"bandwidth 17179869184000000001bps", []string{`bandwidth "17179869184000000001bps"`, "not shape"}},
		{"rtt", []string{`"rtt" needs a value`}},
		{"rtt 0", []string{`rtt "0"`, "1us or more"}},
		{"rtt 0ms", []string{`rtt "0ms"`, "1us or more"}},
		{"rtt -5ms", []string{`rtt "-5ms"`, "want a time"}},
		{"rtt 1.5us", []string{`rtt "1.5us"`, "whole microseconds"}},
		{"rtt 5m", []string{`rtt "5m"`, `unknown unit "m"`}},
		{"rtt 4294967296us", []string{`rtt "4294967296us"`, "u32 microseconds"}},
		{"rtt 1e3ms", []string{`rtt "1e3ms"`}},
		{"rtt ms", []string{`rtt "ms"`, "want a time"}},
		{"target 0", []string{`target "0"`, "1us or more"}},
		{"target 200ms", []string{`target "200ms"`, "above rtt 100ms"}},
		{"target 200ms rtt 150ms", []string{`target "200ms"`, "above rtt 150ms"}},
		{"lan metro", []string{"lan and metro", "give one"}},
		{"internet internet", []string{"internet and internet"}},
		{"overhead 257", []string{`overhead "257"`, "-64 to 256"}},
		{"overhead -65", []string{`overhead "-65"`, "-64 to 256"}},
		{"overhead 0x10", []string{`overhead "0x10"`, "decimal"}},
		{"overhead", []string{`"overhead" needs a value`}},
		{"overhead 256 ether-vlan", []string{"cake overhead: overhead 260", "-64 to 256"}},
		{"overhead -64 ether-vlan raw", nil}, // raw: 0
		{"mpu 257", []string{`mpu "257"`, "0 to 256"}},
		{"mpu -1", []string{`mpu "-1"`, "0 to 256"}},
		{"memlimit 65535", []string{`memlimit "65535"`, "65536"}},
		{"memlimit 4gb", []string{`memlimit "4gb"`, "2^32-1"}},
		{"memlimit lots", []string{`memlimit "lots"`}},
		{"limit 1000", []string{`unknown word "limit"`, "bandwidth RATE"}},
		{"root cake", []string{`unknown word "root"`}},
		{"Bandwidth 1mbit", []string{`unknown word "Bandwidth"`}},
		{"help", []string{"help", "tc-cake takes", "ack-filter-aggressive"}},
	} {
		t.Run(tc.words, func(t *testing.T) {
			c, err := cake.ParseQdisc(tc.words)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("ParseQdisc(%q) = %v, want it taken", tc.words, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseQdisc(%q) = %v, want an error", tc.words, c)
			}
			if !strings.HasPrefix(err.Error(), "cake") {
				t.Errorf("ParseQdisc(%q) = %q, an error that does not start with cake", tc.words, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ParseQdisc(%q) = %q, want %q in it", tc.words, err, w)
				}
			}
		})
	}
}

// randomConfig returns a valid Config, with values at and near every
// bound.
func randomConfig(r *rand.Rand) cake.Config {
	pick := func(vals ...uint64) uint64 { return vals[r.IntN(len(vals))] }
	c := cake.Config{
		Bandwidth: pick(0, 0, cake.MinBandwidth, 1_250_000, 12_500_000, 125_000_000, 1_500_125, cake.MaxBandwidth, cake.MinBandwidth+r.Uint64N(1<<40)),
		Autorate:  r.IntN(4) == 0,
		Isolation: cake.Isolation(r.IntN(8)),
		Diffserv:  cake.Diffserv(r.IntN(5)),
		Wash:      r.IntN(2) == 0,
		AckFilter: cake.AckFilter(r.IntN(3)),
		SplitGSO:  r.IntN(2) == 0,
		Ingress:   r.IntN(2) == 0,
		Raw:       r.IntN(2) == 0,
		Overhead:  int32(r.IntN(cake.MaxOverhead-cake.MinOverhead+1)) + cake.MinOverhead,
		MPU:       uint32(pick(0, 0, 64, 84, cake.MaxMPU, uint64(r.IntN(cake.MaxMPU+1)))),
		ATM:       cake.ATM(r.IntN(3)),
		Memlimit:  uint32(pick(0, 0, cake.MinMemlimit, math.MaxUint32, 4<<20, cake.MinMemlimit+r.Uint64N(math.MaxUint32-cake.MinMemlimit))),
	}
	us := time.Duration(pick(1, 19, 20, 21, 100, 1000, 100_000, 1_000_000, math.MaxUint32, 1+r.Uint64N(math.MaxUint32))) * time.Microsecond
	c.RTT = us
	c.Target = time.Duration(1+r.Int64N(int64(us/time.Microsecond))) * time.Microsecond
	if r.IntN(2) == 0 {
		c.Target = max(us/time.Microsecond/20, 1) * time.Microsecond
	}
	return c
}

// TestRoundTrip is the property String promises: for valid configs,
// ParseQdisc(c.String()) == c.
func TestRoundTrip(t *testing.T) {
	t.Parallel() // long under -race; shares nothing with the package's other tests
	r := rand.New(rand.NewPCG(1, 29))
	for range 20000 {
		c := randomConfig(r)
		if err := c.Validate(); err != nil {
			t.Fatalf("randomConfig made %+v: %v", c, err)
		}
		got, err := cake.ParseQdisc(c.String())
		if err != nil {
			t.Fatalf("ParseQdisc(%q) = %v", c.String(), err)
		}
		if diff := cmp.Diff(c, got); diff != "" {
			t.Fatalf("ParseQdisc(%q) (-want +got):\n%s", c.String(), diff)
		}
	}
}

// TestFlagParsers: the single values runsc's flags will take.
func TestFlagParsers(t *testing.T) {
	t.Run("ParseBandwidth", func(t *testing.T) {
		for _, tc := range []struct {
			s    string
			want uint64
			err  string
		}{
			{"100mbit", 12_500_000, ""},
			{"1250000", 1_250_000, ""}, // runsc: a bare number is bytes/s
			{"64", 64, ""},
			{"unlimited", 0, ""},
			{"0", 0, ""},
			{"63", 0, "64 bytes/s"},
			{"lots", 0, "or say unlimited"},
			{"", 0, "empty"},
		} {
			got, err := cake.ParseBandwidth(tc.s)
			if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "bandwidth")) {
				t.Errorf("ParseBandwidth(%q) = %d, %v; want %d, error with %q", tc.s, got, err, tc.want, tc.err)
			}
		}
	})
	t.Run("modes", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			parse func(string) (any, error)
			ok    map[string]any
			bad   string
			list  string
		}{
			{"isolation", func(s string) (any, error) { return cake.ParseIsolation(s) },
				map[string]any{"flowblind": cake.FlowBlind, "dual-srchost": cake.DualSrcHost, "triple-isolate": cake.TripleIsolate},
				"triple", "flowblind, srchost, dsthost, hosts, flows, dual-srchost, dual-dsthost or triple-isolate"},
			{"diffserv", func(s string) (any, error) { return cake.ParseDiffserv(s) },
				map[string]any{"diffserv3": cake.Diffserv3, "diffserv": cake.Diffserv4, "besteffort": cake.BestEffort},
				"diffserv5", "diffserv3, diffserv4, diffserv8, besteffort or precedence"},
			{"ack-filter", func(s string) (any, error) { return cake.ParseAckFilter(s) },
				map[string]any{"no-ack-filter": cake.NoAckFilter, "ack-filter-aggressive": cake.AckFilterAggressive},
				"on", "no-ack-filter, ack-filter or ack-filter-aggressive"},
			{"atm", func(s string) (any, error) { return cake.ParseATM(s) },
				map[string]any{"noatm": cake.NoATM, "atm": cake.ATMCells, "ptm": cake.PTM},
				"adsl", "noatm, atm or ptm"},
		} {
			for s, want := range tc.ok {
				if got, err := tc.parse(s); err != nil || got != want {
					t.Errorf("Parse %s(%q) = %v, %v; want %v", tc.name, s, got, err, want)
				}
			}
			if _, err := tc.parse(tc.bad); err == nil || !strings.Contains(err.Error(), tc.list) || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("Parse %s(%q) = %v; want an error naming %s and listing %q", tc.name, tc.bad, err, tc.name, tc.list)
			}
		}
	})
	t.Run("ParseRTT", func(t *testing.T) {
		for _, tc := range []struct {
			s           string
			rtt, target time.Duration
			err         string
		}{
			{"metro", 10 * time.Millisecond, 500 * time.Microsecond, ""},
			{"interplanetary", 1000 * time.Second, 50 * time.Second, ""},
			// tc-cake(8)'s interplanetary (q_cake.c sends 1000s).
			{"3600s", 3600 * time.Second, 180 * time.Second, ""},
			{"10s", 10 * time.Second, 500 * time.Millisecond, ""},
			{"50ms", 50 * time.Millisecond, 2500 * time.Microsecond, ""},
			{"1", time.Microsecond, time.Microsecond, ""},
			{"0", 0, 0, "1us or more"},
			{"50 ms", 0, 0, "unknown unit"},
			{"moon", 0, 0, "datacentre, lan, metro, regional, internet, oceanic, satellite or interplanetary"},
		} {
			rtt, target, err := cake.ParseRTT(tc.s)
			if tc.err == "" && (err != nil || rtt != tc.rtt || target != tc.target) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "rtt")) {
				t.Errorf("ParseRTT(%q) = %v, %v, %v; want %v, %v, error with %q", tc.s, rtt, target, err, tc.rtt, tc.target, tc.err)
			}
		}
	})
	t.Run("numbers", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			parse func(string) (int64, error)
			s     string
			want  int64
			err   string
		}{
			{"overhead", func(s string) (int64, error) { n, err := cake.ParseOverhead(s); return int64(n), err }, "-64", -64, ""},
			{"overhead", func(s string) (int64, error) { n, err := cake.ParseOverhead(s); return int64(n), err }, "256", 256, ""},
			{"overhead", func(s string) (int64, error) { n, err := cake.ParseOverhead(s); return int64(n), err }, "-65", 0, "-64 to 256"},
			{"overhead", func(s string) (int64, error) { n, err := cake.ParseOverhead(s); return int64(n), err }, "257", 0, "-64 to 256"},
			{"overhead", func(s string) (int64, error) { n, err := cake.ParseOverhead(s); return int64(n), err }, "ethernet", 0, "-64 to 256"},
			{"mpu", func(s string) (int64, error) { n, err := cake.ParseMPU(s); return int64(n), err }, "256", 256, ""},
			{"mpu", func(s string) (int64, error) { n, err := cake.ParseMPU(s); return int64(n), err }, "0", 0, ""},
			{"mpu", func(s string) (int64, error) { n, err := cake.ParseMPU(s); return int64(n), err }, "+64", 64, ""},
			{"mpu", func(s string) (int64, error) { n, err := cake.ParseMPU(s); return int64(n), err }, "-1", 0, "0 to 256"},
			{"mpu", func(s string) (int64, error) { n, err := cake.ParseMPU(s); return int64(n), err }, "257", 0, "0 to 256"},
			{"memlimit", func(s string) (int64, error) { n, err := cake.ParseMemlimit(s); return int64(n), err }, "64kb", 65536, ""},
			{"memlimit", func(s string) (int64, error) { n, err := cake.ParseMemlimit(s); return int64(n), err }, "0", 0, ""},
			{"memlimit", func(s string) (int64, error) { n, err := cake.ParseMemlimit(s); return int64(n), err }, "4294967295", math.MaxUint32, ""},
			{"memlimit", func(s string) (int64, error) { n, err := cake.ParseMemlimit(s); return int64(n), err }, "4294967296", 0, "2^32-1"},
			{"memlimit", func(s string) (int64, error) { n, err := cake.ParseMemlimit(s); return int64(n), err }, "65535", 0, "65536"},
		} {
			got, err := tc.parse(tc.s)
			if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "cake "+tc.name)) {
				t.Errorf("Parse %s(%q) = %d, %v; want %d, error with %q", tc.name, tc.s, got, err, tc.want, tc.err)
			}
		}
	})
}

// TestPresets: each preset is what "rtt" with its time would set (q_cake.c
// sends every preset's target as its rtt/20), and Presets hands out a
// copy.
func TestPresets(t *testing.T) {
	ps := cake.Presets()
	if len(ps) != 8 {
		t.Fatalf("Presets() has %d presets, want tc-cake's 8", len(ps))
	}
	for _, p := range ps {
		named, err := cake.ParseQdisc(p.Name)
		if err != nil {
			t.Fatalf("ParseQdisc(%q) = %v", p.Name, err)
		}
		timed, err := cake.ParseQdisc(fmt.Sprintf("rtt %dus", p.RTT/time.Microsecond))
		if err != nil {
			t.Fatalf("ParseQdisc(rtt %v) = %v", p.RTT, err)
		}
		if named.RTT != p.RTT || named.Target != p.Target || timed != named {
			t.Errorf("preset %s: %v/%v, rtt %v gives %v/%v; want %v/%v for both", p.Name, named.RTT, named.Target, p.RTT, timed.RTT, timed.Target, p.RTT, p.Target)
		}
	}
	ps[0].RTT = time.Hour
	if cake.Presets()[0].RTT == time.Hour {
		t.Error("changing what Presets returned changed the presets")
	}
}
