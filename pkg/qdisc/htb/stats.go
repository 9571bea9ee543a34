package htb

import (
	"fmt"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
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
	// LeafXStats are the grafted qdisc's own counters, as `tc -s qdisc
	// show` prints them ("" for pfifo); LeafHandle is the handle a show
	// gave it (qdisc.Showing's Classes sets it: tc's "leaf 8002:"), 0 for
	// none.
	LeafXStats string
	LeafHandle uint32
	Prio       uint8
	// Rate, Ceil (bytes per second), Burst, CBurst and Quantum (bytes) are
	// in force, defaults filled in: the class's own, as configured or
	// changed; while a spent quota bounds it (QuotaSpent here or above),
	// it sends at most at the lower rates the quota fits it to (Quota).
	Rate, Ceil    uint64
	Burst, CBurst uint32
	Quantum       uint32
	// Overhead and MPU are the class's, as tc's htb overhead and mpu.
	Overhead int32
	MPU      uint32
	Mode     Mode
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

// Classes returns every class's statistics, in the order of cfg.Classes.
func (t *Tree) Classes() []ClassStats {
	out := make([]ClassStats, len(t.classes))
	for i, cl := range t.classes {
		s := ClassStats{
			ID: cl.id, Level: cl.level, Prio: uint8(cl.prio), Overhead: cl.cfg.Overhead, MPU: cl.cfg.MPU,
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
			if x, ok := cl.leaf.(qdisc.XStatser); ok {
				s.LeafXStats = x.TCXStats()
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
