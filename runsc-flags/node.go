package runscflags

import (
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// nodeFields are a direction's node fields of a Config.
type nodeFields struct {
	path, parent     *string
	rate, ceil, prio *uint64
}

// nodeOf returns the node fields of direction d.
func (c *Config) nodeOf(d Ceiling) nodeFields {
	if d == IngressCeiling {
		return nodeFields{&c.IngressNode, &c.IngressNodeParent, &c.IngressNodeRate, &c.IngressNodeCeil, &c.IngressNodePrio}
	}
	return nodeFields{&c.Node, &c.NodeParent, &c.NodeRate, &c.NodeCeil, &c.NodePrio}
}

// InNode says whether the sandbox is a class of a node in direction d.
func (c *Config) InNode(d Ceiling) bool { return *c.nodeOf(d).path != "" }

// validateNode is Validate for the node flags: a node needs a rate, the
// other flags need a node, the ceil is at least the rate, the parent is
// a classid, and what the class holds back has a qdisc to wait in.
func (c *Config) validateNode() error {
	for _, d := range []Ceiling{EgressCeiling, IngressCeiling} {
		n, names := c.nodeOf(d), nodeFlagNames[d]
		if *n.path == "" {
			for _, f := range []struct {
				name string
				set  bool
			}{{names.parent, *n.parent != ""}, {names.rate, *n.rate != 0}, {names.ceil, *n.ceil != 0}, {names.prio, *n.prio != 0}} {
				if f.set {
					return fmt.Errorf("--%s is the sandbox's class of a node, but no node is given: set --%s (the node's tree file) or leave --%s unset", f.name, names.path, f.name)
				}
			}
			continue
		}
		if *n.rate == 0 {
			return fmt.Errorf("--%s requires --%s, the bandwidth the sandbox's class is guaranteed (such as 10mbit)", names.path, names.rate)
		}
		if *n.ceil != 0 && *n.ceil < *n.rate {
			return fmt.Errorf("--%s=%s is below --%s=%s: the ceil is the most the class sends, the rate the least", names.ceil, showRate(*n.ceil), names.rate, showRate(*n.rate))
		}
		if _, err := parseParent(*n.parent); err != nil {
			return fmt.Errorf("--%s=%s: %v", names.parent, *n.parent, err)
		}
		if d == EgressCeiling && c.QDisc == QDiscNone {
			return fmt.Errorf("--%s: what the sandbox's class holds back waits in its qdisc, and --%s=none has none: choose fifo or another", names.path, FlagQDisc)
		}
	}
	return nil
}

// parseParent reads a parent classid as tc's words do ("" is 0: the
// tree's root class).
func parseParent(s string) (uint32, error) {
	if s == "" {
		return 0, nil
	}
	c, err := htb.ParseClass("parent " + s + " classid 1:1 rate 1kbit")
	if err != nil {
		return 0, fmt.Errorf("want tc's major:minor, such as 1:10")
	}
	return c.Parent, nil
}

// applyKubeNode applies a bandwidth annotation of r bytes/s to a class
// of a node, as its ceil (and its rate, where the ceil falls below it),
// and reports whether the annotation's direction is one.
func (c *Config) applyKubeNode(op *Config, key, value string, r uint64) bool {
	d := EgressCeiling
	if key == AnnotationKubeIngress {
		d = IngressCeiling
	}
	if !c.InNode(d) {
		return false
	}
	n, names := c.nodeOf(d), nodeFlagNames[d]
	if op.AllowFlagOverride {
		*n.ceil = r
	} else {
		if ceiling := *op.nodeOf(d).ceil; ceiling != 0 && r > ceiling {
			c.Notices = append(c.Notices, fmt.Sprintf("annotation %s=%q: %s is above the operator's ceiling --%s=%s; the pod gets the ceiling (a bandwidth annotation is a limit, not a reservation)", key, value, showRate(r), names.ceil, showRate(ceiling)))
		}
		*n.ceil = minSet(*n.ceil, r)
	}
	*n.rate = min(*n.rate, *n.ceil)
	return true
}

// nodeClass returns the sandbox's class in direction d under tree: a
// leaf under the parent the flags give (the tree's root class by
// default), with classid id; a ceil left unset is the parent's.
func (c *Config) nodeClass(d Ceiling, tree htb.Script, id uint32) (htb.ClassConfig, error) {
	n, names := c.nodeOf(d), nodeFlagNames[d]
	pid, err := parseParent(*n.parent)
	if err != nil {
		return htb.ClassConfig{}, fmt.Errorf("--%s=%s: %v", names.parent, *n.parent, err)
	}
	var parent *htb.ClassConfig
	var roots []string
	for i, k := range tree.Classes {
		if k.ID == pid {
			parent = &tree.Classes[i]
		}
		if !hasClass(tree, k.Parent) {
			roots = append(roots, classify.ClassID(k.ID))
			if pid == 0 {
				parent = &tree.Classes[i]
			}
		}
	}
	switch {
	case pid == 0 && len(roots) != 1:
		return htb.ClassConfig{}, fmt.Errorf("the node's tree %s has %d root classes (%s): give --%s", *n.path, len(roots), strings.Join(roots, ", "), names.parent)
	case parent == nil:
		return htb.ClassConfig{}, fmt.Errorf("--%s=%s: the node's tree %s has no such class", names.parent, *n.parent, *n.path)
	}
	ceil := *n.ceil
	if ceil == 0 {
		ceil = max(parent.Ceil, parent.Rate)
	}
	return htb.ClassConfig{ID: id, Parent: parent.ID, Rate: *n.rate, Ceil: max(ceil, *n.rate), Prio: uint8(*n.prio)}, nil
}

// hasClass says whether tree has a class id.
func hasClass(tree htb.Script, id uint32) bool {
	for _, k := range tree.Classes {
		if k.ID == id {
			return true
		}
	}
	return false
}
