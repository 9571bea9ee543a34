package htb

import (
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Bounds on a ClassConfig beyond its fields' types. Each check in Validate
// names where Linux (sch_htb.c) or tc (q_htb.c) sets its bound, or says it
// is ours.
const (
	// MaxBuffer is the longest a class's burst or cburst may last at its
	// rate or ceil: tc sends the bucket's depth to Linux as a time in
	// psched ticks of 64 ns (PSCHED_SHIFT) in the u32 tc_htb_opt.buffer
	// and .cbuffer, so 2^32-1 ticks, about 274.9 s. tc's
	// tc_calc_xmittime does not check: a longer bucket wraps to a short
	// one.
	MaxBuffer = time.Duration(math.MaxUint32) << 6
	// MaxExplicitQuantum is the largest explicit quantum: Linux keeps a leaf's
	// quantum and its DRR deficit in a signed int (and caps a computed
	// quantum at INT_MAX), so a larger one would go negative.
	MaxExplicitQuantum = math.MaxInt32
	// MaxOverhead and MaxMPU are the largest Overhead and MPU: Linux keeps
	// both in 16 bits, unsigned (tc_ratespec, psched_ratecfg), and tc's
	// htb_parse_class_opt reads them with get_u16.
	MaxOverhead = math.MaxUint16
	MaxMPU      = math.MaxUint16
)

// ConfigError says which setting of a Config or ClassConfig is wrong and
// what to change.
type ConfigError struct {
	// Class is the class whose setting is wrong, or 0 for a setting of
	// the qdisc itself (or of a class with no usable classid).
	Class uint32
	// Field is tc's word for the setting: "classid", "parent", "rate",
	// "ceil", "burst", "cburst", "prio", "quantum", "overhead", "mpu" or
	// "leaf" for a class; "handle", "default", "filter", "direction" or
	// "slack" for the qdisc.
	Field string
	// Msg says what is wrong and what to change.
	Msg string
}

func (e *ConfigError) Error() string {
	if e.Class != 0 {
		return fmt.Sprintf("htb class %s %s: %s", classify.ClassID(e.Class), e.Field, e.Msg)
	}
	return "htb " + e.Field + ": " + e.Msg
}

func htbClassErr(class uint32, field, format string, args ...any) error {
	return &ConfigError{Class: class, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate reports whether c is a valid htb configuration: nil, or a
// *ConfigError naming the class (as tc's 1:10) and the setting to change.
// It refuses every bound Linux's sch_htb or tc's q_htb.c has, and a few
// that are ours (each says so). What Linux merely warns about, a quantum
// computed from the rate that is clamped, is not an error (the tree
// reports it).
//
// Some of Linux's limits are the fields' types: Rate and Ceil are u64
// bytes per second (TCA_HTB_RATE64, TCA_HTB_CEIL64), Burst and CBurst u32
// bytes (tc's get_size), R2Q, DirectQLen and LeafLimit u32. R2Q 0 is the
// default, 10 (Linux itself raises an r2q below 1 to 1); DirectQLen and
// LeafLimit 0 are theirs.
func (c Config) Validate() error {
	// The qdisc's handle is major: with minor 0 (tc's get_qdisc_handle
	// reads only the major).
	if c.Handle&0xffff != 0 {
		return htbClassErr(0, "handle", "handle %s has minor %x; a qdisc's handle is major: with minor 0, e.g. %x:", classify.ClassID(c.Handle), c.Handle&0xffff, c.Handle>>16)
	}
	major := c.Handle >> 16
	if major == 0 {
		major = 1
	}
	index := make(map[uint32]int, len(c.Classes)) // ID -> position
	depth := make([]int, len(c.Classes))
	firstChild := make([]int, len(c.Classes)) // position of the first child + 1
	leaves := make(map[any]int)
	for i, cls := range c.Classes {
		if err := cls.Validate(); err != nil {
			if ce, ok := err.(*ConfigError); ok && ce.Class == 0 {
				ce.Msg = fmt.Sprintf("class %d of %d: %s", i+1, len(c.Classes), ce.Msg)
			}
			return err
		}
		// htb_change_class: a classid whose major is not the qdisc's,
		// or that exists already, is -EINVAL.
		if cls.ID>>16 != major {
			return htbClassErr(cls.ID, "classid", "classid %s is not in qdisc %x: (its major is %x); give it the qdisc's major, %x:%x", classify.ClassID(cls.ID), major, cls.ID>>16, major, cls.ID&0xffff)
		}
		if j, dup := index[cls.ID]; dup {
			return htbClassErr(cls.ID, "classid", "classid %s is given twice (classes %d and %d); give each class its own minor", classify.ClassID(cls.ID), j+1, i+1)
		}
		depth[i] = 1
		if p := cls.Parent; p != 0 && p != major<<16 {
			j, ok := index[p]
			switch {
			case p>>16 != major:
				return htbClassErr(cls.ID, "parent", "parent %s is not in qdisc %x:; give a class of %x: as the parent, or root", classify.ClassID(p), major, major)
			case p == cls.ID:
				return htbClassErr(cls.ID, "parent", "the class is its own parent; give another class, or root")
			// Ours: Linux hangs a class whose parent does not exist at
			// the top of the tree, silently.
			case !ok && classIndex(c.Classes[i+1:], p) >= 0:
				return htbClassErr(cls.ID, "parent", "parent %s comes after its child; list a parent before its children", classify.ClassID(p))
			case !ok:
				return htbClassErr(cls.ID, "parent", "parent %s is no class of the qdisc; add it before this class, or say root for a class at the top", classify.ClassID(p))
			}
			depth[i] = depth[j] + 1
			if firstChild[j] == 0 {
				firstChild[j] = i + 1
			}
			// htb_change_class refuses a class under parent when
			// parent->parent->level < 2 ("tree is too deep"). Built
			// top-down, a class at depth d (1 at the top) that has
			// children is at level MaxDepth-d, so the check refuses a
			// parent at depth MaxDepth or deeper: at most MaxDepth
			// classes from the top to a leaf, leaves at level 0.
			if depth[i] > MaxDepth {
				return htbClassErr(cls.ID, "parent", "the class is %d classes deep under parent %s, and Linux's htb takes at most %d levels, leaves included (tree is too deep); hang it from a class higher up", depth[i], classify.ClassID(p), MaxDepth)
			}
		}
		index[cls.ID] = i
		if cls.Leaf != nil {
			// Ours: a queue is one leaf's; the tree takes it over.
			// (A leaf whose value cannot be compared, nor be a map key,
			// cannot be the same pointer given twice by mistake.)
			if reflect.ValueOf(cls.Leaf).Comparable() {
				if j, dup := leaves[cls.Leaf]; dup {
					return htbClassErr(cls.ID, "leaf", "the class's leaf qdisc is class %s's too; give each leaf its own qdisc", classify.ClassID(c.Classes[j].ID))
				}
				leaves[cls.Leaf] = i
			}
		}
	}
	// htb_graft: a qdisc grafted on a class with children (level > 0) is
	// -EINVAL; and when a leaf gets its first child, htb_change_class
	// purges and releases the leaf's qdisc.
	for i, cls := range c.Classes {
		if cls.Leaf != nil && firstChild[i] != 0 {
			return htbClassErr(cls.ID, "leaf", "the class has children (%s first), and only a leaf class's qdisc is ever served; graft the qdisc on a leaf class", classify.ClassID(c.Classes[firstChild[i]-1].ID))
		}
	}
	// htb_classify: Linux looks the default class up as
	// TC_H_MAKE(handle, defcls), so only its minor counts; a default that
	// is no leaf class sends packets to the direct queue, as 0 does
	// (kubernetes#25092's pitfall), and is not refused.
	if c.Default != 0 && c.Default>>16 != major {
		return htbClassErr(0, "default", "default %s is not in qdisc %x:; give one of its classes (e.g. %x:%x), or 0 for the direct queue", classify.ClassID(c.Default), major, major, c.Default&0xffff)
	}
	// Ours, as tbf's: Linux's htb has no slack.
	if c.Slack < NoSlack || c.Slack > MaxSlack {
		return htbClassErr(0, "slack", "slack %v is out of range; give 0 (the default, %v), NoSlack, or up to %v", c.Slack, DefaultSlack, MaxSlack)
	}
	if c.Direction != classify.Egress && c.Direction != classify.Ingress {
		return htbClassErr(0, "direction", "direction %d is neither egress (%d) nor ingress (%d)", c.Direction, classify.Egress, classify.Ingress)
	}
	inner := make([]bool, len(c.Classes))
	for i := range c.Classes {
		inner[i] = firstChild[i] != 0
	}
	return c.validateChains(major, index, inner)
}

// classIndex returns the position of the class id in classes, or -1.
func classIndex(classes []ClassConfig, id uint32) int {
	for i, c := range classes {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// Validate reports whether c is valid on its own: nil, or a *ConfigError
// naming the setting to change. It is Config.Validate's check of one class
// less what depends on the others (its major, its parent, its depth,
// whether it is a leaf): for a class about to be changed in place, or one
// just parsed.
func (c ClassConfig) Validate() error {
	id := c.ID
	switch {
	// htb_change_class: classid 0 is -EINVAL. Ours: Linux takes minor 0
	// (X:0), but X:0 is also the qdisc's handle, which filters use for
	// the direct queue.
	case c.ID == 0:
		return htbClassErr(0, "classid", "the class has no classid; give major:minor in hex, e.g. classid 1:10")
	case c.ID&0xffff == 0:
		return htbClassErr(0, "classid", "classid %s has minor 0, the qdisc's own handle (and its direct queue); give a minor 1 to ffff, e.g. %x:10", classify.ClassID(c.ID), c.ID>>16)
	// tc_ctl_tclass: a class's major is its qdisc's, never 0.
	case c.ID>>16 == 0:
		return htbClassErr(0, "classid", "classid %s has major 0; give the qdisc's major, e.g. 1:%x", classify.ClassID(c.ID), c.ID&0xffff)
	case c.Parent != 0 && c.Parent>>16 == 0:
		return htbClassErr(id, "parent", "parent %s has major 0; give the qdisc's major, e.g. %x:%x, or root", classify.ClassID(c.Parent), c.ID>>16, c.Parent&0xffff)
	// htb_change_class: a rate of 0 is -EINVAL (and tc says "rate" is
	// required).
	case c.Rate == 0:
		return htbClassErr(id, "rate", "the rate is 0; give the rate the class is guaranteed, above 0, e.g. rate 10mbit")
	// Linux (and tc) accept a ceil below the rate: the ceil then bounds
	// the class, which never reaches its rate. So do we. A Ceil of 0 is
	// the rate, as tc's ceil 0 is.
	//
	// htb_change_class clamps a prio above 7 to 7 silently. Ours: we
	// refuse it.
	case int(c.Prio) >= NumPrio:
		return htbClassErr(id, "prio", "prio %d is above %d; give 0 (served first) to %d (Linux would silently take %d)", c.Prio, NumPrio-1, NumPrio-1, NumPrio-1)
	// An explicit quantum of 0 is "compute it from rate/r2q", as in
	// Linux; one above INT_MAX would be negative in Linux's int.
	case c.Quantum > MaxExplicitQuantum:
		return htbClassErr(id, "quantum", "quantum %d bytes is above %d, the largest Linux's htb keeps (a signed int); lower it, or give 0 to compute it from rate/r2q", c.Quantum, MaxExplicitQuantum)
	case c.Overhead < 0 || c.Overhead > MaxOverhead:
		return htbClassErr(id, "overhead", "overhead %d is out of range; give 0 to %d bytes (Linux's overhead is unsigned 16 bits)", c.Overhead, MaxOverhead)
	case c.MPU > MaxMPU:
		return htbClassErr(id, "mpu", "mpu %d bytes is out of range; give 0 to %d bytes (Linux's mpu is unsigned 16 bits)", c.MPU, MaxMPU)
	}
	ceil := c.Ceil
	if ceil == 0 {
		ceil = c.Rate
	}
	if err := checkBucket(id, "burst", "rate", c.Burst, c.Rate); err != nil {
		return err
	}
	if err := checkBucket(id, "cburst", "ceil", c.CBurst, ceil); err != nil {
		return err
	}
	return c.validateQuota()
}

// MinQuotaPeriod is the shortest period a quota may have (ours: Linux's
// htb has no quotas).
const MinQuotaPeriod = time.Millisecond

// validateQuota checks the class's quota, if any.
func (c ClassConfig) validateQuota() error {
	q := c.Quota
	switch {
	case q == nil:
		return nil
	case q.Bytes == 0:
		return htbClassErr(c.ID, "quota", "the quota's budget is 0 bytes; give a budget such as quota 50gb, or no quota")
	case q.Period < MinQuotaPeriod:
		return htbClassErr(c.ID, "per", "the quota's period %v is shorter than %v; give a period such as per 24h", q.Period, MinQuotaPeriod)
	}
	return nil
}

// checkBucket checks a bucket of depth bytes (0: tc's default) at
// bytesPerSec, the rate or the ceil that rateWord names.
func checkBucket(id uint32, field, rateWord string, depth uint32, bytesPerSec uint64) error {
	d := uint64(depth)
	what := fmt.Sprintf("%s %d bytes", field, depth)
	if depth == 0 {
		// tc's htb_parse_class_opt: rate/hz + mtu, hz being 1e9 with
		// high resolution timers, in an unsigned int.
		d = bytesPerSec/rate.NanosPerSecond + DefaultMTU
		what = fmt.Sprintf("%s (tc's default at %s %s: %s/1e9 + %d = %d bytes)", field, rateWord, rate.FormatRate(bytesPerSec), rateWord, DefaultMTU, d)
		if d > math.MaxUint32 {
			return htbClassErr(id, rateWord, "%s is more than a burst holds (2^32-1 bytes); lower %s", what, rateWord)
		}
	}
	// Ours, as tbf's: a bucket that lasts 0 ns holds nothing.
	if rate.New(bytesPerSec).TimeNS(uint32(d)) == 0 {
		return htbClassErr(id, field, "%s lasts less than 1 ns at %s %s; raise %s or lower %s", what, rateWord, rate.FormatRate(bytesPerSec), field, rateWord)
	}
	// tc's tc_calc_xmittime: the bucket goes to Linux as a time in 64-ns
	// ticks in a u32. d*1e9 fits 64 bits: d < 2^32, 1e9 < 2^30.
	hi, lo := bits.Mul64(bytesPerSec, uint64(MaxBuffer))
	if hi == 0 && lo < d*rate.NanosPerSecond {
		lasts := time.Duration(d * rate.NanosPerSecond / bytesPerSec)
		return htbClassErr(id, field, "%s lasts %v at %s %s, longer than the %v Linux's htb holds (2^32-1 ticks of 64 ns); lower %s or raise %s", what, lasts, rateWord, rate.FormatRate(bytesPerSec), MaxBuffer, field, rateWord)
	}
	return nil
}
