package fqcodel_test

import (
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// TestTCShowLines holds fq_codel's show lines to what iproute2's
// q_fq_codel.c prints (fq_codel_print_opt, fq_codel_print_xstats) for
// what Linux's fq_codel_dump reports, worked by hand: this machine's
// kernel has no sch_fq_codel to capture from. Times come back from the
// kernel as codel_time_to_us of (us*1000)>>10, and print with
// sprint_time (%.3g ms above 1 ms): 5ms is 4999us, printed 5ms; 1ms is
// 999us, printed 999us.
func TestTCShowLines(t *testing.T) {
	for _, tc := range []struct {
		tc   string // the words given to tc qdisc add ... fq_codel
		cfg  fqcodel.Config
		want string // after "qdisc fq_codel 8001: root refcnt 2 "
	}{
		{"fq_codel", fqcodel.Config{},
			"limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64"},
		{"limit 1000 flows 256 quantum 300 target 2.5ms interval 30ms memory_limit 4mb noecn drop_batch 16",
			fqcodel.Config{Limit: 1000, Flows: 256, Quantum: 300, Target: 2500 * time.Microsecond, Interval: 30 * time.Millisecond, MemoryLimit: 4 << 20, NoECN: true, DropBatch: 16},
			"limit 1000p flows 256 quantum 300 target 2.5ms interval 30ms memory_limit 4Mb drop_batch 16"},
		{"target 1ms ce_threshold 1ms", fqcodel.Config{Target: time.Millisecond, CEThreshold: time.Millisecond},
			"limit 10240p flows 1024 quantum 1514 target 999us ce_threshold 999us interval 100ms memory_limit 32Mb ecn drop_batch 64"},
		{"target 123us ce_threshold 2ms ce_threshold_selector 0x4/0xfc", fqcodel.Config{Target: 123 * time.Microsecond, CEThreshold: 2 * time.Millisecond, CESelector: 4, CEMask: 0xfc},
			"limit 10240p flows 1024 quantum 1514 target 122us ce_threshold 2ms ce_threshold_selector 0x4/0xfc interval 100ms memory_limit 32Mb ecn drop_batch 64"},
		// 1s comes back as 999999us: sprint_time's %.3g of 999.999 ms is
		// 1e+03, as tc prints it; 2s is whole units of 1024 ns.
		{"ce_threshold 1s ce_threshold_selector 0x0/0x3 interval 2s", fqcodel.Config{CEThreshold: time.Second, CEMask: 3, Interval: 2 * time.Second},
			"limit 10240p flows 1024 quantum 1514 target 5ms ce_threshold 1e+03ms ce_threshold_selector 0/0x3 interval 2s memory_limit 32Mb ecn drop_batch 64"},
		{"quantum 100 memory_limit 3gb", fqcodel.Config{Quantum: 100, MemoryLimit: 3 << 30},
			"limit 10240p flows 1024 quantum 256 target 5ms interval 100ms memory_limit 2Gb ecn drop_batch 64"},
	} {
		q, err := fqcodel.NewScheduler(tc.cfg, 1514)
		if err != nil {
			t.Errorf("tc qdisc add dev eth0 root %s: %v", tc.tc, err)
			continue
		}
		if got, want := q.Config().String(), "fq_codel "+tc.want; got != want {
			t.Errorf("tc qdisc add dev eth0 root %s:\n got %s\nwant %s", tc.tc, got, want)
		}
	}
}

// TestTCShowXStats holds fq_codel's counters to fq_codel_print_xstats:
// ce_mark, memory_used and drop_overmemory only when not 0.
func TestTCShowXStats(t *testing.T) {
	for _, tc := range []struct {
		x    fqcodel.XStats
		want string
	}{
		{fqcodel.XStats{MaxPacket: 1514, DropOverlimit: 3, NewFlowCount: 2, ECNMark: 1, OldFlowsLen: 1},
			"  maxpacket 1514 drop_overlimit 3 new_flow_count 2 ecn_mark 1\n  new_flows_len 0 old_flows_len 1"},
		{fqcodel.XStats{MaxPacket: 1514, DropOverlimit: 3, NewFlowCount: 2, ECNMark: 1, CEMark: 4, MemoryUsage: 6000, DropOvermemory: 2, NewFlowsLen: 1},
			"  maxpacket 1514 drop_overlimit 3 new_flow_count 2 ecn_mark 1 ce_mark 4 memory_used 6000 drop_overmemory 2\n  new_flows_len 1 old_flows_len 0"},
	} {
		if got := tc.x.String(); got != tc.want {
			t.Errorf("%+v:\n got %q\nwant %q", tc.x, got, tc.want)
		}
	}
}

// TestParse checks tc-fq_codel(8)'s words, each as fq_codel_parse_opt
// reads it, and that what they give prints back as tc shows it.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		words string
		want  fqcodel.Config
	}{
		{"fq_codel", fqcodel.Config{}},
		{"root handle 1: fq_codel limit 1000 flows 0x100 quantum 300 target 2.5ms interval 30ms memory_limit 4mb drop_batch 16 noecn",
			fqcodel.Config{Limit: 1000, Flows: 256, Quantum: 300, Target: 2500 * time.Microsecond, Interval: 30 * time.Millisecond, MemoryLimit: 4 << 20, DropBatch: 16, NoECN: true}},
		{"ce_threshold 2ms ce_threshold_selector 0x4/0xfc ecn", fqcodel.Config{CEThreshold: 2 * time.Millisecond, CESelector: 4, CEMask: 0xfc}},
		{"ce_threshold 0", fqcodel.Config{CEThreshold: time.Microsecond}},
		{"target 500 limit 10 limit 20", fqcodel.Config{Target: 500 * time.Microsecond, Limit: 20}},
	} {
		got, err := fqcodel.Parse(tc.words)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.words, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.words, got, tc.want)
		}
	}
	for _, tc := range []struct{ words, says string }{
		{"limit ten", "want a count"},
		{"flows 100000", "flows"},
		{"target 5 parsecs", "unknown word"},
		{"ce_threshold_selector 0x4", "VALUE/MASK"},
		{"ce_threshold_selector 0x4/0x100", "each a byte"},
		{"ce_threshold_selector 0x4/0xfc", "needs a ce_threshold"},
		{"interval", "needs a value"},
		{"quantum 2mb", "want a count"},
	} {
		if _, err := fqcodel.Parse(tc.words); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", tc.words, err, tc.says)
		}
	}
}
