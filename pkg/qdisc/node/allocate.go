package node

import (
	"math/bits"
	"slices"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// Allocate returns the bytes a second each leaf of classes sends when
// each wants demand[id] (bytes a second; a backlogged leaf wants its
// ceil, an idle one 0), as Linux's htb shares them in its steady state:
//
//   - a leaf sends up to its rate from its own tokens, whatever its
//     siblings do;
//   - a class whose subtree sends less than its rate lends the rest to
//     the leaves under it that want more, the lowest level first (a
//     parent lends before a grandparent), within a level the leaves of
//     the lowest prio first, and among leaves of one prio in proportion
//     to their quanta (htb's deficit round robin);
//   - no class sends past its ceil, and a leaf borrows through a class
//     only while that class is under its own ceil.
//
// classes is a tree (htb.Script's classes, defaults filled in: Ceil,
// Quantum); an inner class's demand is ignored. Guarantees that do not
// fit under a parent's rate are taken as given (Validate refuses them).
//
// This is htb's documented sharing, and what sch_htb sends where each
// sandbox's ceil is the root's (TestAllocateIsHTB). Where ceils below
// the root's or tenants' classes make a class alternate between lending
// and borrowing, sch_htb's round robin drifts from the quanta; Allocate
// keeps to them.
func Allocate(classes []htb.ClassConfig, demand map[uint32]uint64) map[uint32]uint64 {
	t := newTree(classes)
	use := make(map[uint32]uint64, len(classes))
	for _, l := range t.leaves {
		c := t.class[l]
		use[l] = min(c.Rate, c.Ceil, demand[l])
	}
	t.sumUp(use)
	for _, p := range t.bottomUp {
		c := t.class[p]
		if used := t.subtreeUse(use, p); used < c.Rate {
			t.lend(use, demand, p, c.Rate-used)
		}
	}
	out := make(map[uint32]uint64, len(t.leaves))
	for _, l := range t.leaves {
		out[l] = use[l]
	}
	return out
}

// tree is classes indexed: children, leaves, and the inner classes from
// the deepest up.
type tree struct {
	class    map[uint32]htb.ClassConfig
	children map[uint32][]uint32
	depth    map[uint32]int
	leaves   []uint32
	bottomUp []uint32
}

// newTree indexes classes.
func newTree(classes []htb.ClassConfig) *tree {
	t := &tree{class: map[uint32]htb.ClassConfig{}, children: map[uint32][]uint32{}, depth: map[uint32]int{}}
	for _, c := range classes {
		t.class[c.ID] = c
	}
	for _, c := range classes {
		if _, ok := t.class[c.Parent]; ok {
			t.children[c.Parent] = append(t.children[c.Parent], c.ID)
		}
	}
	var inner []uint32
	for _, c := range classes {
		d := 0
		for p := c.Parent; ; d++ {
			pc, ok := t.class[p]
			if !ok || d > len(classes) {
				break
			}
			p = pc.Parent
		}
		t.depth[c.ID] = d
		if len(t.children[c.ID]) == 0 {
			t.leaves = append(t.leaves, c.ID)
		} else {
			inner = append(inner, c.ID)
		}
	}
	slices.SortStableFunc(inner, func(a, b uint32) int { return t.depth[b] - t.depth[a] })
	t.bottomUp = inner
	return t
}

// sumUp sets each inner class's use to its leaves' (leaves' given).
func (t *tree) sumUp(use map[uint32]uint64) {
	for _, p := range t.bottomUp {
		use[p] = t.subtreeUse(use, p)
	}
}

// subtreeUse is what p's children send.
func (t *tree) subtreeUse(use map[uint32]uint64, p uint32) uint64 {
	var s uint64
	for _, c := range t.children[p] {
		s += use[c]
	}
	return s
}

// lend shares spare bytes a second of class p among the leaves under it
// that want more, by prio, then by quantum (water-filling: a leaf's
// share past what it may take goes to the others), and adds what each
// takes to its use and its ancestors'.
func (t *tree) lend(use map[uint32]uint64, demand map[uint32]uint64, p uint32, spare uint64) {
	var under []uint32
	for _, l := range t.leaves {
		if t.isUnder(l, p) {
			under = append(under, l)
		}
	}
	prios := map[uint8]bool{}
	for _, l := range under {
		prios[t.class[l].Prio] = true
	}
	for prio := range uint8(htb.NumPrio) {
		if !prios[prio] || spare == 0 {
			continue
		}
		var ls []uint32
		for _, l := range under {
			if t.class[l].Prio == prio {
				ls = append(ls, l)
			}
		}
		spare -= t.fill(use, demand, p, ls, spare)
	}
}

// fill shares spare among leaves ls under p by quantum, each to the most
// it may take (headroom), and returns what they took.
func (t *tree) fill(use map[uint32]uint64, demand map[uint32]uint64, p uint32, ls []uint32, spare uint64) uint64 {
	var taken uint64
	for range len(ls) + 1 {
		var hungry []uint32
		var weight uint64
		for _, l := range ls {
			if t.headroom(use, demand, p, l) > 0 {
				hungry = append(hungry, l)
				weight += uint64(max(t.class[l].Quantum, 1))
			}
		}
		left := spare - taken
		if len(hungry) == 0 || left == 0 {
			break
		}
		round := uint64(0)
		for _, l := range hungry {
			share := mulDiv(left, uint64(max(t.class[l].Quantum, 1)), weight)
			give := min(share, t.headroom(use, demand, p, l))
			t.add(use, l, p, give)
			round += give
		}
		taken += round
		if round == 0 {
			break
		}
	}
	return taken
}

// headroom is what leaf l may still take from p: its ceil and demand
// past its use, and each class between it and p under its ceil.
func (t *tree) headroom(use map[uint32]uint64, demand map[uint32]uint64, p, l uint32) uint64 {
	c := t.class[l]
	h := sub(min(c.Ceil, demand[l]), use[l])
	for a := c.Parent; a != p; a = t.class[a].Parent {
		h = min(h, sub(t.class[a].Ceil, use[a]))
	}
	return h
}

// add gives leaf l n more bytes a second, lent by p: l's use and that of
// each class from l up to p grow.
func (t *tree) add(use map[uint32]uint64, l, p uint32, n uint64) {
	for a := l; ; a = t.class[a].Parent {
		use[a] += n
		if a == p {
			return
		}
	}
}

// isUnder reports whether l is under p (not p itself).
func (t *tree) isUnder(l, p uint32) bool {
	for a, d := t.class[l].Parent, 0; d <= len(t.class); a, d = t.class[a].Parent, d+1 {
		if a == p {
			return true
		}
		if _, ok := t.class[a]; !ok {
			return false
		}
	}
	return false
}

// sub is a-b, or 0 when b > a.
func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// mulDiv is a*b/c without overflow for rates and quanta.
func mulDiv(a, b, c uint64) uint64 {
	if c == 0 {
		return 0
	}
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return ^uint64(0)
	}
	q, _ := bits.Div64(hi, lo, c)
	return q
}
