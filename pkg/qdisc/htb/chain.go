package htb

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
)

// A chain's classifier answers with an index, not a classid, so that a
// packet costs one Classify per chain it passes and a slice index, no map
// lookup: 1 + the class's position in Tree.classes, directIndex for the
// direct queue, or noClass for "no rule matched, or a class that does not
// exist" (the default class).
const (
	noClass     = 0
	directIndex = math.MaxUint32
)

// CatchAll reports whether r has no match words, only a class: tc's
// matchall, which takes every packet that reaches it.
func CatchAll(r classify.Rule) bool {
	r.Class = 0
	return r == classify.Rule{}
}

// compileChain returns the classifier of a chain of rules: each rule's
// class replaced by index(class), and the first catch-all rule (if any)
// the chain's answer for every packet no rule before it places (malformed
// ones included, as tc's matchall takes them), the rules after it never
// tried. Without a catch-all, that answer is noClass.
func compileChain(rules []classify.Rule, index func(uint32) uint32, dir classify.Direction) (*classify.Classifier, error) {
	def := uint32(noClass)
	out := make([]classify.Rule, 0, len(rules))
	for _, r := range rules {
		if CatchAll(r) {
			def = index(r.Class)
			break
		}
		r.Class = index(r.Class)
		out = append(out, r)
	}
	return classify.New(out, def, dir)
}

// index returns what a chain's classifier answers for the class id: its
// position in t.classes + 1, directIndex for the qdisc's handle, noClass
// for no class.
func (t *Tree) index(id uint32) uint32 {
	if id == t.handle {
		return directIndex
	}
	if i, ok := t.pos[id]; ok {
		return i
	}
	return noClass
}

// buildChains makes the tree's classifiers: the root chain's (unless the
// tree was given its own Classifier) and each inner class's.
func (t *Tree) buildChains() error {
	t.handle = t.cfg.Handle
	t.pos = make(map[uint32]uint32, len(t.classes))
	t.defIndex = directIndex
	for i, cl := range t.classes {
		t.pos[cl.id] = uint32(i + 1)
		if cl == t.def {
			t.defIndex = uint32(i + 1)
		}
	}
	if t.custom == nil {
		root, err := compileChain(t.cfg.Rules, t.index, t.cfg.Direction)
		if err != nil {
			return fmt.Errorf("htb: %w", err)
		}
		t.root = root
	}
	t.chains = make([]*classify.Classifier, len(t.classes))
	t.settled = make([]uint32, len(t.classes)+1)
	t.settled[noClass] = t.defIndex
	for i, cl := range t.classes {
		if cl.level == 0 {
			t.settled[i+1] = uint32(i + 1)
		}
		rules, ok := t.cfg.Chains[cl.id]
		if !ok || cl.level == 0 { // a leaf's filters are never run
			continue
		}
		ch, err := compileChain(rules, t.index, t.cfg.Direction)
		if err != nil {
			return fmt.Errorf("htb: class %s: %w", classify.ClassID(cl.id), err)
		}
		t.chains[i] = ch
	}
	return nil
}

// leafOf returns the leaf pkt goes to, nil for the direct queue
// (htb_classify): see place.
func (t *Tree) leafOf(pkt *stack.PacketBuffer) *class {
	return t.leafAt(t.place(pkt))
}

// place returns where pkt goes (htb_classify), as a chain's classifier
// answers: 1 + the leaf's position in t.classes, or directIndex. It is the
// root chain's answer, then, while that is an inner class, its chain's; a
// chain that places the packet nowhere, an inner class without one, or a
// class that does not exist send it to the default leaf (the direct queue
// when there is none). Validate bounds the walk (no loop, at most MaxDepth
// inner classes); the loop's bound is that. It reads only what NewTree
// set, so that it may run without the lane's lock (Sort).
func (t *Tree) place(pkt *stack.PacketBuffer) uint32 {
	var i uint32
	if t.custom != nil {
		i = t.index(t.custom.Classify(pkt.NetworkProtocolNumber, pkt))
	} else {
		i = t.root.Classify(pkt.NetworkProtocolNumber, pkt)
	}
	if i < uint32(len(t.settled)) && t.settled[i] != 0 { // a leaf, or the default
		return t.settled[i]
	}
	return t.placeBelow(pkt, i)
}

// placeBelow is place for a packet the root chain answered i for when
// that was an inner class or the direct queue: the inner classes' chains,
// or the default.
func (t *Tree) placeBelow(pkt *stack.PacketBuffer, i uint32) uint32 {
	for range MaxDepth + 1 {
		if i == noClass || i == directIndex {
			break
		}
		if t.classes[i-1].level == 0 {
			return i
		}
		ch := t.chains[i-1]
		if ch == nil {
			break
		}
		i = ch.Classify(pkt.NetworkProtocolNumber, pkt)
	}
	if i == directIndex {
		return directIndex
	}
	return t.defIndex
}

// leafAt returns the leaf place answered i for, nil for the direct queue.
func (t *Tree) leafAt(i uint32) *class {
	if i == directIndex {
		return nil
	}
	return t.classes[i-1]
}

// ClassOf returns the class Enqueue would put pkt in, classifying it as
// the packet path does (the root chain, then each inner class's chain
// down to a leaf): the leaf's classid, or the qdisc's handle for the
// direct queue. Nothing is queued, and pkt is not modified.
func (t *Tree) ClassOf(pkt *stack.PacketBuffer) uint32 {
	if cl := t.leafOf(pkt); cl != nil {
		return cl.id
	}
	return t.cfg.Handle
}

// validateChains checks c.Rules and c.Chains: each chain is an inner
// class's, within classify.MaxRules, its rules valid and naming classes of
// the qdisc (or its handle); and no packet can loop among chains or pass
// more than MaxDepth inner classes (Linux drops such a packet, "htb:
// classify loop detected"). index holds each class's position, inner
// those with children.
func (c Config) validateChains(major uint32, index map[uint32]int, inner []bool) error {
	check := func(owner uint32, rules []classify.Rule) error {
		where := "filter"
		if owner != 0 {
			where = "filter parent " + classify.ClassID(owner)
		}
		if len(rules) > classify.MaxRules {
			return htbClassErr(owner, "filter", "%d filters, more than the %d a classifier takes; merge some (a prefix covers many addresses)", len(rules), classify.MaxRules)
		}
		// htb_classify: a filter's class of another qdisc is no class
		// here (Linux falls back to the default); X:0 is the direct
		// queue.
		for i, r := range rules {
			if r.Class>>16 != major {
				return htbClassErr(owner, "filter", "%s %d (%v) sends packets to %s, not a class of qdisc %x:; give a class of %x: (or %x: for the direct queue)", where, i+1, r, classify.ClassID(r.Class), major, major, major)
			}
		}
		if _, err := classify.New(rules, c.Default, c.Direction); err != nil {
			return htbClassErr(owner, "filter", "%v", err)
		}
		return nil
	}
	if err := check(0, c.Rules); err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(c.Chains)) {
		rules := c.Chains[id]
		if _, ok := index[id]; !ok {
			if id&0xffff == 0 {
				return htbClassErr(0, "filter", "filters attached to %s, the qdisc itself, are its root chain: give them as Rules (filter ... with no parent)", classify.ClassID(id))
			}
			return htbClassErr(0, "filter", "filters attached to %s, which is no class of the qdisc; attach them to one of its inner classes", classify.ClassID(id))
		}
		if err := check(id, rules); err != nil {
			return err
		}
	}
	// depth[i]: the most inner classes a packet that reaches inner class
	// i passes from there on; 0: not yet known, -1: being computed (a
	// loop if met again).
	depth := make([]int, len(c.Classes))
	var walk func(i int) error
	walk = func(i int) error {
		depth[i] = -1
		most := 0
		for _, r := range c.Chains[c.Classes[i].ID] {
			if j, ok := index[r.Class]; ok && inner[j] {
				switch depth[j] {
				case -1:
					return htbClassErr(c.Classes[i].ID, "filter", "filter %v sends packets to class %s, whose chain leads back here: a loop (Linux drops its packets); send them to a class under %s", r, classify.ClassID(r.Class), classify.ClassID(c.Classes[i].ID))
				case 0:
					if err := walk(j); err != nil {
						return err
					}
				}
				most = max(most, depth[j])
			}
			if CatchAll(r) {
				break // the rules after it are never tried
			}
		}
		depth[i] = most + 1
		if depth[i] > MaxDepth {
			return htbClassErr(c.Classes[i].ID, "filter", "a packet its chain classifies passes %d inner classes' chains, and Linux's htb drops a packet after %d (classify loop detected); send packets to classes further down", depth[i], MaxDepth)
		}
		return nil
	}
	for i := range c.Classes {
		if inner[i] && depth[i] == 0 {
			if err := walk(i); err != nil {
				return err
			}
		}
	}
	return nil
}
