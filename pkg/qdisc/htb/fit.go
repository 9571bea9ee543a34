package htb

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

// Fit returns a copy of classes (in Config.Classes' order: parents first)
// with class id and every class under it fitted under rate and ceil (bytes
// per second), so that the subtree as a whole sends no more than them:
// id's rate and ceil become no higher than rate and ceil, and, down the
// subtree, the children of a fitted class have their rates scaled down in
// proportion to what they were (rounded down, at least 1 byte per second)
// so that they add up to no more than their parent's fitted rate, and
// their ceils no higher than its fitted ceil. A class within its rate
// sends without asking its ancestors (htb's lending), so bounding the top
// class alone would not bound the subtree. id 0 (or the qdisc's handle)
// fits the whole tree: the classes at the top are the children of a root
// of rate and ceil. Classes outside the subtree are copied unchanged; a
// Ceil of 0 is read as the class's Rate, and the fitted classes' Ceils are
// given. The result may not Validate (a burst may last too long at a much
// lower rate): the caller validates it.
//
// A spent quota (Quota.Rate) fits its class's subtree under its rate the
// same way; Fit is that fitting for a configuration (an annotation's
// bandwidth over a tree, say).
func Fit(classes []ClassConfig, id uint32, rate, ceil uint64) ([]ClassConfig, error) {
	if rate == 0 || ceil == 0 {
		return nil, fmt.Errorf("htb: fit under rate %d ceil %d: both must be at least 1 byte per second", rate, ceil)
	}
	top := id&0xffff == 0 // the qdisc's handle, or 0
	parents := make([]int, len(classes))
	index := make(map[uint32]int, len(classes))
	bounds := make([]fitted, len(classes))
	found := top
	for i, c := range classes {
		parents[i] = -1
		if j, ok := index[c.Parent]; ok {
			parents[i] = j
		} else if c.Parent&0xffff != 0 {
			return nil, fmt.Errorf("htb: fit: class %s: parent %s is not a class before it", classify.ClassID(c.ID), classify.ClassID(c.Parent))
		}
		index[c.ID] = i
		if c.ID == id && !top {
			bounds[i], found = fitted{rate, ceil}, true
		}
	}
	if !found {
		return nil, fmt.Errorf("htb: fit: no class %s", classify.ClassID(id))
	}
	var root *fitted
	if top {
		root = &fitted{rate, ceil}
	}
	out := append([]ClassConfig(nil), classes...)
	for i, f := range fitRates(classes, parents, bounds, root) {
		if f != unbounded {
			out[i].Rate, out[i].Ceil = f.rate, f.ceil
		}
	}
	return out, nil
}

// fitted is a class's rate and ceil in bytes per second, as fitRates
// computes them.
type fitted struct{ rate, ceil uint64 }

// unbounded is a class's bound when nothing fits it: its own rates stand.
var unbounded = fitted{0, 0}

// fitRates returns each class's rate and ceil, unbounded for a class that
// nothing bounds (its configured rates stand). parents[i] is class i's
// parent's position (-1: the top), parents first. bounds[i] is what class
// i is bounded to itself (unbounded: nothing; noFall in either: that one
// not): its rate and ceil are min'd with it. A class under a bounded one
// is fitted under its parent as Fit says; root, if not nil, is a parent of
// the classes at the top.
func fitRates(classes []ClassConfig, parents []int, bounds []fitted, root *fitted) []fitted {
	// sums[i+1] is the sum of class i's children's configured rates
	// (saturated); sums[0] the top classes'.
	sums := make([]uint64, len(classes)+1)
	for i, c := range classes {
		s := &sums[parents[i]+1]
		*s = satAdd(*s, c.Rate)
	}
	out := make([]fitted, len(classes))
	for i, c := range classes {
		ceil := c.Ceil
		if ceil == 0 {
			ceil = c.Rate
		}
		p := root // what the class is fitted under (nil: nothing)
		if j := parents[i]; j >= 0 {
			p = nil
			if out[j] != unbounded {
				p = &out[j]
			}
		}
		f := unbounded
		if p != nil {
			f = fitted{scaleRate(c.Rate, sums[parents[i]+1], p.rate), min(ceil, p.ceil)}
		}
		if b := bounds[i]; b != unbounded {
			if f == unbounded {
				f = fitted{c.Rate, ceil}
			}
			f = fitted{min(f.rate, b.rate), min(f.ceil, b.ceil)}
		}
		out[i] = f
	}
	return out
}

// scaleRate returns r scaled down so that children of rates summing to sum
// fit under parent: r*parent/sum rounded down, at least 1, or r itself
// when they fit already.
func scaleRate(r, sum, parent uint64) uint64 {
	if sum <= parent {
		return r
	}
	hi, lo := bits.Mul64(r, parent)
	q, _ := bits.Div64(hi, lo, sum) // r <= sum: q <= parent, no overflow
	return max(q, 1)
}

// satAdd is a+b, at most math.MaxUint64.
func satAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return math.MaxUint64
	}
	return s
}
