package runscflags

import "github.com/netqdisc/netqdisc/pkg/qdisc/htb"

// applyKubeHTB applies a bandwidth annotation of r bytes/s to the htb
// classes of its direction, if that direction has them, and reports
// whether it did: the tree is fitted under r (htb.Fit: the classes at the
// top share r, and each class's children its rate, their rates scaled
// down where they add up to more, since Linux's htb serves a class within
// its own rate without asking its parent), so that the pod's whole
// traffic that way is held to it. The tree, its filters and its quotas
// stay the operator's.
func (c *Config) applyKubeHTB(key, value string, r uint64) bool {
	p := &c.HTB
	if key == AnnotationKubeIngress {
		p = &c.IngressHTB
	} else if !c.QDisc.Is(htb.Kind) {
		return false
	}
	if *p == "" {
		return false
	}
	s, err := htb.ParseScript(*p)
	if err != nil {
		return false // Validate reports it
	}
	fitted, err := htb.Fit(s.Classes, 0, r, r)
	if err != nil {
		return false // Validate reports it
	}
	s.Classes = fitted
	*p = s.String()
	return true
}
