package fqcodel

import (
	"fmt"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/codel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// String describes the configuration as `tc qdisc show` prints fq_codel
// (iproute2's fq_codel_print_opt, from what fq_codel_dump reports),
// field for field:
//
//	fq_codel limit 10240p flows 1024 quantum 1514 target 5ms ce_threshold 1ms interval 100ms memory_limit 32Mb ecn drop_batch 64
//
// Times are what Linux keeps, CoDel's 1024 ns units, in microseconds
// (5ms is 4999us, which tc prints as 5ms); ce_threshold only when set,
// ce_threshold_selector only with a selector or mask; ecn only when on.
func (c Config) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fq_codel limit %dp flows %d quantum %d target %s", c.Limit, c.Flows, c.Quantum, tcTime(c.Target))
	if c.CEThreshold != 0 {
		fmt.Fprintf(&b, " ce_threshold %s", tcTime(c.CEThreshold))
	}
	if c.CESelector != 0 || c.CEMask != 0 {
		fmt.Fprintf(&b, " ce_threshold_selector %s/%s", cHex(c.CESelector), cHex(c.CEMask))
	}
	fmt.Fprintf(&b, " interval %s memory_limit %s", tcTime(c.Interval), rate.FormatSize(uint64(c.MemoryLimit)))
	if !c.NoECN {
		b.WriteString(" ecn")
	}
	fmt.Fprintf(&b, " drop_batch %d", c.DropBatch)
	return b.String()
}

// tcTime is a CoDel time as tc prints it: Linux's codel_time_to_us of
// the time it keeps, through sprint_time.
func tcTime(d time.Duration) string {
	us := uint64(codel.DurationOf(d)) << codel.Shift / 1000
	return rate.FormatTCTime(float64(us))
}

// cHex is C's %#x: 0 for 0, 0x-prefixed otherwise.
func cHex(v uint8) string {
	if v == 0 {
		return "0"
	}
	return fmt.Sprintf("%#x", v)
}
