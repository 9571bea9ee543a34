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
// fit under a parent's rate are taken as given (Join refuses them).
//
// This is htb's documented sharing, and what sch_htb sends where each
// sandbox's ceil is the root's (TestAllocateIsHTB). Where ceils below
// the root's or tenants' classes make a class alternate between lending
// and borrowing, sch_htb's round robin drifts from the quanta; Allocate
// keeps to them.
func Allocate(classes []htb.ClassConfig, demand map[uint32]uint64) map[uint32]uint64 {
	d := make([]uint64, len(classes))
	for i, c := range classes {
		d[i] = demand[c.ID]
	}
	s := index(classes)
	s.run(d)
	out := make(map[uint32]uint64, len(classes))
	for _, l := range s.leaves {
		out[classes[l].ID] = s.use[l]
	}
	return out
}

// shares is a tree of classes indexed by position, and what each sends
// for a demand (run). A Member keeps one while the tree and the live
// leaves stay as they are.
type shares struct {
	classes  []htb.ClassConfig
	parent   []int // -1: none
	children [][]int
	// leaves, the inner classes from the deepest up, and the leaves
	// under each inner class.
	leaves, bottomUp []int
	under            [][]int

	demand, use []uint64
	// byPrio and ws are run's scratch.
	byPrio []int
	ws     []want
}

// index builds the tree of classes.
func index(classes []htb.ClassConfig) *shares {
	n := len(classes)
	s := &shares{classes: classes, parent: make([]int, n), children: make([][]int, n), under: make([][]int, n), use: make([]uint64, n)}
	// A classid's first class is the one its children hang from (a
	// tree gone wrong may repeat one), and a parent
	// link that would close a cycle is cut: the walks up the tree end.
	pos := make(map[uint32]int, n)
	for i, c := range classes {
		if _, ok := pos[c.ID]; !ok {
			pos[c.ID] = i
		}
	}
	for i := range s.parent {
		s.parent[i] = -1
	}
	for i, c := range classes {
		if p, ok := pos[c.Parent]; ok && p != i && !s.above(i, p) {
			s.parent[i] = p
			s.children[p] = append(s.children[p], i)
		}
	}
	depth := make([]int, n)
	for i := range classes {
		for p, d := s.parent[i], 0; p >= 0 && d <= n; p, d = s.parent[p], d+1 {
			depth[i]++
			if len(s.children[i]) == 0 {
				s.under[p] = append(s.under[p], i)
			}
		}
		if len(s.children[i]) == 0 {
			s.leaves = append(s.leaves, i)
		} else {
			s.bottomUp = append(s.bottomUp, i)
		}
	}
	slices.SortStableFunc(s.bottomUp, func(a, b int) int { return depth[b] - depth[a] })
	return s
}

// above reports whether class i is p or above it, by the parent links set
// so far.
func (s *shares) above(i, p int) bool {
	for a, d := p, 0; a >= 0 && d <= len(s.parent); a, d = s.parent[a], d+1 {
		if a == i {
			return true
		}
	}
	return false
}

// run computes what each class sends when leaf i wants demand[i].
func (s *shares) run(demand []uint64) {
	s.demand = demand
	clear(s.use)
	for _, l := range s.leaves {
		c := &s.classes[l]
		s.use[l] = min(c.Rate, c.Ceil, demand[l])
	}
	for _, p := range s.bottomUp {
		s.use[p] = s.subtreeUse(p)
	}
	for _, p := range s.bottomUp {
		if used := s.subtreeUse(p); used < s.classes[p].Rate {
			s.lend(p, s.classes[p].Rate-used)
		}
	}
}

// leaf reports whether class i has no children.
func (s *shares) leaf(i int) bool { return len(s.children[i]) == 0 }

// subtreeUse is what p's children send.
func (s *shares) subtreeUse(p int) uint64 {
	var u uint64
	for _, c := range s.children[p] {
		u += s.use[c]
	}
	return u
}

// lend shares spare bytes a second of class p among the leaves under it
// that want more, by prio, then by quantum, and adds what each takes to
// its use and its ancestors'.
func (s *shares) lend(p int, spare uint64) {
	for prio := range uint8(htb.NumPrio) {
		if spare == 0 {
			return
		}
		s.byPrio = s.byPrio[:0]
		for _, l := range s.under[p] {
			if s.classes[l].Prio == prio {
				s.byPrio = append(s.byPrio, l)
			}
		}
		if len(s.byPrio) > 0 {
			spare -= s.fill(p, s.byPrio, spare)
		}
	}
}

// want is a leaf's claim on a lender's spare: the most it may take and
// its quantum.
type want struct {
	leaf    int
	room, q uint64
}

// fill shares spare among leaves ls under p by quantum, each to the most
// it may take (headroom): water-filling, the leaves with the least room
// per quantum first, each taking its quantum's part of what is left or
// its room if less. Under p's children that are inner classes, their
// ceils bound what their leaves take together: those leaves fill again
// from what the bound left, until nothing moves.
func (s *shares) fill(p int, ls []int, spare uint64) uint64 {
	var taken uint64
	for range len(ls) + 1 {
		ws := s.ws[:0]
		var weight uint64
		for _, l := range ls {
			if room := s.headroom(p, l); room > 0 {
				q := uint64(max(s.classes[l].Quantum, 1))
				ws = append(ws, want{l, room, q})
				weight += q
			}
		}
		s.ws = ws
		left := spare - taken
		if len(ws) == 0 || left == 0 {
			break
		}
		slices.SortFunc(ws, func(a, b want) int {
			ah, al := bits.Mul64(a.room, b.q)
			bh, bl := bits.Mul64(b.room, a.q)
			if ah != bh {
				return cmpU(ah, bh)
			}
			return cmpU(al, bl)
		})
		round := uint64(0)
		for _, w := range ws {
			// room is read again: a leaf before it under the same
			// inner class may have used the class's ceil.
			give := min(s.headroom(p, w.leaf), mulDiv(left-round, w.q, weight))
			s.add(w.leaf, p, give)
			round += give
			weight -= w.q
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
func (s *shares) headroom(p, l int) uint64 {
	c := &s.classes[l]
	h := sub(min(c.Ceil, s.demand[l]), s.use[l])
	for a := s.parent[l]; a >= 0 && a != p; a = s.parent[a] {
		h = min(h, sub(s.classes[a].Ceil, s.use[a]))
	}
	return h
}

// add gives leaf l n more bytes a second, lent by p: l's use and that of
// each class from l up to p grow.
func (s *shares) add(l, p int, n uint64) {
	for a := l; a >= 0; a = s.parent[a] {
		s.use[a] += n
		if a == p {
			return
		}
	}
}

// cmpU compares a and b.
func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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
