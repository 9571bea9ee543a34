package runscflags

import (
	"fmt"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// validateHTB is Validate for the htb flags: --qdisc=htb needs its
// script, a script needs its qdisc, and the receive direction takes a
// tbf or classes, not both.
func (c *Config) validateHTB() error {
	switch {
	case c.QDisc == QDiscHTB && c.HTB == "":
		return fmt.Errorf("--%s=htb requires --%s, its classes (such as %q)", FlagQDisc, FlagHTB, "class root classid 1:1 rate 10mbit")
	case c.QDisc != QDiscHTB && c.HTB != "":
		return fmt.Errorf("--%s gives htb's classes and needs --%s=htb", FlagHTB, FlagQDisc)
	case c.IngressHTB != "" && (c.IngressRate != 0 || c.IngressPacketRate != 0):
		return fmt.Errorf("--%s and --%s both shape what the sandbox receives; give one of them", FlagIngressHTB, FlagIngressRate)
	}
	for _, f := range []struct{ name, text string }{{FlagHTB, c.HTB}, {FlagIngressHTB, c.IngressHTB}} {
		if f.text == "" {
			continue
		}
		if _, err := htb.ParseScript(f.text); err != nil {
			return fmt.Errorf("--%s: %w", f.name, err)
		}
	}
	return nil
}

// HTBConfig returns the htb.Config --qdisc-htb describes (send path),
// its leaves' fq_codel, if any, made for packets of up to mtu bytes (0:
// made by NewQueueingDiscipline, which knows the link's).
func (c *Config) HTBConfig() (htb.Config, error) {
	return c.htbConfig(FlagHTB, c.HTB, classify.Egress, 0)
}

// IngressHTBConfig returns the htb.Config --qdisc-ingress-htb describes
// (receive path: rules match the sender).
func (c *Config) IngressHTBConfig() (htb.Config, error) {
	return c.htbConfig(FlagIngressHTB, c.IngressHTB, classify.Ingress, 0)
}

// htbConfig returns the htb.Config of the script text of flag for packets
// travelling in direction dir; with mtu not 0, the leaves it grafts
// fq_codel on get one each, made with the --qdisc-fq-codel-* knobs.
func (c *Config) htbConfig(flag, text string, dir classify.Direction, mtu uint32) (htb.Config, error) {
	s, err := htb.ParseScript(text)
	if err != nil {
		return htb.Config{}, fmt.Errorf("--%s: %w", flag, err)
	}
	cfg, err := s.Config(dir, c.FQCoDelConfig(), mtu)
	if err != nil {
		return htb.Config{}, flagError(err, fqCoDelFlags)
	}
	return cfg, nil
}

// tighten applies an annotation's update of an htb script (class and
// filter statements, see classUpdate) to next, over the operator's script
// in op, and refuses it unless it shapes every packet at least as tightly
// as the operator's: see tightens. With --allow-flag-override it need not
// tighten.
func (f *Flag) tighten(op, next *Config, value string) error {
	base := *f.field(op).(*string)
	if base == "" {
		return fmt.Errorf("--%s is not set by the operator: there are no classes to tighten; setting it %s", f.Name, requiresOverride)
	}
	opScript, err := htb.ParseScript(base)
	if err != nil {
		return fmt.Errorf("the operator's --%s: %w", f.Name, err)
	}
	sc, _, err := parseUpdate(opScript, value, updateRules{add: true, filters: true})
	if err != nil {
		return err
	}
	if !op.AllowFlagOverride {
		splitShares(&opScript, &sc)
		if err := tightens(opScript, sc); err != nil {
			return fmt.Errorf("%w; loosening --%s %s", err, f.Name, requiresOverride)
		}
		if err := splitsFit(opScript, sc); err != nil {
			return fmt.Errorf("%w; loosening --%s %s", err, f.Name, requiresOverride)
		}
	}
	*f.field(next).(*string) = sc.String()
	return nil
}

// tightens reports why next does not shape every packet at least as
// tightly as op, or nil. It holds when, for every packet, the chain of
// classes it passes under next (leaf to top) holds the chain it passed
// under op, each class no looser, and every class below them has a ceil no
// higher than its parent's. So:
//
//   - op's classes stay, in the same places, each with a rate, ceil, burst
//     and cburst no higher, the same prio, quantum, overhead and mpu (they
//     decide who gets the excess, not how much), and every quota of op's
//     kept with a budget and a rate no higher and the same period (a
//     class may gain a quota);
//   - the qdisc's words and the root chain are op's, and so is the chain
//     of each of op's inner classes (packets it places nowhere go to the
//     default class, which may be outside it);
//   - a new class hangs from a class (op's or new), with a ceil and a
//     rate no higher than its parent's ceil and a prio no ahead of the
//     operator's class it splits, and has a classid that none of op's
//     filters nor its default names (those packets went elsewhere); the
//     new children of a class share it (splitsFit, checked after);
//   - a class that has children under next and had none under op (a leaf
//     of op's that the pod splits, or a new class) has a chain whose
//     filters all send packets to classes under it, with a catch-all (a
//     filter with no match words) among them: otherwise a packet that
//     reaches it and that none of its filters places would go to the
//     default class, out of the operator's class; and op's default class
//     stays a leaf (its packets go to it without its filters);
//   - filters are added only to such chains.
func tightens(op, next script) error {
	if err := sameRoot(op, next); err != nil {
		return err
	}
	opChildren, children := childCount(op.Classes), childCount(next.Classes)
	for _, o := range op.Classes {
		if err := tightensClass(o, next); err != nil {
			return err
		}
		if children[o.ID] > 0 && opChildren[o.ID] == 0 && o.ID == op.Qdisc.Default {
			return fmt.Errorf("class %s is the default class: packets no filter places go to it without running its filters (Linux's htb), so it must stay a leaf; to let pods split it, the operator sends its packets there by a catch-all filter (filter classid %s, last) and names another default", classify.ClassID(o.ID), classify.ClassID(o.ID))
		}
	}
	for _, n := range next.Classes {
		if classIndex(op.Classes, n.ID) < 0 {
			if err := newClassFits(op, next, n); err != nil {
				return err
			}
		}
	}
	for _, n := range next.Classes {
		opChain, chain := op.Chain(n.ID), next.Chain(n.ID)
		switch {
		case children[n.ID] == 0:
			if len(chain) != len(opChain) {
				return fmt.Errorf("filter %v: class %s has no children, so its filters never run; give it children, or attach the filter to a class that has", chain[len(opChain)], classify.ClassID(n.ID))
			}
		case opChildren[n.ID] > 0:
			if len(chain) != len(opChain) {
				return fmt.Errorf("filter %v: the chain of class %s, an inner class of the operator's, is the operator's: packets it places nowhere go to the default class, which may be outside %s; split a leaf class instead", chain[len(opChain)], classify.ClassID(n.ID), classify.ClassID(n.ID))
			}
		default:
			if err := chainStaysUnder(next, n.ID, chain); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameRoot refuses filters added to the root chain: they would move
// packets between the operator's classes.
func sameRoot(op, next script) error {
	opRoot, root := op.Chain(0), next.Chain(0)
	if len(root) != len(opRoot) {
		return fmt.Errorf("filter %v: a filter of the qdisc's root chain would move packets between the operator's classes (internet traffic into the cluster's class); attach it to a class the annotation splits, as filter parent 1:20 ... classid 1:21", root[len(opRoot)])
	}
	return nil
}

// tightensClass refuses o, a class of the operator's, loosened in next.
func tightensClass(o htb.ClassConfig, next script) error {
	j := classIndex(next.Classes, o.ID)
	if j < 0 {
		return fmt.Errorf("class %s is gone", classify.ClassID(o.ID))
	}
	n := next.Classes[j]
	id := classify.ClassID(o.ID)
	eo, en := effective(o), effective(n)
	for _, b := range []struct {
		what      string
		got, over uint64
		show      func(uint64) string
	}{
		{"rate", en.Rate, eo.Rate, rate.FormatRate}, {"ceil", en.Ceil, eo.Ceil, rate.FormatRate},
		{"burst", uint64(en.Burst), uint64(eo.Burst), rate.FormatSize}, {"cburst", uint64(en.CBurst), uint64(eo.CBurst), rate.FormatSize},
	} {
		if b.got > b.over {
			return fmt.Errorf("class %s: %s %s is above the operator's %s", id, b.what, b.show(b.got), b.show(b.over))
		}
	}
	switch {
	case n.Parent != o.Parent:
		return fmt.Errorf("class %s: its parent is the operator's", id)
	case n.Prio != o.Prio || n.Quantum != o.Quantum:
		return fmt.Errorf("class %s: prio and quantum decide which class gets the excess; they are the operator's", id)
	case n.Overhead != o.Overhead || n.MPU != o.MPU:
		return fmt.Errorf("class %s: overhead and mpu are the operator's", id)
	}
	if q := o.Quota; q != nil {
		nq := n.Quota
		switch {
		case nq == nil:
			return fmt.Errorf("class %s: the operator's quota (%v) cannot be removed", id, *q)
		case nq.Period != q.Period:
			return fmt.Errorf("class %s: %v: the period of a quota is the operator's, %v (the budget renews on the operator's schedule); give a budget and a rate no higher, per %v", id, *nq, q.Period, q.Period)
		case nq.Bytes > q.Bytes || nq.Rate > q.Rate:
			return fmt.Errorf("class %s: %v is looser than the operator's %v; give a budget and a rate no higher", id, *nq, *q)
		}
	}
	return nil
}

// newClassFits refuses n, a class next adds to op, unless it hangs from a
// class, no looser than its parent's ceil, no ahead of the operator's
// class it splits, under a classid none of op's filters nor its default
// sends packets to.
func newClassFits(op, next script, n htb.ClassConfig) error {
	id := classify.ClassID(n.ID)
	if n.Parent == 0 || n.Parent&0xffff == 0 {
		return fmt.Errorf("class %s: a class at the top of the tree is under none of the operator's classes, which are the ceilings; hang it from one (parent 1:20)", id)
	}
	if n.ID == op.Qdisc.Default {
		return fmt.Errorf("class %s: the operator's default names it (packets no filter places went to the direct queue); give the class another classid", id)
	}
	for _, f := range op.Filters {
		if f.Rule.Class == n.ID {
			return fmt.Errorf("class %s: the operator's filter %v names it (its packets went to the default class); give the class another classid", id, f)
		}
	}
	p := next.Classes[classIndex(next.Classes, n.Parent)] // Validate: it is there
	en, ep := effective(n), effective(p)
	pid := classify.ClassID(p.ID)
	switch {
	case en.Ceil > ep.Ceil:
		return fmt.Errorf("class %s: ceil %s is above the ceil of its parent %s, %s; a class may only tighten its parent's", id, rate.FormatRate(en.Ceil), pid, rate.FormatRate(ep.Ceil))
	case en.Rate > ep.Ceil:
		return fmt.Errorf("class %s: rate %s is above the ceil of its parent %s, %s; a class may only tighten its parent's", id, rate.FormatRate(en.Rate), pid, rate.FormatRate(ep.Ceil))
	}
	// The operator's class it splits: the nearest of its ancestors that
	// is op's.
	a := p
	for classIndex(op.Classes, a.ID) < 0 {
		a = next.Classes[classIndex(next.Classes, a.Parent)]
	}
	if n.Prio < a.Prio {
		return fmt.Errorf("class %s: prio %d is ahead of the prio %d of the operator's class %s it splits, and prio decides which class gets the excess; give prio %d or more", id, n.Prio, a.Prio, classify.ClassID(a.ID), a.Prio)
	}
	return nil
}

// chainStaysUnder refuses the chain of class id, one that has children in
// next and had none in the operator's tree, unless each of its filters
// sends packets to a class under id (those after a catch-all, never run,
// too) and it has a catch-all.
func chainStaysUnder(next script, id uint32, chain []filter) error {
	cid := classify.ClassID(id)
	catchAll := false
	for _, f := range chain {
		if !under(next.Classes, f.Rule.Class, id) {
			return fmt.Errorf("filter %v sends packets of class %s to %s, out of %s and its ceiling; a pod's filters may only send a class's packets to classes under it", f, cid, classify.ClassID(f.Rule.Class), cid)
		}
		catchAll = catchAll || htb.CatchAll(f.Rule)
	}
	if catchAll {
		return nil
	}
	example := classify.ClassID(id)
	for _, c := range next.Classes {
		if c.Parent == id {
			example = classify.ClassID(c.ID)
			break
		}
	}
	return fmt.Errorf("class %s has children: a packet that reaches it and that none of its filters places would go to the default class, out of %s and its ceiling; end its filters with a catch-all into a class under it, as filter parent %s classid %s", cid, cid, cid, example)
}

// under reports whether class id is a class under class top (not top
// itself) in classes.
func under(classes []htb.ClassConfig, id, top uint32) bool {
	j := classIndex(classes, id)
	if j < 0 {
		return false
	}
	for p := classes[j].Parent; p != 0 && p&0xffff != 0; {
		if p == top {
			return true
		}
		k := classIndex(classes, p)
		if k < 0 {
			return false
		}
		p = classes[k].Parent
	}
	return false
}

// childCount returns how many children each class of classes has.
func childCount(classes []htb.ClassConfig) map[uint32]int {
	n := map[uint32]int{}
	for _, c := range classes {
		n[c.Parent]++
	}
	return n
}

// effective returns c with tc's defaults for what it leaves 0 (the ceil
// is the rate; a bucket is rate/1e9 + 1600 bytes).
func effective(c htb.ClassConfig) htb.ClassConfig {
	if c.Ceil == 0 {
		c.Ceil = c.Rate
	}
	if c.Burst == 0 {
		c.Burst = uint32(min(c.Rate/1e9+htb.DefaultMTU, 1<<32-1))
	}
	if c.CBurst == 0 {
		c.CBurst = uint32(min(c.Ceil/1e9+htb.DefaultMTU, 1<<32-1))
	}
	return c
}

// changeClasses applies `runsc qdisc change --qdisc-htb=...` to c: the
// operator's class statements change classes in place (any setting, up
// or down, and quotas raised or removed; new classes cannot be added to a
// running tree), and "reset classid X" statements renew quotas. The
// resets are kept for planClasses in c's script as it is: a reset
// changes no setting.
func (c *Config) changeClasses(f *Flag, value string) error {
	p := f.field(c).(*string)
	if *p == "" {
		return fmt.Errorf("the sandbox has no htb classes here to change")
	}
	cur, err := htb.ParseScript(*p)
	if err != nil {
		return err
	}
	next, u, err := parseUpdate(cur, value, updateRules{resets: true})
	if err != nil {
		return err
	}
	*p = next.String()
	c.resets = append(c.resets, resetsOf(f, u.resets)...)
	return nil
}

// A quota reset a change asks for: the direction's flag and the class.
type quotaReset struct {
	flag  string
	class uint32
}

// resetsOf returns the classes whose quota reset c asks for on the
// direction of flag.
func (c *Config) resetsOf(flag string) []uint32 {
	var ids []uint32
	for _, r := range c.resets {
		if r.flag == flag {
			ids = append(ids, r.class)
		}
	}
	return ids
}

// resetsOf pairs f with each class of ids.
func resetsOf(f *Flag, ids []uint32) []quotaReset {
	out := make([]quotaReset, len(ids))
	for i, id := range ids {
		out[i] = quotaReset{f.Name, id}
	}
	return out
}

// planClasses checks the change of a running htb's classes from the
// script cur to next and returns it, to apply: each class whose settings
// differ is changed in place (htb.Discipline.ChangeClass, whose checks
// were made on the whole tree).
func planClasses(cur, next string, q *htb.Discipline, resets []uint32) (func() error, error) {
	a, err := htb.ParseScript(cur)
	if err != nil {
		return nil, err
	}
	b, err := htb.ParseScript(next)
	if err != nil {
		return nil, err
	}
	var changed []htb.ClassConfig
	for _, c := range b.Classes {
		j := classIndex(a.Classes, c.ID)
		if j < 0 {
			return nil, fmt.Errorf("class %s is not in the running tree; classes are not added to a running sandbox", classify.ClassID(c.ID))
		}
		if a.Classes[j].String() != c.String() {
			changed = append(changed, c)
		}
	}
	return func() error {
		for _, c := range changed {
			if err := q.ChangeClass(c); err != nil {
				return err
			}
		}
		for _, id := range resets {
			if err := q.ResetQuota(id); err != nil {
				return err
			}
		}
		return nil
	}, nil
}
