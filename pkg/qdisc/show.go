package qdisc

import (
	"fmt"
	"strings"
)

// Showing is a qdisc as `tc -s qdisc show` and `tc -s class show` print
// it: its own line and counters, the qdiscs grafted under its classes,
// and its classes. Each qdisc reports one (Shower); a runtime writes
// tc's lines from it (WriteTC), so that every kind is laid out as
// iproute2's tc_qdisc.c and tc_class.c lay out Linux's.
type Showing struct {
	// Kind is tc's name of the qdisc ("tbf"), and Options what tc prints
	// after its handle and parent (q_tbf.c's print_opt).
	Kind, Options string
	// Handle is the qdisc's own handle (major << 16: htb's 1:); 0 gives it
	// the next handle tc would give a qdisc added without one (8001:,
	// 8002:, ...).
	Handle uint32
	// Stats are its counters, and XStats its own after them (fq_codel's
	// maxpacket ...), "" for none.
	Stats  Stats
	XStats string
	// Children are the qdiscs grafted under its classes (a tbf's child,
	// an htb leaf's fq_codel); the default FIFOs Linux creates unnamed
	// (invisible to tc) are not among them.
	Children []Grafted
	// Classes prints its classes as `tc -s class show` does, leaf giving
	// the handle of the qdisc grafted under a class (0: none); nil for a
	// classless qdisc.
	Classes func(leaf func(classid uint32) uint32) string
}

// Grafted is a qdisc grafted under a class of its parent.
type Grafted struct {
	// Class is the class's minor number; its major is the parent's
	// handle.
	Class uint16
	Showing
}

// Shower is a qdisc that reports how tc shows it.
type Shower interface {
	Show() Showing
}

// SplitKind splits a qdisc's one-line description ("tbf rate 10Mbit
// ...") into tc's kind and options.
func SplitKind(desc string) (kind, options string) {
	kind, options, _ = strings.Cut(desc, " ")
	return kind, options
}

// Gated is s under a ceiling set on it in place (a tbf gate, as
// `tc qdisc replace dev eth0 root tbf ...` puts a tbf over a queue): the
// ceiling at the root, showing the queue's counters (its overlimits are
// the ceiling's), and s grafted under its class 1; s alone when ceiling
// is nil (or says nothing of itself).
func Gated(ceiling any, s Showing) Showing {
	str, ok := ceiling.(fmt.Stringer)
	if !ok {
		return s
	}
	root := Showing{Stats: s.Stats}
	root.Kind, root.Options = SplitKind(str.String())
	s.Stats.Overlimits = 0
	root.Children = []Grafted{{Class: 1, Showing: s}}
	return root
}

// Handles gives qdiscs without a handle of their own the ones Linux's
// qdisc_alloc_handle gives, in order: 8001:, 8002:, ... The zero value
// starts at 8001:.
type Handles struct{ next uint32 }

// alloc returns h's next handle.
func (h *Handles) alloc() uint32 {
	if h.next == 0 {
		h.next = 0x8001
	}
	handle := h.next << 16
	h.next++
	return handle
}

// classID formats a class as tc does: "1:10", "ffff:" for minor 0.
func classID(classid uint32) string {
	if classid&0xffff == 0 {
		return Handle(classid)
	}
	return fmt.Sprintf("%x:%x", classid>>16, classid&0xffff)
}

// Handle formats a qdisc handle as tc does: "8001:".
func Handle(handle uint32) string { return fmt.Sprintf("%x:", handle>>16) }

// WriteTC writes s and the qdiscs grafted under it as `tc -s qdisc show`
// prints them on dev, s hanging at parent ("root refcnt 2" for a
// device's root qdisc, as on a single-queue device; "parent ffff:" for
// a receive shaper under the ingress qdisc), handles from h, then its
// classes and its children's as `tc -s class show dev DEV` prints them.
func WriteTC(b *strings.Builder, dev, parent string, s Showing, h *Handles) {
	var classes []string
	writeTC(b, dev, parent, s, h, &classes)
	for _, c := range classes {
		b.WriteString(c)
		b.WriteString("\n")
	}
}

func writeTC(b *strings.Builder, dev, parent string, s Showing, h *Handles, classes *[]string) {
	handle := s.Handle
	if handle == 0 {
		handle = h.alloc()
	}
	fmt.Fprintf(b, "qdisc %s %s dev %s %s", s.Kind, Handle(handle), dev, parent)
	if s.Options != "" {
		fmt.Fprintf(b, " %s", s.Options)
	}
	fmt.Fprintf(b, "\n %v\n", s.Stats)
	if s.XStats != "" {
		fmt.Fprintf(b, "%s\n", s.XStats)
	}
	leaves := make(map[uint32]uint32, len(s.Children))
	var below []string
	for _, c := range s.Children {
		classid := handle | uint32(c.Class)
		if c.Handle == 0 {
			c.Handle = h.alloc()
		}
		leaves[classid] = c.Handle
		writeTC(b, dev, "parent "+classID(classid), c.Showing, h, &below)
	}
	if s.Classes != nil {
		if text := s.Classes(func(classid uint32) uint32 { return leaves[classid] }); text != "" {
			*classes = append(*classes, text)
		}
	}
	*classes = append(*classes, below...)
}
