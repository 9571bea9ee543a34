package runscflags

import "github.com/netqdisc/netqdisc/pkg/qdisc/htb"

// applyKubeHTB applies a bandwidth annotation of r bytes/s to the htb
// classes of its direction, if that direction has them, and reports
// whether it did: the tree is fitted under r (fitUnder), so that the
// pod's whole traffic that way, which passes the classes at its top, is
// held to it. The tree, its filters and its quotas stay the operator's.
func (c *Config) applyKubeHTB(key, value string, r uint64) bool {
	p := &c.HTB
	if key == AnnotationKubeIngress {
		p = &c.IngressHTB
	} else if c.QDisc != QDiscHTB {
		return false
	}
	if *p == "" {
		return false
	}
	s, err := parseScript(*p)
	if err != nil {
		return false // Validate reports it
	}
	fitUnder(s.classes, 0, r, r)
	*p = s.String()
	return true
}

// fitUnder fits the children of class id (0: the classes at the top)
// under a rate and a ceil, and theirs under them, down the tree: each
// child's ceil no higher than ceil, and the children's rates scaled down
// in proportion where they add up to more than rate. Linux's htb serves a
// class within its own rate without asking its parent, so lowering a
// class alone would leave its children their rates: a tree fitted so
// sends no more than rate from its classes' own rates, and borrows no
// more than ceil.
func fitUnder(classes []htb.ClassConfig, id uint32, rate, ceil uint64) {
	var kids []int
	var sum uint64
	for i, c := range classes {
		if c.Parent == id || (id == 0 && c.Parent&0xffff == 0) {
			kids = append(kids, i)
			sum += c.Rate
		}
	}
	for _, i := range kids {
		c := &classes[i]
		e := effective(*c)
		if sum > rate {
			c.Rate = max(uint64(float64(c.Rate)*float64(rate)/float64(sum)), 1)
		}
		c.Ceil = max(min(e.Ceil, ceil), c.Rate)
		fitUnder(classes, c.ID, c.Rate, c.Ceil)
	}
}
