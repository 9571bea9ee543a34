package htb

// This file holds a pod's script to the operator's: Script.Tighten, the
// rule a runtime's annotations of an htb tree meet (runsc's --qdisc-htb
// and --qdisc-ingress-htb), and the htb Kind's Tighten. Its splits are
// split.go's.

import (
	"fmt"
	"slices"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// Tighten holds pod, a pod's script (s with an annotation's classes and
// filters merged in), to s, the operator's. It returns pod as it will
// run, the shares of the classes it hangs from a class filled in where it
// leaves them unset (splitShares), or an error in tc's words that names
// what pod asks past s.
//
// pod is held when it shapes every packet at least as tightly as s: for
// every packet, the chain of classes it passes under pod (leaf to top)
// holds the chain it passed under s, each class no looser, and every
// class below them has a ceil no higher than its parent's. So:
//
//   - s's classes stay, in the same places, each with a rate, ceil, burst
//     and cburst no higher, the same prio, quantum, overhead and mpu (they
//     decide who gets the excess, not how much), and every quota of s's
//     kept with a budget and a rate no higher and the same period (a
//     class may gain a quota);
//   - the qdisc's words, the leaves' qdiscs and the root chain are s's,
//     and so is the chain of each of s's inner classes (packets it places
//     nowhere go to the default class, which may be outside it);
//   - a new class hangs from a class (s's or new), with a ceil and a
//     rate no higher than its parent's ceil and a prio no ahead of the
//     operator's class it splits, and has a classid that none of s's
//     filters nor its default names (those packets went elsewhere);
//   - a class that has children under pod and had none under s (a leaf
//     of s's that the pod splits, or a new class) has a chain whose
//     filters all send packets to classes under it, with a catch-all (a
//     filter with no match words) among them: otherwise a packet that
//     reaches it and that none of its filters places would go to the
//     default class, out of the operator's class; and s's default class
//     stays a leaf (its packets go to it without its filters);
//   - filters are added only to such chains, after s's (s's filters
//     stay, each chain's in its order);
//   - the new children of a class C share C's, as Linux's htb serves a
//     class within its own rate without asking its parent (split.go says
//     why): their rates, bursts and cbursts add up to no more than C's,
//     each ceil is no higher than C's, and one of them at most borrows (a
//     ceil above its rate), with a quantum no more than C's.
//
// Both scripts must be valid (Script.Validate, as ParseScript's are).
func (s Script) Tighten(pod Script) (Script, error) {
	if err := s.Validate(); err != nil {
		return Script{}, fmt.Errorf("the operator's script: %w", err)
	}
	if err := pod.Validate(); err != nil {
		return Script{}, err
	}
	if err := keepsOperators(s, pod); err != nil {
		return Script{}, err
	}
	pod.Classes = slices.Clone(pod.Classes) // the caller's stay as they were
	splitShares(s, &pod)
	if err := tightens(s, pod); err != nil {
		return Script{}, err
	}
	if err := splitsFit(s, pod); err != nil {
		return Script{}, err
	}
	return pod, nil
}

// keepsOperators refuses next unless it keeps what is op's alone (an
// annotation of runsc's, an update of classes and filters, cannot change
// it): the qdisc's words, the leaves' qdiscs, and op's filters, each of
// op's chains the start of next's.
func keepsOperators(op, next Script) error {
	if got, want := qdiscWords(next.Qdisc), qdiscWords(op.Qdisc); got != want {
		return fmt.Errorf("qdisc %q: the qdisc's words decide where packets no filter places go, and are the operator's, %q", got, want)
	}
	if !sameSet(op.FQCoDel, next.FQCoDel) {
		return fmt.Errorf("the leaves' qdiscs (qdisc parent ... fq_codel) are the operator's")
	}
	if err := keepsGrafts(op, next); err != nil {
		return err
	}
	for _, f := range op.Filters {
		opChain, chain := op.Chain(f.Parent), next.Chain(f.Parent)
		for i, o := range opChain {
			if i >= len(chain) || chain[i].String() != o.String() {
				return fmt.Errorf("filter %v: the operator's filters stay, in their order; a pod's filters come after them", o)
			}
		}
	}
	return nil
}

// tightens reports why next does not shape every packet at least as
// tightly as op, or nil: Tighten's rule, less what keepsOperators checks
// before and how new children share their parent (splitsFit, checked
// after).
func tightens(op, next Script) error {
	if err := sameRoot(op, next); err != nil {
		return err
	}
	opChildren, children := op.ChildCount(), next.ChildCount()
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
func sameRoot(op, next Script) error {
	opRoot, root := op.Chain(0), next.Chain(0)
	if len(root) != len(opRoot) {
		return fmt.Errorf("filter %v: a filter of the qdisc's root chain would move packets between the operator's classes (internet traffic into the cluster's class); attach it to a class the annotation splits, as filter parent 1:20 ... classid 1:21", root[len(opRoot)])
	}
	return nil
}

// tightensClass refuses o, a class of the operator's, loosened in next.
func tightensClass(o ClassConfig, next Script) error {
	j := classIndex(next.Classes, o.ID)
	if j < 0 {
		return fmt.Errorf("class %s is gone", classify.ClassID(o.ID))
	}
	n := next.Classes[j]
	id := classify.ClassID(o.ID)
	eo, en := o.WithDefaults(), n.WithDefaults()
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
func newClassFits(op, next Script, n ClassConfig) error {
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
	en, ep := n.WithDefaults(), p.WithDefaults()
	pid := classify.ClassID(p.ID)
	switch {
	case en.Ceil > ep.Ceil:
		return fmt.Errorf("class %s: ceil %s is above the ceil of its parent %s, %s; a class may only tighten its parent's", id, rate.FormatRate(en.Ceil), pid, rate.FormatRate(ep.Ceil))
	case en.Rate > ep.Ceil:
		return fmt.Errorf("class %s: rate %s is above the ceil of its parent %s, %s; a class may only tighten its parent's", id, rate.FormatRate(en.Rate), pid, rate.FormatRate(ep.Ceil))
	}
	// The operator's class it splits: the nearest of its ancestors that
	// is op's (one is: a new class at the top was refused above).
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
func chainStaysUnder(next Script, id uint32, chain []Filter) error {
	cid := classify.ClassID(id)
	catchAll := false
	for _, f := range chain {
		if !next.Under(f.Rule.Class, id) {
			return fmt.Errorf("filter %v sends packets of class %s to %s, out of %s and its ceiling; a pod's filters may only send a class's packets to classes under it", f, cid, classify.ClassID(f.Rule.Class), cid)
		}
		catchAll = catchAll || CatchAll(f.Rule)
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

// Under reports whether class id is a class under class top (not top
// itself) in s: whether the packets id sends count against top's ceil.
func (s Script) Under(id, top uint32) bool {
	j := classIndex(s.Classes, id)
	if j < 0 {
		return false
	}
	for p := s.Classes[j].Parent; p != 0 && p&0xffff != 0; {
		if p == top {
			return true
		}
		k := classIndex(s.Classes, p)
		if k < 0 {
			return false
		}
		p = s.Classes[k].Parent
	}
	return false
}

// ChildCount returns how many children each class of s has, by its id
// (the classes at the top count under their Parent, 0 or the handle).
func (s Script) ChildCount() map[uint32]int {
	n := map[uint32]int{}
	for _, c := range s.Classes {
		n[c.Parent]++
	}
	return n
}

// keepsGrafts refuses next unless it grafts the kinds op grafts with
// their words (Grafts) on the same leaves, word for word: a leaf's qdisc
// is the operator's. A pod that could graft netem on a leaf, or change
// the words of the operator's, could duplicate its packets past its
// class's share or delay the operator's probes.
func keepsGrafts(op, next Script) error {
	words := func(s Script) map[uint32]string {
		m := map[uint32]string{}
		for _, g := range s.Grafts {
			m[g.Parent] = g.String()
		}
		return m
	}
	have, want := words(next), words(op)
	for _, g := range next.Grafts {
		if want[g.Parent] != g.String() {
			return fmt.Errorf("qdisc %s: the leaves' qdiscs are the operator's: a pod's script grafts none and keeps the operator's words", g)
		}
	}
	for _, g := range op.Grafts {
		if have[g.Parent] != g.String() {
			return fmt.Errorf("qdisc %s: the operator's leaf qdisc stays, with its words", g)
		}
	}
	return nil
}
