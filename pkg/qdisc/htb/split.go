package htb

import (
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// A class a pod splits (Script.Tighten) is shared by the classes the pod
// hangs from it, and Linux's htb serves each of them within its own rate,
// from its own bucket, without asking the class above (htb_dequeue_tree,
// htb_charge_class): children whose rates add up past their parent's
// send the sum. And each child that borrows takes a round-robin turn of
// its own where its parent took one (htb_lookup_leaf moves the parent's
// pointer on only after every child's turn), at least a packet a turn
// whatever its quantum: two borrowers take two turns of the excess their
// parent shared with its siblings. So the pod's children of a class C
// share C's: their rates, bursts and cbursts add up to no more than C's;
// each ceil is no higher than C's; and one of them at most borrows (a
// ceil above its rate), with a quantum no more than C's, so C's subtree
// still takes one turn. Then it sends no more than C did before it was
// split: at most C's rate from the children's own buckets, and what C
// lends or borrows, which is C's as before.

// splitShares fills in, in next.Classes, what the classes next adds to op
// leave unset, as shares of their parent's: a burst, the parent's burst
// less what the others claim, divided by rate; a cburst likewise, but no
// deeper than the class's burst if its ceil is its rate (so that it
// never borrows); a quantum, the parent's. A share is at least 1 byte;
// splitsFit refuses what does not fit.
func splitShares(op Script, next *Script) {
	for _, p := range next.Classes { // parents come before their children
		kids := addedChildren(op, *next, p.ID)
		if len(kids) == 0 {
			continue
		}
		pe := effectiveIn(op, p)
		share(next.Classes, kids, uint64(pe.Burst), func(c *ClassConfig) *uint32 { return &c.Burst })
		var unset []int
		for _, j := range kids {
			if next.Classes[j].CBurst == 0 {
				unset = append(unset, j)
			}
		}
		share(next.Classes, kids, uint64(pe.CBurst), func(c *ClassConfig) *uint32 { return &c.CBurst })
		for _, j := range unset {
			if c := &next.Classes[j]; c.WithDefaults().Ceil <= c.Rate {
				c.CBurst = min(c.CBurst, c.Burst) // so that it never borrows
			}
		}
		for _, j := range kids {
			if c := &next.Classes[j]; c.Quantum == 0 {
				c.Quantum = pe.Quantum
			}
		}
	}
}

// share sets the field of of each class kids (indices in classes) that
// has it unset to its share of whole: what the others claim taken off,
// the rest divided by rate, at least 1.
func share(classes []ClassConfig, kids []int, whole uint64, of func(*ClassConfig) *uint32) {
	var claimed, unsetRate uint64
	for _, j := range kids {
		if v := *of(&classes[j]); v != 0 {
			claimed += uint64(v)
		} else {
			unsetRate += classes[j].Rate
		}
	}
	left := whole - min(claimed, whole)
	for _, j := range kids {
		if c := &classes[j]; *of(c) == 0 {
			*of(c) = uint32(max(min(left*c.Rate/max(unsetRate, 1), 1<<32-1), 1))
		}
	}
}

// borrows reports whether class c may borrow: a ceil above its rate, or
// a ceil bucket deeper than its rate's (its tokens can run out first).
func borrows(c ClassConfig) bool {
	e := c.WithDefaults()
	return e.Ceil > e.Rate || e.CBurst > e.Burst
}

// splitsFit refuses the children next adds to a class unless they share
// it (see the comment above splitShares).
func splitsFit(op, next Script) error {
	for _, p := range next.Classes {
		kids := addedChildren(op, next, p.ID)
		if len(kids) == 0 {
			continue
		}
		pe := effectiveIn(op, p)
		pid := classify.ClassID(p.ID)
		var ids, borrowers []string
		var rates, bursts, cbursts uint64
		for _, j := range kids {
			e := effectiveIn(op, next.Classes[j])
			id := classify.ClassID(e.ID)
			ids = append(ids, id)
			rates += e.Rate
			bursts += uint64(e.Burst)
			cbursts += uint64(e.CBurst)
			if borrows(e) {
				borrowers = append(borrowers, id)
				if e.Quantum > pe.Quantum {
					return fmt.Errorf("class %s: quantum %d is above the quantum of %s, %d: the bytes a turn of borrowing sends; give quantum %d or less", id, e.Quantum, pid, pe.Quantum, pe.Quantum)
				}
			}
		}
		if len(borrowers) > 1 {
			return fmt.Errorf("the classes %s under %s all borrow (a ceil above the rate): htb gives each borrowing class a turn of the excess where %s took one, so one of %s's children at most may borrow; give the others a ceil equal to their rate", andList(borrowers), pid, pid, pid)
		}
		who := "the classes " + andList(ids)
		if len(ids) == 1 {
			who = "class " + ids[0]
		}
		for _, b := range []struct {
			what        string
			got, parent uint64
			show        func(uint64) string
		}{
			{"rates", rates, pe.Rate, rate.FormatRate},
			{"bursts", bursts, uint64(pe.Burst), rate.FormatSize},
			{"cbursts", cbursts, uint64(pe.CBurst), rate.FormatSize},
		} {
			if b.got > b.parent {
				return fmt.Errorf("%s under %s: their %s add up to %s, above %s's %s; htb serves each child within its own %s without asking %s, so children share their parent's: give them %s that add up to %s or less", who, pid, b.what, b.show(b.got), pid, b.show(b.parent), strings.TrimSuffix(b.what, "s"), pid, b.what, b.show(b.parent))
			}
		}
	}
	return nil
}

// addedChildren returns where, in next.Classes, the children of class id
// are that next adds to op.
func addedChildren(op, next Script, id uint32) []int {
	var out []int
	for j, c := range next.Classes {
		if c.Parent == id && classIndex(op.Classes, c.ID) < 0 {
			out = append(out, j)
		}
	}
	return out
}

// effectiveIn returns c with tc's defaults for what it leaves 0
// (WithDefaults), its quantum too: what a leaf's turn sends, rate/r2q
// clamped as Linux does, with op's r2q (an annotation cannot change the
// qdisc's words).
func effectiveIn(op Script, c ClassConfig) ClassConfig {
	e := c.WithDefaults()
	if e.Quantum == 0 {
		r2q := uint64(op.Qdisc.R2Q)
		if r2q == 0 {
			r2q = DefaultR2Q
		}
		e.Quantum = uint32(min(max(e.Rate/r2q, MinQuantum), MaxQuantum))
	}
	return e
}

// andList is "a, b and c".
func andList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
