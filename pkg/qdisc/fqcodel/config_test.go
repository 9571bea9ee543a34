package fqcodel_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestConfigBounds: every Config outside Linux's bounds (or CoDel's clock)
// is a *ConfigError from NewScheduler, New and Check, naming the field and the
// bound. A quantum of 2^31 or more once made a flow's int32 deficit never
// positive, and the dequeue loop spin.
func TestConfigBounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   fqcodel.Config
		field string
		says  string
	}{
		{"quantum 2^31", fqcodel.Config{Quantum: 1 << 31}, "quantum", "more than 1048576"},
		{"quantum 2^32-1", fqcodel.Config{Quantum: math.MaxUint32}, "quantum", "FQ_CODEL_QUANTUM_MAX"},
		{"quantum 1 MiB + 1", fqcodel.Config{Quantum: 1<<20 + 1}, "quantum", "more than 1048576"},
		{"flows above 65536", fqcodel.Config{Flows: fqcodel.MaxFlows + 1}, "flows", "more than 65536"},
		{"negative target", fqcodel.Config{Target: -time.Millisecond}, "target", "negative"},
		{"negative interval", fqcodel.Config{Interval: -time.Millisecond}, "interval", "negative"},
		{"target past CoDel's clock", fqcodel.Config{Target: fqcodel.MaxInterval + time.Microsecond, Interval: time.Hour}, "target", fqcodel.MaxInterval.String()},
		{"interval past CoDel's clock", fqcodel.Config{Interval: fqcodel.MaxInterval + time.Microsecond}, "interval", fqcodel.MaxInterval.String()},
		{"target above interval", fqcodel.Config{Target: 200 * time.Millisecond}, "target", "above interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				var ce *fqcodel.ConfigError
				if !errors.As(err, &ce) || ce.Field != tc.field {
					t.Fatalf("%s(%+v) = %v; want a ConfigError naming %s", what, tc.cfg, err, tc.field)
				}
				if !strings.Contains(err.Error(), tc.says) {
					t.Errorf("%s: error %q does not say %q", what, err, tc.says)
				}
			}
			q, err := fqcodel.NewScheduler(tc.cfg, 1514)
			if q != nil {
				q.Purge()
			}
			check("NewScheduler", err)
			d, err := fqcodel.New(qdisctest.NewLink(nil), faketime.NewManualClock(), tc.cfg)
			if d != nil {
				d.Close()
			}
			check("New", err)
			check("Check", tc.cfg.Check())
		})
	}
}

// TestConfigAtBounds: the largest quantum, flows and interval, and the
// clamps Linux makes rather than refuse (a given quantum up to 256,
// memory_limit down to 2^31, the default quantum, psched_mtu, down to 1
// MiB), still give a queue that sends.
func TestConfigAtBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  fqcodel.Config
		mtu  uint32
		want fqcodel.Config // the fields checked: Quantum, MemoryLimit
	}{
		{"quantum 1 MiB", fqcodel.Config{Quantum: fqcodel.MaxQuantum}, 1514, fqcodel.Config{Quantum: 1 << 20, MemoryLimit: fqcodel.DefaultMemoryLimit}},
		{"quantum raised to 256", fqcodel.Config{Quantum: 1}, 1514, fqcodel.Config{Quantum: 256, MemoryLimit: fqcodel.DefaultMemoryLimit}},
		{"default quantum of a huge MTU", fqcodel.Config{}, math.MaxUint32, fqcodel.Config{Quantum: 1 << 20, MemoryLimit: fqcodel.DefaultMemoryLimit}},
		// fq_codel_init takes psched_mtu as the quantum unclamped; only a
		// quantum given to fq_codel_change is raised to 256.
		{"default quantum of a tiny MTU", fqcodel.Config{}, 68, fqcodel.Config{Quantum: 68, MemoryLimit: fqcodel.DefaultMemoryLimit}},
		{"memory_limit clamped to 2^31", fqcodel.Config{MemoryLimit: math.MaxUint32}, 1514, fqcodel.Config{Quantum: 1514, MemoryLimit: 1 << 31}},
		{"most flows, longest interval", fqcodel.Config{Flows: fqcodel.MaxFlows, Interval: fqcodel.MaxInterval, Target: fqcodel.MaxInterval}, 1514, fqcodel.Config{Quantum: 1514, MemoryLimit: fqcodel.DefaultMemoryLimit}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := fqcodel.NewScheduler(tc.cfg, tc.mtu)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Purge()
			if got := q.Config(); got.Quantum != tc.want.Quantum || got.MemoryLimit != tc.want.MemoryLimit {
				t.Errorf("quantum %d, memory_limit %d; want %d, %d", got.Quantum, got.MemoryLimit, tc.want.Quantum, tc.want.MemoryLimit)
			}
			for seq := uint64(1); seq <= 3; seq++ {
				q.Enqueue(qdisctest.MakePacket(1500, uint32(seq), seq), 1500, uint32(seq)<<28, 0)
			}
			for seq := uint64(1); seq <= 3; seq++ {
				pkt, _, ok := q.Dequeue(int64(time.Millisecond))
				if !ok {
					t.Fatalf("packet %d not dequeued", seq)
				}
				pkt.DecRef()
			}
		})
	}
	t.Run("New with quantum 1 MiB sends", func(t *testing.T) {
		clock := faketime.NewManualClock()
		link := qdisctest.NewLink(clock)
		d, err := fqcodel.New(link, clock, fqcodel.Config{Quantum: fqcodel.MaxQuantum})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		pkt := qdisctest.MakePacket(1000, 1, 1)
		if err := d.WritePacket(pkt); err != nil {
			t.Fatal(err)
		}
		pkt.DecRef()
		qdisctest.WaitQuiescent(t, d)
		if n, _ := link.Count(); n != 1 {
			t.Errorf("%d packets sent, want 1", n)
		}
	})
}
