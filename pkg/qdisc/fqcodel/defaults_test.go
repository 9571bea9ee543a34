package fqcodel_test

import (
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// linuxConfig is what Linux's fq_codel runs with when tc gives it cfg (0
// fields: not given) on a device whose psched_mtu (MTU plus hard header
// length) is mtu. The defaults are the kernel's, as literals:
// net/sched/sch_fq_codel.c fq_codel_init sets limit 10*1024, flows_cnt
// 1024, memory_limit 32 << 20, drop_batch_size 64, quantum psched_mtu, and
// cparams.ecn true after include/net/codel_impl.h codel_params_init
// (interval MS2TIME(100), target MS2TIME(5), ce_threshold disabled, ecn
// false). fq_codel_change raises a given quantum to 256, clamps
// memory_limit to 1 << 31, and drop_batch_size to at least 1.
func linuxConfig(cfg fqcodel.Config, mtu uint32) fqcodel.Config {
	c := fqcodel.Config{
		Limit:       10 * 1024,
		Flows:       1024,
		Target:      5 * time.Millisecond,
		Interval:    100 * time.Millisecond,
		Quantum:     mtu,
		MemoryLimit: 32 << 20,
		DropBatch:   64,
		NoECN:       cfg.NoECN,
	}
	if cfg.Limit != 0 {
		c.Limit = cfg.Limit
	}
	if cfg.Flows != 0 {
		c.Flows = cfg.Flows
	}
	if cfg.Target != 0 {
		c.Target = cfg.Target
	}
	if cfg.Interval != 0 {
		c.Interval = cfg.Interval
	}
	if cfg.Quantum != 0 {
		c.Quantum = max(256, cfg.Quantum)
	}
	if cfg.MemoryLimit != 0 {
		c.MemoryLimit = min(1<<31, cfg.MemoryLimit)
	}
	if cfg.DropBatch != 0 {
		c.DropBatch = cfg.DropBatch
	}
	return c
}

// TestDefaults checks the zero Config against Linux's fq_codel defaults,
// written here as literals from the kernel (see linuxConfig), not the
// package's constants: on an Ethernet link of MTU 1500 (psched_mtu 1514)
// and a loopback-like one of 65536 with no header, through NewScheduler and
// New (which takes psched_mtu from the link), and in what `tc qdisc show`
// prints. ECN is on by default in fq_codel (unlike in CoDel's own
// defaults); ce_threshold is disabled, which the package shows by having
// none (TestECNConformance checks that nothing is marked below target).
func TestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mtu       uint32
		headerLen uint16
		want      fqcodel.Config
	}{
		{"Ethernet", 1500, 14, fqcodel.Config{Limit: 10240, Flows: 1024, Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond,
			Quantum: 1514, MemoryLimit: 33554432, DropBatch: 64}},
		{"64 KiB MTU, no header", 65536, 0, fqcodel.Config{Limit: 10240, Flows: 1024, Target: 5 * time.Millisecond, Interval: 100 * time.Millisecond,
			Quantum: 65536, MemoryLimit: 33554432, DropBatch: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			psched := tc.mtu + uint32(tc.headerLen)
			if got := linuxConfig(fqcodel.Config{}, psched); got != tc.want {
				t.Fatalf("the test's Linux defaults %+v, want %+v", got, tc.want)
			}
			q, err := fqcodel.NewScheduler(fqcodel.Config{}, psched)
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Config(); got != tc.want {
				t.Errorf("NewScheduler: %+v; Linux %+v", got, tc.want)
			}
			if p := q.CoDelParams(); p.Target != 4882 || p.Interval != 97656 || p.MTU != psched || !p.ECN {
				t.Errorf("CoDel params %+v; Linux: target 4882, interval 97656 (5 ms and 100 ms >> 10), mtu %d, ecn", p, psched)
			}
			link := qdisctest.NewLink(nil)
			link.LinkMTU, link.HeaderLength = tc.mtu, tc.headerLen
			d, err := fqcodel.New(link, faketime.NewManualClock(), fqcodel.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if got := d.Config(); got != tc.want {
				t.Errorf("New: %+v; Linux %+v", got, tc.want)
			}
			if s := d.String(); !strings.Contains(s, " ecn ") || !strings.Contains(s, "limit 10240p flows 1024") {
				t.Errorf("tc shows %q; want limit 10240p flows 1024 ... ecn", s)
			}
		})
	}
}
