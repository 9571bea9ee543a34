package htb

import (
	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/packetbuf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// class is one htb class (struct htb_class): its two buckets, its mode,
// its place in the tree and, for a leaf, its queue and deficits, for an
// inner class, its feeds.
type class struct {
	id     uint32
	parent *class
	// level is 0 for a leaf; see ClassStats.Level.
	level    int
	children int
	cfg      ClassConfig // defaults filled in

	rate, ceil      rate.Rate
	buffer, cbuffer int64
	// ceilIsRate: the ceil's rate, overhead and mpu are the rate's, so a
	// packet costs the same ns in both buckets (tc's default ceil).
	ceilIsRate bool
	// cost remembers what a few lengths cost (see costs).
	cost    [costSlots]lenCost
	prio    int
	quantum int32

	// The buckets, in ns of credit as of tc (sch_htb's t_c).
	tokens, ctokens, tc int64
	mode                Mode

	// Leaf: its queue, how much of it the tree counts (the bytes only
	// for a qdisc other than the default pfifo, which the tree calls
	// directly and which counts its own), and its deficit at each level
	// it may be served from.
	leaf        qdisc.Queue
	fifo        *packetbuf.Queue // leaf, when it is the default pfifo
	leafPackets int
	leafBytes   uint64
	deficit     [MaxDepth]int32

	// Inner: the children that borrow from it, per prio.
	inner [NumPrio]feed

	// prioActivity has bit p set while the class (a leaf with packets,
	// or an inner class with a borrowing child) is active at prio p.
	prioActivity uint8
	// pqKey is when the class's mode changes next, while it waits in its
	// level's event queue (waiting).
	pqKey   int64
	waiting bool

	// The quota's state (see quota.go): bytes charged this period, when
	// the period ends, and whether the budget is spent; and what the
	// spent quotas on the class and its ancestors impose on it: the rate
	// and ceil it is fitted to (unbounded: its own) or a time until which
	// it cannot send.
	quotaUsed    uint64
	quotaEnd     int64
	quotaSpent   bool
	bound        fitted
	blockedUntil int64

	bytes, packets                 uint64
	overlimits, lends, borrows, gi uint64
}

// mode computes the class's mode diff ns after its last charge, as
// htb_class_mode does with hysteresis off; when it is not CanSend, diff
// becomes how long until it changes.
func (cl *class) modeAfter(diff *int64) Mode {
	if toks := cl.ctokens + *diff; toks < 0 {
		*diff = -toks
		return CantSend
	}
	if toks := cl.tokens + *diff; toks >= 0 {
		return CanSend
	} else {
		*diff = -toks
	}
	return MayBorrow
}

// accnt is a bucket of toks ns, at most buffer, after diff ns of credit
// and a charge of cost ns, never mbuffer or more in debt.
func accnt(toks, buffer, diff, cost int64) int64 {
	toks = min(toks+diff, buffer) - cost
	if toks <= -mbuffer {
		toks = 1 - mbuffer
	}
	return toks
}

// mbuffer is MBuffer in ns.
const mbuffer = int64(MBuffer)

// setParams applies a class's settings (defaults filled in), as
// htb_change_class does for a new or an existing class: the rates and
// buckets' depths, and for a leaf its quantum and prio. It returns the
// warning Linux gives for a computed quantum it clamped, or "".
func (cl *class) setParams(c ClassConfig, r2q uint32) string {
	cl.cfg = c
	cl.setRates(c.Rate, c.Ceil)
	if cl.level != 0 {
		return ""
	}
	warn := ""
	q := min(c.Rate/uint64(r2q), 1<<31-1)
	if c.Quantum == 0 {
		switch {
		case q < MinQuantum:
			q, warn = MinQuantum, "small"
		case q > MaxQuantum:
			q, warn = MaxQuantum, "big"
		}
	} else {
		q = uint64(c.Quantum)
	}
	cl.quantum = int32(q)
	cl.cfg.Quantum = uint32(q)
	cl.prio = int(min(c.Prio, NumPrio-1))
	if warn != "" {
		return "quantum of class " + classify.ClassID(c.ID) + " is " + warn + ". Consider r2q change."
	}
	return ""
}

// applyBound puts in force the rates the class's bound gives: its own,
// or those a spent quota fits it to.
func (cl *class) applyBound() {
	if cl.bound == unbounded {
		cl.setRates(cl.cfg.Rate, cl.cfg.Ceil)
	} else {
		cl.setRates(cl.bound.rate, cl.bound.ceil)
	}
}

// setRates sets the class's rate and ceil buckets (bytes per second), each
// as deep as its configured burst.
func (cl *class) setRates(r, c uint64) {
	cl.rate = rate.New(r).WithOverhead(cl.cfg.Overhead).WithMPU(cl.cfg.MPU)
	cl.ceil = rate.New(c).WithOverhead(cl.cfg.Overhead).WithMPU(cl.cfg.MPU)
	cl.ceilIsRate = cl.ceil == cl.rate
	cl.forgetCosts() // the remembered costs are of the old rates
	cl.buffer = int64(cl.rate.TimeNS(cl.cfg.Burst))
	cl.cbuffer = int64(cl.ceil.TimeNS(cl.cfg.CBurst))
}
