package htb

import (
	"fmt"
	"math"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// String prints the class as `tc -s class show` does (iproute2's
// htb_print_opt and its stats), then netqdisc's quota line if it has a
// quota:
//
//	class htb 1:10 parent 1:1 prio 0 rate 10Mbit ceil 20Mbit burst 1600b cburst 1600b
//	 Sent 3000 bytes 2 pkt (dropped 0, overlimits 0 requeues 0)
//	 backlog 0b 0p requeues 0
//	 lended: 2 borrowed: 0 giants: 0
//	 tokens: 1400 ctokens: 700
//
// tokens and ctokens are in tc's units, 64 ns ticks, as the kernel
// reports them. A leaf's grafted qdisc is named by the handle a show gave
// it ("leaf 8002:", LeafHandle), as tc names it; a leaf's default pfifo,
// unnamed on Linux, is not.
func (s ClassStats) String() string { return s.format(false) }

// Detailed prints the class as `tc -s -d class show` does: quantum,
// linklayer, the buckets' cells and mpu, and the level too.
func (s ClassStats) Detailed() string { return s.format(true) }

// Line is the class's line in `tc class show` (with details, `tc -d
// class show`), without the counters.
func (s ClassStats) Line(details bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "class htb %s ", classify.ClassID(s.ID))
	if s.Parent == 0 {
		b.WriteString("root ")
	} else {
		fmt.Fprintf(&b, "parent %s ", classify.ClassID(s.Parent))
	}
	if s.LeafHandle != 0 {
		fmt.Fprintf(&b, "leaf %x: ", s.LeafHandle>>16)
	}
	if s.Level == 0 {
		fmt.Fprintf(&b, "prio %d ", s.Prio)
		if details {
			fmt.Fprintf(&b, "quantum %d ", s.Quantum)
		}
	}
	fmt.Fprintf(&b, "rate %s ", rate.FormatRate(s.Rate))
	if s.Overhead != 0 {
		fmt.Fprintf(&b, "overhead %d ", s.Overhead)
	}
	fmt.Fprintf(&b, "ceil %s ", rate.FormatRate(s.Ceil))
	burst, cburst := shownBuffer(s.Rate, s.Burst), shownBuffer(s.Ceil, s.CBurst)
	if details {
		// Cells of 1 byte: tc's rate tables are unused since Linux 3.8,
		// and a class here is charged to the byte.
		mpu := rate.FormatSize(uint64(s.MPU))
		fmt.Fprintf(&b, "linklayer ethernet burst %s/1 mpu %s cburst %s/1 mpu %s level %d", burst, mpu, cburst, mpu, s.Level)
	} else {
		fmt.Fprintf(&b, "burst %s cburst %s", burst, cburst)
	}
	return b.String()
}

// shownBuffer is a bucket of size bytes at bytesPerSec as tc shows it:
// tc hands the kernel the bucket in 64 ns ticks (tc_calc_xmittime) and
// prints the bytes those ticks hold (tc_calc_xmitsize), so at a high rate
// the size shown is a tick's bytes off the size given, as on Linux.
func shownBuffer(bytesPerSec uint64, size uint32) string {
	return rate.FormatSize(rate.TCXmitSize(bytesPerSec, rate.TCXmitTime(bytesPerSec, uint64(size))))
}

func (s ClassStats) format(details bool) string {
	var b strings.Builder
	b.WriteString(s.Line(details))
	fmt.Fprintf(&b, "\n Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d)\n", s.Bytes, s.Packets, s.Drops, s.Overlimits, s.Requeues)
	fmt.Fprintf(&b, " backlog %s %dp requeues %d\n", rate.FormatSize(s.BacklogBytes), s.BacklogPackets, s.Requeues)
	fmt.Fprintf(&b, " lended: %d borrowed: %d giants: %d\n", s.Lends, s.Borrows, s.Giants)
	fmt.Fprintf(&b, " tokens: %d ctokens: %d", ticks(s.Tokens), ticks(s.CTokens))
	if q := s.Quota; q != nil {
		state := "renews"
		if s.QuotaSpent {
			state = "spent, renews"
		}
		fmt.Fprintf(&b, "\n %v: used %s remaining %s, %s in %v", *q, rate.FormatSize(s.QuotaUsed), rate.FormatSize(q.Bytes-min(s.QuotaUsed, q.Bytes)), state, s.QuotaLeft)
	}
	return b.String()
}

// ticks is PSCHED_NS2TICKS clamped to an int32, as htb_dump_class_stats
// reports tokens.
func ticks(ns int64) int64 { return min(max(ns>>6, math.MinInt32), math.MaxInt32) }

// String describes the qdisc as `tc qdisc show` does after "qdisc", for
// an htb just added (direct_packets_stat 0; Discipline.String has the
// count): "htb 1: r2q 10 default 0x10 direct_packets_stat 0 direct_qlen
// 1000".
func (c Config) String() string { return c.show(0, false) }

// Detailed is String as `tc -d qdisc show` prints it: with the version of
// sch_htb's interface, 3.17 (HTB_VER), after direct_packets_stat.
func (c Config) Detailed() string { return c.show(0, true) }

// show is the qdisc's line with direct packets sent through the direct
// queue. tc prints the default class's minor with C's %#llx, which
// prints 0, not 0x0.
func (c Config) show(direct uint64, details bool) string {
	c = c.withDefaults()
	def := "0"
	if m := c.Default & 0xffff; m != 0 {
		def = fmt.Sprintf("%#x", m)
	}
	ver := ""
	if details {
		ver = " ver 3.17"
	}
	return fmt.Sprintf("htb %x: r2q %d default %s direct_packets_stat %d%s direct_qlen %d", c.Handle>>16, c.R2Q, def, direct, ver, c.DirectQLen)
}

// Show implements qdisc.Shower: the qdisc's line with its handle (1:),
// the qdisc grafted on a leaf (fq_codel) on a line of its own under the
// leaf's class, showing the class's counters and its own (a leaf's
// default pfifo, unnamed on Linux, is not shown), and the classes as `tc
// -s class show` prints them, a blank line between them, each leaf naming
// its grafted qdisc's handle.
func (d *Discipline) Show() qdisc.Showing {
	var handle uint32
	d.lanes.Lanes[0].Locked(func() { handle = d.tree.cfg.withDefaults().Handle })
	kind, rest := qdisc.SplitKind(d.String())
	_, opts := qdisc.SplitKind(rest) // after the handle
	s := qdisc.Showing{Kind: kind, Options: opts, Handle: handle, Stats: d.Stats()}
	classes := d.Classes()
	for _, c := range classes {
		leaf, leafOpts := qdisc.SplitKind(c.Leaf)
		if leaf == "" || leaf == "pfifo" {
			continue
		}
		s.Children = append(s.Children, qdisc.Grafted{Class: uint16(c.ID), Showing: qdisc.Showing{
			Kind: leaf, Options: leafOpts, XStats: c.LeafXStats,
			Stats: qdisc.Stats{Bytes: c.Bytes, Packets: c.Packets, Drops: c.Drops, BacklogBytes: c.BacklogBytes, BacklogPackets: c.BacklogPackets},
		}})
	}
	s.Classes = func(leaf func(classid uint32) uint32) string {
		var b strings.Builder
		for i, c := range classes {
			if i > 0 {
				b.WriteString("\n\n")
			}
			c.LeafHandle = leaf(c.ID)
			b.WriteString(c.String())
		}
		return b.String()
	}
	return s
}
