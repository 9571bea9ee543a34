package tbf_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestConfigBounds: a Config outside Linux's bounds (or ours) is a
// *ConfigError from New and from Check, naming the field, with a message
// that names the bound. An overhead of -65535, once accepted, charged
// every packet of up to 64 KiB nothing.
func TestConfigBounds(t *testing.T) {
	const peak = 10 * mbit
	for _, tc := range []struct {
		name  string
		cfg   tbf.Config
		field string
		says  string
	}{
		{"overhead -65535 (packets free)", tbf.Config{Rate: mbit, Burst: 1 << 20, Overhead: -65535}, "overhead", "give 0 to 65535 bytes"},
		{"overhead -1", tbf.Config{Rate: mbit, Burst: 12500, Overhead: -1}, "overhead", "unsigned 16 bits"},
		{"overhead 65536", tbf.Config{Rate: mbit, Burst: 1 << 20, Overhead: 65536}, "overhead", "give 0 to 65535 bytes"},
		{"overhead the size of burst", tbf.Config{Rate: mbit, Burst: 12500, Overhead: 12500}, "overhead", "not below burst 12500"},
		{"overhead above burst", tbf.Config{Rate: mbit, Burst: 12500, Overhead: 65535}, "overhead", "not below burst 12500"},
		{"overhead the size of mtu", tbf.Config{Rate: mbit, Burst: 1 << 20, PeakRate: peak, MTU: 1514, Overhead: 1514}, "overhead", "not below mtu 1514"},
		{"mpu 65536", tbf.Config{Rate: mbit, Burst: 1 << 20, MPU: 65536}, "mpu", "give 0 to 65535 bytes"},
		{"mpu 2^32-1", tbf.Config{Rate: mbit, Burst: math.MaxUint32, MPU: math.MaxUint32}, "mpu", "give 0 to 65535 bytes"},
		{"mpu above burst", tbf.Config{Rate: mbit, Burst: 12500, MPU: 12501}, "mpu", "above burst 12500"},
		{"mpu above mtu", tbf.Config{Rate: mbit, Burst: 12500, PeakRate: peak, MTU: 1514, MPU: 1515}, "mpu", "above mtu 1514"},
		{"latency past u32 limit", tbf.Config{Rate: 100 * gbit, Burst: 12500, Latency: time.Hour}, "latency", "limit is u32"},
		// rate*latency past 2^64 bytes once wrapped to a small limit.
		{"latency past 2^64 bytes", tbf.Config{Rate: 1e12, Burst: 1 << 20, Latency: math.MaxInt64}, "latency", "limit is u32"},
		{"backlog past the clock", tbf.Config{Rate: 1, Burst: 1514, Limit: math.MaxUint32, Overhead: 100}, "limit", "2^62 ns"},
		{"backlog from latency past the clock", tbf.Config{Rate: 1, Burst: 1514, Latency: 100 * 365 * 24 * time.Hour, Overhead: 100}, "latency", "2^62 ns"},
		{"backlog of many queues past the clock", tbf.Config{Rate: 1000, Burst: 1514, Limit: 1 << 30, MPU: 1514, Lanes: tbf.MaxLanes}, "limit", "lower limit, overhead or mpu"},
		{"rate 0", tbf.Config{Burst: 12500}, "rate", "rate is 0"},
		{"burst 0", tbf.Config{Rate: mbit}, "burst", "burst is 0"},
		{"peakrate equal to rate", tbf.Config{Rate: mbit, Burst: 12500, PeakRate: mbit, MTU: 1514}, "peakrate", "must be above rate"},
		{"peakrate without mtu", tbf.Config{Rate: mbit, Burst: 12500, PeakRate: peak}, "mtu", "peakrate needs mtu"},
		{"negative latency", tbf.Config{Rate: mbit, Burst: 12500, Latency: -1}, "latency", "negative"},
		{"lanes above 1024", tbf.Config{Rate: mbit, Burst: 12500, Lanes: tbf.MaxLanes + 1}, "lanes", "1 to 1024"},
		{"slack above 1s", tbf.Config{Rate: mbit, Burst: 12500, Slack: tbf.MaxSlack + 1}, "slack", "up to 1s"},
		{"slack below NoSlack", tbf.Config{Rate: mbit, Burst: 12500, Slack: -2}, "slack", "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				var ce *tbf.ConfigError
				if !errors.As(err, &ce) || ce.Field != tc.field {
					t.Fatalf("%s(%+v) = %v; want a ConfigError naming %s", what, tc.cfg, err, tc.field)
				}
				if !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%s: error %q does not say %q", what, err, tc.says)
				}
			}
			d, err := tbf.New(qdisctest.NewLink(nil), faketime.NewManualClock(), tc.cfg)
			if d != nil {
				d.Close()
			}
			check("New", err)
			check("Check", tc.cfg.Check())
		})
	}
}

// TestConfigCheckLink: Check takes what only the link can refuse, New
// refuses it; a child's own settings are checked as it is made, and
// Check refuses a limit beside one.
func TestConfigCheckLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tbf.Config
	}{
		{"burst below the link's packet", tbf.Config{Rate: mbit, Burst: 1000}},
		{"mtu below the link's packet", tbf.Config{Rate: mbit, Burst: 12500, PeakRate: 10 * mbit, MTU: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Check(); err != nil {
				t.Errorf("Check() = %v; want nil (only the link can refuse it)", err)
			}
			d, err := tbf.New(qdisctest.NewLink(nil), faketime.NewManualClock(), tc.cfg)
			if err == nil {
				d.Close()
				t.Errorf("New(%+v) = nil error; want the link's", tc.cfg)
			}
		})
	}
	// A child is checked as it is made; the tbf checks what it holds
	// with one.
	var ce *fqcodel.ConfigError
	if _, err := fqcodel.NewQueue(fqcodel.Config{Quantum: 1 << 31}, 1514, nil); !errors.As(err, &ce) || ce.Field != "quantum" {
		t.Errorf("an fq_codel child of quantum 2^31: %v; want an fqcodel.ConfigError naming quantum", err)
	}
	child := tbf.Config{Rate: mbit, Burst: 12500, Limit: 100000, Child: fqChild(fqcodel.Config{})}
	var te *tbf.ConfigError
	if err := child.Check(); !errors.As(err, &te) || te.Field != "limit" || !strings.Contains(err.Error(), "fq_codel") {
		t.Errorf("Check() with a limit and an fq_codel child = %v; want a ConfigError naming limit and the child", err)
	}
}

// TestConfigAtBounds: the largest overhead and mpu Linux takes are
// accepted, and packets still leave; an overhead that makes a full-size
// packet cost more than burst bytes is accepted too, since the bucket's
// depth is charged the same overhead (as Linux's tbf_change does given
// TCA_TBF_BURST): a full-size packet costs exactly the bucket.
func TestConfigAtBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tbf.Config
		size int
		// wait is the time from the first packet to the second: their
		// charges, overhead and mpu included, past the bucket's depth, at
		// the rate.
		wait time.Duration
	}{
		{"overhead 65535", tbf.Config{Rate: mbit, Burst: 66000, Overhead: tbf.MaxOverhead}, 1514, time.Duration(2*(1514+65535)-(66000+65535)) * time.Second / mbit},
		{"mpu 65535", tbf.Config{Rate: mbit, Burst: 65535, MPU: tbf.MaxMPU}, 1514, 65535 * time.Second / mbit},
		{"mpu the size of burst", tbf.Config{Rate: mbit, Burst: 1514, MPU: 1514}, 100, 1514 * time.Second / mbit},
		{"overhead 100 past a 1514-byte burst", tbf.Config{Rate: mbit, Burst: 1514, Overhead: 100}, 1514, 1614 * time.Second / mbit},
		// The largest bucket at the smallest rate: 4.3e18 ns of credit.
		{"burst 2^32-1 at 1 byte/s", tbf.Config{Rate: 1, Burst: math.MaxUint32, PeakRate: 2, MTU: 1514}, 1514, 757 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Slack = tbf.NoSlack
			clock := faketime.NewManualClock()
			link := qdisctest.NewLink(clock)
			d, err := tbf.New(link, clock, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			for i := 0; i < 2; i++ {
				pkt := qdisctest.MakePacket(tc.size, 0, uint64(i))
				if err := d.WritePacket(pkt); err != nil {
					t.Fatal(err)
				}
				pkt.DecRef()
			}
			// The first leaves from the full bucket, the second after wait.
			qdisctest.WaitQuiescent(t, d)
			if n, _ := link.Count(); n != 1 {
				t.Fatalf("%d packets sent at once, want 1", n)
			}
			clock.Advance(tc.wait - time.Microsecond)
			qdisctest.WaitQuiescent(t, d)
			if n, _ := link.Count(); n != 1 {
				t.Fatalf("%d packets sent before %v, want 1", n, tc.wait)
			}
			clock.Advance(time.Microsecond)
			qdisctest.WaitQuiescent(t, d)
			if n, _ := link.Count(); n != 2 {
				t.Errorf("%d packets sent after %v, want 2", n, tc.wait)
			}
		})
	}
}
