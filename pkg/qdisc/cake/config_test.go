package cake_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// TestDefaultConfig: no words give cake_init's configuration, which tc
// shows as tc-cake(8)'s example does (with bandwidth unlimited).
func TestDefaultConfig(t *testing.T) {
	c := cake.DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	const want = "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0"
	if got := c.String(); got != want {
		t.Errorf("DefaultConfig().String() = %q, want %q", got, want)
	}
	parsed, err := cake.ParseQdisc("")
	if err != nil || parsed != c {
		t.Errorf("ParseQdisc(\"\") = %+v, %v; want DefaultConfig() %+v", parsed, err, c)
	}
}

// TestValidate checks every bound: the edge taken, past it refused, with an
// error that names the keyword and the range.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   func(*cake.Config)
		field string // "" if valid
		want  string // in the message
	}{
		{"unlimited", func(c *cake.Config) { c.Bandwidth = 0 }, "", ""},
		{"least bandwidth", func(c *cake.Config) { c.Bandwidth = cake.MinBandwidth }, "", ""},
		{"bandwidth below cake's least", func(c *cake.Config) { c.Bandwidth = cake.MinBandwidth - 1 }, "bandwidth", "64 bytes/s"},
		{"bandwidth 1 byte/s", func(c *cake.Config) { c.Bandwidth = 1 }, "bandwidth", "64 bytes/s"},
		{"largest bandwidth", func(c *cake.Config) { c.Bandwidth = cake.MaxBandwidth }, "", ""},
		{"bandwidth past cake's time per byte", func(c *cake.Config) { c.Bandwidth = cake.MaxBandwidth + 1 }, "bandwidth", "17179869184000000000 bytes/s"},
		{"bandwidth at 2^64-1", func(c *cake.Config) { c.Bandwidth = math.MaxUint64 }, "bandwidth", "not shape"},
		{"rtt 1us, target 1us", func(c *cake.Config) { c.RTT, c.Target = time.Microsecond, time.Microsecond }, "", ""},
		{"rtt 0", func(c *cake.Config) { c.RTT = 0 }, "rtt", "1us to 1h11m34.967295s"},
		{"rtt negative", func(c *cake.Config) { c.RTT = -time.Millisecond }, "rtt", "out of range"},
		{"rtt at u32 us", func(c *cake.Config) { c.RTT = cake.MaxTime }, "", ""},
		{"rtt past u32 us", func(c *cake.Config) { c.RTT = cake.MaxTime + time.Microsecond }, "rtt", "u32 microseconds"},
		{"rtt not whole us", func(c *cake.Config) { c.RTT = 100*time.Millisecond + 1 }, "rtt", "whole microseconds"},
		{"target 0", func(c *cake.Config) { c.Target = 0 }, "target", "1us to"},
		{"target not whole us", func(c *cake.Config) { c.Target = 1500 * time.Nanosecond }, "target", "give 1µs or 2µs"},
		{"target at rtt", func(c *cake.Config) { c.Target = c.RTT }, "", ""},
		{"target above rtt", func(c *cake.Config) { c.Target = c.RTT + time.Microsecond }, "target", "above rtt 100ms"},
		{"every isolation", func(c *cake.Config) { c.Isolation = cake.FlowBlind }, "", ""},
		{"isolation past triple-isolate", func(c *cake.Config) { c.Isolation = cake.TripleIsolate + 1 }, "isolation", "flowblind, srchost, dsthost, hosts, flows, dual-srchost, dual-dsthost or triple-isolate"},
		{"nat", func(c *cake.Config) { c.NAT = true }, "nat", "say nonat"},
		{"precedence", func(c *cake.Config) { c.Diffserv = cake.Precedence }, "", ""},
		{"diffserv past precedence", func(c *cake.Config) { c.Diffserv = cake.Precedence + 1 }, "diffserv", "diffserv3, diffserv4, diffserv8, besteffort or precedence"},
		{"ack-filter-aggressive", func(c *cake.Config) { c.AckFilter = cake.AckFilterAggressive }, "", ""},
		{"ack filter past aggressive", func(c *cake.Config) { c.AckFilter = cake.AckFilterAggressive + 1 }, "ack-filter", "no-ack-filter, ack-filter or ack-filter-aggressive"},
		{"overhead -64", func(c *cake.Config) { c.Overhead = -64 }, "", ""},
		{"overhead -65", func(c *cake.Config) { c.Overhead = -65 }, "overhead", "-64 to 256"},
		{"overhead 256", func(c *cake.Config) { c.Overhead = 256 }, "", ""},
		{"overhead 257", func(c *cake.Config) { c.Overhead = 257 }, "overhead", "-64 to 256"},
		{"mpu 256", func(c *cake.Config) { c.MPU = 256 }, "", ""},
		{"mpu 257", func(c *cake.Config) { c.MPU = 257 }, "mpu", "0 to 256"},
		{"ptm", func(c *cake.Config) { c.ATM = cake.PTM }, "", ""},
		{"atm past ptm", func(c *cake.Config) { c.ATM = cake.PTM + 1 }, "atm", "noatm, atm or ptm"},
		{"memlimit 64Kb", func(c *cake.Config) { c.Memlimit = cake.MinMemlimit }, "", ""},
		{"memlimit below 64Kb", func(c *cake.Config) { c.Memlimit = cake.MinMemlimit - 1 }, "memlimit", "65536"},
		{"memlimit 2^32-1", func(c *cake.Config) { c.Memlimit = math.MaxUint32 }, "", ""},
		{"fwmark 0", func(c *cake.Config) { c.FwMark = 0 }, "", ""},
		{"fwmark", func(c *cake.Config) { c.FwMark = 0xff }, "fwmark", "leave fwmark out"},
		{"every flag", func(c *cake.Config) {
			c.Autorate, c.Wash, c.SplitGSO, c.Ingress, c.Raw = true, true, false, true, false
		}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cake.DefaultConfig()
			tc.set(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *cake.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate() = %v, want a *ConfigError for %s", err, tc.field)
			}
			if ce.Field != tc.field || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "cake "+tc.field+": ") {
				t.Errorf("Validate() = %q (field %q), want field %q and %q in the message", err, ce.Field, tc.field, tc.want)
			}
		})
	}
}

// TestString: tc's words, in cake_print_opt's order, with values exact.
func TestString(t *testing.T) {
	d := cake.DefaultConfig
	for _, tc := range []struct {
		name string
		c    cake.Config
		want string
	}{
		{"tc-cake(8)'s example, bandwidth 100Mbit ethernet", func() cake.Config {
			c := d()
			c.Bandwidth, c.Raw, c.Overhead, c.MPU = 12_500_000, false, 38, 84
			return c
		}(), "bandwidth 100Mbit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms noatm overhead 38 mpu 84"},
		{"everything not the default", cake.Config{
			Bandwidth: 1_500_125, Autorate: true, RTT: 1500 * time.Microsecond, Target: 100 * time.Microsecond,
			Isolation: cake.DualDstHost, Diffserv: cake.Diffserv8, Wash: true, AckFilter: cake.AckFilterAggressive,
			SplitGSO: false, Ingress: true, Raw: false, Overhead: -10, MPU: 64, ATM: cake.ATMCells, Memlimit: 5 << 20,
		}, "bandwidth 12001Kbit autorate-ingress diffserv8 dual-dsthost nonat wash ingress ack-filter-aggressive no-split-gso rtt 1.5ms target 100us atm overhead -10 mpu 64 memlimit 5Mb"},
		{"raw with ptm", func() cake.Config { c := d(); c.ATM, c.Overhead = cake.PTM, 8; return c }(),
			"bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw ptm overhead 8"},
		{"times in s and us, odd sizes", func() cake.Config {
			c := d()
			c.RTT, c.Target, c.Memlimit, c.Bandwidth = 1000*time.Second, 50*time.Second, 70001, 64
			return c
		}(), "bandwidth 512bit diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 1000s raw overhead 0 memlimit 70001b"},
		{"rtt 1.000001s, target rtt/20 left out", func() cake.Config {
			c := d()
			c.RTT, c.Target = 1000001*time.Microsecond, 50000*time.Microsecond
			return c
		}(), "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 1.000001s raw overhead 0"},
		{"rtt 19us: tc's target is 1us", func() cake.Config {
			c := d()
			c.RTT, c.Target = 19*time.Microsecond, time.Microsecond
			return c
		}(), "bandwidth unlimited diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 19us raw overhead 0"},
		{"a rate past 64 bits of bits", func() cake.Config { c := d(); c.Bandwidth = math.MaxUint64/8 + 1; return c }(),
			"bandwidth 2305843009213693952Bps diffserv3 triple-isolate nonat nowash no-ack-filter split-gso rtt 100ms raw overhead 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.String(); got != tc.want {
				t.Errorf("String() = %q\nwant         %q", got, tc.want)
			}
		})
	}
}

// TestWireLen: cake_calc_overhead's arithmetic on hand-worked packets.
func TestWireLen(t *testing.T) {
	d := cake.DefaultConfig
	with := func(raw bool, overhead int32, mpu uint32, atm cake.ATM) cake.Config {
		c := d()
		c.Raw, c.Overhead, c.MPU, c.ATM = raw, overhead, mpu, atm
		return c
	}
	for _, tc := range []struct {
		name        string
		c           cake.Config
		length, off uint32
		want        uint64
	}{
		{"raw: the length as handed", d(), 1514, 14, 1514},
		{"raw counts the header", with(true, 4, 0, cake.NoATM), 1514, 14, 1518},
		{"ethernet: 1500 + 38", with(false, 38, 84, cake.NoATM), 1514, 14, 1538},
		{"ethernet: a 46-byte packet is 84 (mpu)", with(false, 38, 84, cake.NoATM), 46, 14, 84},
		{"ethernet: a 47-byte packet is 84 (mpu)", with(false, 38, 84, cake.NoATM), 60, 14, 84},
		{"ethernet: a 61-byte packet is 85", with(false, 38, 84, cake.NoATM), 61, 14, 85},
		{"pppoe-vcmux: 1532 bytes are 32 cells", with(false, 32, 0, cake.ATMCells), 1514, 14, 32 * 53},
		{"atm: 48 bytes are one cell", with(false, 0, 0, cake.ATMCells), 48, 0, 53},
		{"atm: 49 bytes are two cells", with(false, 0, 0, cake.ATMCells), 49, 0, 106},
		{"atm: 0 bytes are no cell", with(false, 0, 0, cake.ATMCells), 0, 0, 0},
		{"bridged-ptm: 1522 + 24", with(false, 22, 0, cake.PTM), 1514, 14, 1546},
		{"ptm: 64 bytes + 1", with(false, 0, 0, cake.PTM), 64, 0, 65},
		{"ptm: 65 bytes + 2", with(false, 0, 0, cake.PTM), 65, 0, 67},
		{"negative overhead stops at 0", with(true, -64, 0, cake.NoATM), 40, 0, 0},
		{"negative overhead, mpu", with(true, -64, 60, cake.NoATM), 100, 0, 60},
		{"shorter than its header: 0 + overhead", with(false, 10, 0, cake.NoATM), 10, 14, 10},
		{"conservative on the largest length", with(false, 48, 0, cake.ATMCells), math.MaxUint32, 0, (uint64(math.MaxUint32) + 48 + 47) / 48 * 53},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cake.WireLen(tc.c, tc.length, tc.off); got != tc.want {
				t.Errorf("WireLen(%v, %d, %d) = %d, want %d", tc.c, tc.length, tc.off, got, tc.want)
			}
		})
	}
}

// TestMemoryLimit: cake_reconfigure's buffer_limit.
func TestMemoryLimit(t *testing.T) {
	d := cake.DefaultConfig
	for _, tc := range []struct {
		name string
		c    cake.Config
		mtu  uint32
		want uint32
	}{
		{"memlimit is what it says", func() cake.Config { c := d(); c.Memlimit = 1 << 20; return c }(), 1514, 1 << 20},
		{"memlimit is not capped by the mtu", func() cake.Config { c := d(); c.Memlimit = math.MaxUint32; return c }(), 68, math.MaxUint32},
		{"unlimited: 10240 packets", d(), 1514, 10240 * 1514},
		{"100Mbit for 4 rtts of 100ms", func() cake.Config { c := d(); c.Bandwidth = 12_500_000; return c }(), 1514, 5_000_000},
		{"1Mbit: at least 4Mb", func() cake.Config { c := d(); c.Bandwidth = 125_000; return c }(), 1514, 4 << 20},
		{"4Mb is capped by 10240 small packets", func() cake.Config { c := d(); c.Bandwidth = 125_000; return c }(), 68, 10240 * 68},
		{"10Gbit, rtt 1000s: saturates, then capped", func() cake.Config {
			c := d()
			c.Bandwidth, c.RTT = 1_250_000_000, 1000*time.Second
			return c
		}(), 65536 + 14, 10240 * (65536 + 14)},
		{"the largest everything saturates at 2^32-1", func() cake.Config {
			c := d()
			c.Bandwidth, c.RTT = cake.MaxBandwidth, cake.MaxTime
			return c
		}(), math.MaxUint32, math.MaxUint32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.MemoryLimit(tc.mtu); got != tc.want {
				t.Errorf("MemoryLimit(%d) = %d, want %d", tc.mtu, got, tc.want)
			}
		})
	}
}

// TestModeWords: each mode's String is the word its parser reads, and a
// value past the modes says what it is.
func TestModeWords(t *testing.T) {
	for i := cake.FlowBlind; i <= cake.TripleIsolate; i++ {
		if got, err := cake.ParseIsolation(i.String()); err != nil || got != i {
			t.Errorf("ParseIsolation(%q) = %v, %v; want %v", i.String(), got, err, i)
		}
	}
	for d := cake.Diffserv3; d <= cake.Precedence; d++ {
		if got, err := cake.ParseDiffserv(d.String()); err != nil || got != d {
			t.Errorf("ParseDiffserv(%q) = %v, %v; want %v", d.String(), got, err, d)
		}
	}
	for a := cake.NoAckFilter; a <= cake.AckFilterAggressive; a++ {
		if got, err := cake.ParseAckFilter(a.String()); err != nil || got != a {
			t.Errorf("ParseAckFilter(%q) = %v, %v; want %v", a.String(), got, err, a)
		}
	}
	for a := cake.NoATM; a <= cake.PTM; a++ {
		if got, err := cake.ParseATM(a.String()); err != nil || got != a {
			t.Errorf("ParseATM(%q) = %v, %v; want %v", a.String(), got, err, a)
		}
	}
	for _, s := range []string{(cake.TripleIsolate + 1).String(), (cake.Precedence + 1).String(), (cake.AckFilterAggressive + 1).String(), (cake.PTM + 1).String()} {
		if !strings.Contains(s, "(") {
			t.Errorf("an unknown mode prints as %q, which looks like a word", s)
		}
	}
}
