package runscflags

import (
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// The queues a runtime grafts under the kind it runs (Kind.Graft), as
// `tc qdisc add dev eth0 parent 1: KIND` grafts one: the kind
// --qdisc-tbf-child names under the send path's kind (fq unless told;
// fifo is the kind's own byte FIFO), and the kinds the kind's own words
// graft by name (htb's "qdisc parent 1:20 fq_codel"), each with the
// options the flags give it (fq_codel's --qdisc-fq-codel-* knobs) or its
// defaults.

// childName is the kind --qdisc-tbf-child names: its default where unset.
func (c *Config) childName() string {
	if c.TBFChild != "" {
		return c.TBFChild
	}
	return ChildFQ
}

// childOf returns what c grafts under the kind of direction d, by the
// name the kind asks for (Kind.Graft): "" is the runtime's choice,
// --qdisc-tbf-child's kind on the send path and none (the kind's own
// queue) on the receive path, which has no such flag.
func (c *Config) childOf(d Ceiling) func(kind string) (qdisc.Child, error) {
	return func(name string) (qdisc.Child, error) {
		if name == "" {
			if d != EgressCeiling {
				return qdisc.Child{}, nil
			}
			name = c.childName()
		}
		k, ok := qdisc.Lookup(name)
		if !ok {
			return qdisc.Child{}, fmt.Errorf("no %s qdisc is registered to graft", name)
		}
		o, err := c.childOptions(&k)
		if err != nil {
			return qdisc.Child{}, err
		}
		return qdisc.Child{Kind: &k, Options: o}, nil
	}
}

// childOptions returns the options of kind k grafted as a child: those
// of its knobs' flags where it has them (an alias: fq_codel's), else its
// words flag's on the send path where c grafts it there (wordsIn:
// --qdisc-tbf-child=netem with --qdisc-netem), else its defaults.
func (c *Config) childOptions(k *qdisc.Kind) (qdisc.Options, error) {
	for i := range aliasFlags {
		if a := aliasFlags[i].alias; a.kind == k.Name {
			return a.options(c), nil
		}
	}
	if f := lookup(kindFlagName(EgressCeiling, k.Name)); f != nil && f.words != nil {
		if in, ok, err := c.wordsIn(f); err != nil || ok {
			return in.opts, err
		}
	}
	return k.Parse("")
}

// grafts reports whether c's send path runs kind or grafts it as
// --qdisc-tbf-child under its tbf (ceilingKind).
func (c *Config) grafts(kind string) bool {
	runs := c.QDisc.String()
	return runs == kind || runs == ceilingKind && c.childName() == kind
}

// grafted returns in's options with what c grafts under its kind built
// for a link whose largest frame is mtu (Kind.Graft), or as they are for
// a kind that grafts nothing.
func (c *Config) grafted(d Ceiling, in kindIn, mtu uint32) (qdisc.Options, error) {
	if in.kind.Graft == nil {
		return in.opts, nil
	}
	return in.kind.Graft(in.opts, mtu, c.childOf(d))
}

// childKinds are the registered kinds that can be grafted under a shaper
// (Kind.Queue): what --qdisc-tbf-child takes.
func childKinds() []string {
	var names []string
	for _, k := range qdisc.Kinds() {
		if k.Queue != nil {
			names = append(names, k.Name)
		}
	}
	return names
}

// parseChild reads --qdisc-tbf-child: a registered kind that can be
// grafted (childKinds); its default, fq, is held as "".
func parseChild(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == ChildFQ {
		return "", nil
	}
	if k, ok := qdisc.Lookup(s); ok && k.Queue != nil {
		return s, nil
	}
	return "", fmt.Errorf("invalid tbf child %q: choose %s", s, orList(childKinds()))
}
