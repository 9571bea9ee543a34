package htb

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// ClassStats is one class as `tc -s class show dev eth0` shows it.
type ClassStats struct {
	ID, Parent uint32
	// Level is the class's level: 0 for a leaf, MaxDepth-1 for a class at
	// the top with children, one less than its parent's for any other.
	Level int
	// Leaf is a leaf's qdisc as `tc qdisc show` names it: "pfifo", or
	// the grafted one's description ("fq_codel limit 10240p ..."); "" for
	// an inner class.
	Leaf string
	Prio uint8
	// Rate, Ceil (bytes per second), Burst, CBurst and Quantum (bytes) are
	// in force, defaults filled in: the class's own, as configured or
	// changed; while a spent quota bounds it (QuotaSpent here or above),
	// it sends at most at the lower rates the quota fits it to (Quota).
	Rate, Ceil    uint64
	Burst, CBurst uint32
	Quantum       uint32
	Mode          Mode
	// Bytes and Packets were dequeued from the class (for an inner class,
	// from its leaves).
	Bytes, Packets uint64
	// Drops counts the packets its leaf refused or dropped; Overlimits
	// the times it went over its ceil (became CantSend); Requeues is
	// always 0, as in Linux's htb classes.
	Drops, Overlimits, Requeues uint64
	// BacklogBytes and BacklogPackets are queued in its leaf now.
	BacklogBytes, BacklogPackets uint64
	// Lends counts packets the class sent at its own level (within its
	// rate, or lent to a descendant); Borrows packets a descendant sent
	// with tokens borrowed from an ancestor of the class; Giants packets
	// longer than its Burst.
	Lends, Borrows, Giants uint64
	// Tokens and CTokens are the rate and ceil buckets' credit in ns as
	// of the class's last charge.
	Tokens, CTokens int64
	// Quota is the class's quota (nil: none); QuotaUsed the bytes it
	// counted this period, QuotaLeft the time until the period renews,
	// and QuotaSpent whether the budget is spent.
	Quota      *Quota
	QuotaUsed  uint64
	QuotaLeft  time.Duration
	QuotaSpent bool
}

// String prints the class as `tc -s class show` does:
//
//	class htb 1:10 parent 1:1 prio 0 rate 10Mbit ceil 20Mbit burst 1600b cburst 1600b
//	 Sent 3000 bytes 2 pkt (dropped 0, overlimits 0 requeues 0)
//	 backlog 0b 0p requeues 0
//	 lended: 2 borrowed: 0 giants: 0
//	 tokens: 1400 ctokens: 700
//
// tokens and ctokens are in tc's units, 64 ns ticks, as the kernel
// reports them.
func (s ClassStats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "class htb %s ", classify.ClassID(s.ID))
	if s.Parent == 0 {
		b.WriteString("root ")
	} else {
		fmt.Fprintf(&b, "parent %s ", classify.ClassID(s.Parent))
	}
	if s.Level == 0 {
		kind, _, _ := strings.Cut(s.Leaf, " ")
		fmt.Fprintf(&b, "leaf %s prio %d quantum %d ", kind, s.Prio, s.Quantum)
	}
	fmt.Fprintf(&b, "rate %s ceil %s burst %s cburst %s\n", rate.FormatRate(s.Rate), rate.FormatRate(s.Ceil), rate.FormatSize(uint64(s.Burst)), rate.FormatSize(uint64(s.CBurst)))
	fmt.Fprintf(&b, " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d)\n", s.Bytes, s.Packets, s.Drops, s.Overlimits, s.Requeues)
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

// String describes the qdisc as `tc qdisc show` does after "qdisc":
// "htb 1: r2q 10 default 0x10 direct_qlen 1000".
func (c Config) String() string {
	c = c.withDefaults()
	return fmt.Sprintf("htb %x: r2q %d default %#x direct_qlen %d", c.Handle>>16, c.R2Q, c.Default&0xffff, c.DirectQLen)
}

// Classes returns every class's statistics, in the order of cfg.Classes.
func (t *Tree) Classes() []ClassStats {
	out := make([]ClassStats, len(t.classes))
	for i, cl := range t.classes {
		s := ClassStats{
			ID: cl.id, Level: cl.level, Prio: uint8(cl.prio),
			Rate: cl.cfg.Rate, Ceil: cl.cfg.Ceil, Burst: cl.cfg.Burst, CBurst: cl.cfg.CBurst,
			Mode: cl.mode, Bytes: cl.bytes, Packets: cl.packets,
			Overlimits: cl.overlimits, Lends: cl.lends, Borrows: cl.borrows, Giants: cl.gi,
			Tokens: cl.tokens, CTokens: cl.ctokens,
		}
		if cl.parent != nil {
			s.Parent = cl.parent.id
		}
		if q := cl.cfg.Quota; q != nil {
			qq := *q
			s.Quota, s.QuotaUsed, s.QuotaSpent = &qq, cl.quotaUsed, cl.quotaSpent
			s.QuotaLeft = time.Duration(max(cl.quotaEnd-t.now, 0))
		}
		if cl.level == 0 {
			s.Leaf = "pfifo"
			if d, ok := cl.leaf.(fmt.Stringer); ok {
				s.Leaf = d.String()
			}
			s.Quantum = uint32(cl.quantum)
			s.Drops = cl.leaf.Drops()
			n, b := cl.leaf.Len()
			s.BacklogPackets, s.BacklogBytes = uint64(n), b
		}
		out[i] = s
	}
	return out
}

// DirectPackets returns how many packets went through the direct queue
// (tc's direct_packets_stat).
func (t *Tree) DirectPackets() uint64 { return t.directPackets }

// Overlimits returns how many times a class went over its ceil.
func (t *Tree) Overlimits() uint64 { return t.overlimits }
