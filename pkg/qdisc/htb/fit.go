package htb

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

// Fit returns a copy of classes (parents first, as Config.Classes) with
// class id's subtree fitted under rate and ceil (bytes per second), so that
// it sends no more as a whole: id's rate and ceil are min'd with them, and
// down the subtree each fitted class's children have their rates scaled
// down in proportion (rounded down, at least 1) to add up to no more than
// its rate, and their ceils min'd with its ceil. Bounding id alone would
// not do: a class within its rate sends without asking its ancestors. id 0
// (or the qdisc's handle) fits the whole tree, as children of a root of
// rate and ceil. Other classes are copied as they are (shallow); a Ceil of
// 0 reads as Rate. A spent quota fits its subtree so (Quota); the caller
// validates the result (a burst may last too long at a much lower rate).
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

// fitRates returns each class's rate and ceil, or unbounded for a class
// nothing bounds (its configured rates stand). parents[i] is class i's
// parent's position (-1: the top; parents come first); bounds[i], unless
// unbounded, is what class i's own rate and ceil are min'd with; a class
// under a bounded one, or under root if not nil, is fitted as Fit says.
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
