package htb

import (
	"fmt"
	"math"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Quota is a byte budget per period on a class (kubernetes#2856: 10 Mbit/s
// and 100 GB a month). Linux's htb has none; this is ours. Every byte
// dequeued from the class or from a class under it counts; the packet
// that reaches the budget is the last sent at the configured rates. From
// the next one on, the class and its subtree, as a whole, send no more
// than Rate until the period renews: the class's rate and ceil fall to at
// most Rate, and the classes under it are fitted under it as Fit fits
// them (children's rates scaled down to add up to no more than their
// parent's, ceils no higher than its), since a class within its own rate
// sends without asking its ancestors. With Rate 0 the subtree sends
// nothing. Classes under no spent quota keep their configured rates.
// Periods run back to back from the tree's start.
type Quota struct {
	// Bytes is the budget per period.
	Bytes uint64
	// Period is how often the budget renews.
	Period time.Duration
	// Rate is what the class and its subtree, together, fall to once the
	// budget is spent, in bytes per second; 0 blocks them.
	Rate uint64
}

// String prints the quota in tc's units: "quota 50Gb per 24h0m0s then
// 1Mbit".
func (q Quota) String() string {
	then := "block"
	if q.Rate != 0 {
		then = rate.FormatRate(q.Rate)
	}
	return fmt.Sprintf("quota %s per %v then %s", rate.FormatSize(q.Bytes), q.Period, then)
}

// renewQuotas starts a new period for every quota on cl and its ancestors
// whose period has ended, and reports whether any did (the rates were then
// applied anew).
func (t *Tree) renewQuotas(cl *class) bool {
	renewed := false
	for c := cl; c != nil; c = c.parent {
		q := c.cfg.Quota
		if q == nil || t.now < c.quotaEnd {
			continue
		}
		p := int64(q.Period)
		c.quotaEnd += ((t.now-c.quotaEnd)/p + 1) * p
		c.quotaUsed = 0
		renewed = renewed || c.quotaSpent
		c.quotaSpent = false
	}
	if renewed {
		t.applyQuotas()
	}
	return renewed
}

// useQuotas counts a packet of bytes bytes sent from leaf cl against the
// quotas on it and its ancestors, and reports whether one is now spent.
// The count stops at the largest uint64.
func (t *Tree) useQuotas(cl *class, bytes uint32) bool {
	spent := false
	for c := cl; c != nil; c = c.parent {
		if q := c.cfg.Quota; q != nil {
			// Saturating: a count restored near the top (RestoreQuotas)
			// must not wrap back into a budget.
			c.quotaUsed = min(c.quotaUsed, math.MaxUint64-uint64(bytes)) + uint64(bytes)
			if !c.quotaSpent && c.quotaUsed >= q.Bytes {
				c.quotaSpent, spent = true, true
			}
		}
	}
	return spent
}

// applyQuotas gives every class the rates its configuration and the spent
// quotas on it and above it allow, and moves a class whose bound changed
// to the mode that gives it now. A spent quota with a rate fits its
// class's subtree under that rate as a whole (fitRates, as Fit does): a
// class within its rate sends without asking its ancestors, so the
// classes under it must add up to no more. Parents come before children
// in t.classes.
func (t *Tree) applyQuotas() {
	n := len(t.classes)
	cfgs, parents, bounds := make([]ClassConfig, n), make([]int, n), make([]fitted, n)
	for i, cl := range t.classes {
		cfgs[i], parents[i] = cl.cfg, -1
		if cl.parent != nil {
			parents[i] = int(t.pos[cl.parent.id]) - 1
		}
		if q := cl.cfg.Quota; q != nil && cl.quotaSpent && q.Rate != 0 {
			bounds[i] = fitted{q.Rate, q.Rate}
		}
	}
	fits := fitRates(cfgs, parents, bounds, nil)
	for i, cl := range t.classes {
		blocked := int64(0)
		if p := cl.parent; p != nil {
			blocked = p.blockedUntil
		}
		if q := cl.cfg.Quota; q != nil && cl.quotaSpent && q.Rate == 0 {
			blocked = max(blocked, cl.quotaEnd)
		}
		if fits[i] == cl.bound && blocked == cl.blockedUntil {
			continue
		}
		cl.bound, cl.blockedUntil = fits[i], blocked
		cl.applyBound()
		t.refreshMode(cl)
	}
}

// refreshMode moves cl to the mode its buckets and bounds give at t.now,
// and queues its next change, as htb_do_events does.
func (t *Tree) refreshMode(cl *class) {
	if cl.waiting {
		t.wait[cl.level].remove(cl)
	}
	diff := min(t.now-cl.tc, mbuffer)
	t.changeMode(cl, &diff)
	if cl.mode != CanSend {
		t.addToWait(cl, diff)
	}
}

// QuotaState is a quota's counters, as a checkpoint keeps them: the
// bytes used this period and the time left in it.
type QuotaState struct {
	ID   uint32
	Used uint64
	Left time.Duration
}

// Quotas returns the state of every class's quota.
func (t *Tree) Quotas() []QuotaState {
	var out []QuotaState
	for _, cl := range t.classes {
		if cl.cfg.Quota != nil {
			out = append(out, QuotaState{ID: cl.id, Used: cl.quotaUsed, Left: time.Duration(max(cl.quotaEnd-t.now, 0))})
		}
	}
	return out
}

// RestoreQuotas sets the quotas' counters at now from a checkpoint's
// (Quotas): a sandbox restored keeps what it had used, and the time its
// periods had left.
//
// A checkpoint is written by the sandbox, so states are held to what an
// honest checkpoint of the tree as configured now could hold: a class
// that has a quota, once, or the state is refused; at most its period
// left (more would be a period that starts in the future: refused); any
// count of bytes used, a count at or past the budget being the budget
// spent (the counter saturates, useQuotas, so that no count wraps back
// into a budget as the class sends). A class left out keeps the period
// the tree gave it. So after a restore no class has more of its budget,
// nor more of its period, than its configuration gives: the most a state
// can claim is an unused budget, as an idle sandbox's honest one would.
func (t *Tree) RestoreQuotas(states []QuotaState, now int64) error {
	seen := make(map[uint32]bool, len(states))
	for _, s := range states {
		cl, ok := t.byID[s.ID]
		if !ok || cl.cfg.Quota == nil {
			return fmt.Errorf("htb: restored quota of class %s, which has none", classify.ClassID(s.ID))
		}
		if seen[s.ID] {
			return fmt.Errorf("htb: restored quota of class %s is given twice", classify.ClassID(s.ID))
		}
		seen[s.ID] = true
		if s.Left < 0 || s.Left > cl.cfg.Quota.Period {
			return fmt.Errorf("htb: restored quota of class %s has %v left of a %v period", classify.ClassID(s.ID), s.Left, cl.cfg.Quota.Period)
		}
	}
	t.now = max(t.now, now)
	for _, s := range states {
		cl := t.byID[s.ID]
		cl.quotaUsed, cl.quotaEnd = s.Used, t.now+int64(s.Left)
		cl.quotaSpent = cl.quotaUsed >= cl.cfg.Quota.Bytes
	}
	t.applyQuotas()
	return nil
}

// ResetQuota starts a new period of class id's quota at now, its budget
// whole (runsc qdisc change, the operator's).
func (t *Tree) ResetQuota(id uint32, now int64) error {
	cl, ok := t.byID[id]
	if !ok || cl.cfg.Quota == nil {
		return fmt.Errorf("htb: class %s has no quota to reset", classify.ClassID(id))
	}
	t.now = max(t.now, now)
	cl.quotaUsed, cl.quotaSpent, cl.quotaEnd = 0, false, t.now+int64(cl.cfg.Quota.Period)
	t.applyQuotas()
	return nil
}

// changeQuota applies a change of cl's quota from old (nil: none) at now:
// a new quota starts its first period; a changed one keeps its period and
// what it used, spent or not by the new budget (the operator may raise
// it: runsc qdisc change); a removed one bounds nothing more.
func (t *Tree) changeQuota(cl *class, old *Quota, now int64) {
	t.now = max(t.now, now)
	switch q := cl.cfg.Quota; {
	case q == nil:
		cl.quotaSpent = false
	case old == nil:
		t.quotas = true
		t.quotaClasses = append(t.quotaClasses, cl)
		cl.quotaUsed, cl.quotaSpent, cl.quotaEnd = 0, false, t.now+int64(q.Period)
	default:
		cl.quotaSpent = cl.quotaUsed >= q.Bytes
	}
	t.applyQuotas()
}

// renewDue renews every quota whose period has ended by t.now, and
// returns when the next spent one renews (noEvent: none is spent): the
// renewal is an event of its own, since a class fallen to a low rate
// would otherwise wait out a departure booked at that rate.
func (t *Tree) renewDue() int64 {
	next := int64(noEvent)
	for _, cl := range t.quotaClasses {
		if t.now >= cl.quotaEnd {
			t.renewQuotas(cl)
		}
		if cl.quotaSpent {
			next = min(next, cl.quotaEnd)
		}
	}
	return next
}

// noEvent is renewDue's answer when no quota is spent.
const noEvent = math.MaxInt64
