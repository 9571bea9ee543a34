package runscflags

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/node"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// BoardSuffix names a node's board: the tree file's path plus it.
const BoardSuffix = ".board"

// BoardSlots is how many sandboxes a board runsc makes holds.
const BoardSlots = 1024

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

// NodeSeat is a sandbox's class on its node's board in one direction,
// as runsc joined it on the host: what the sandbox needs, with the
// board's file, to take its place (AttachNode).
type NodeSeat struct {
	// Ingress: the class shapes what the sandbox receives.
	Ingress bool
	// Path is the tree file's; Slot and Owner the board slot claimed and
	// the token that holds it.
	Path  string
	Slot  int
	Owner uint64
	// ID, Parent, Rate, Ceil and Prio are the class's (htb's words).
	ID, Parent uint32
	Rate, Ceil uint64
	Prio       uint8
	// File is the board file's index in what runsc hands the sandbox.
	File int
}

// class returns the seat's class.
func (s NodeSeat) class() htb.ClassConfig {
	return htb.ClassConfig{ID: s.ID, Parent: s.Parent, Rate: s.Rate, Ceil: s.Ceil, Prio: s.Prio}
}

// JoinNode joins the sandbox whose process on the host is pid to its
// node in each direction the Config gives one: it opens the node's board
// (the tree file's path plus BoardSuffix, made if new), reads the tree
// file into it when it changed (the running sandboxes take the new tree
// at their next step), and claims a slot for the sandbox's class, with a
// classid of the parent's major and minor node.AutoMinor plus the slot,
// all under the board file's lock. It returns the seats and the board
// files to hand the sandbox, which the caller closes once handed. runsc
// calls it as it sets up the sandbox's network, before the sandbox's
// seccomp filter is installed.
func (c *Config) JoinNode(pid int) ([]NodeSeat, []*os.File, error) {
	var seats []NodeSeat
	var files []*os.File
	for _, d := range []Ceiling{EgressCeiling, IngressCeiling} {
		if !c.InNode(d) {
			continue
		}
		s, f, err := c.joinNode(d, pid)
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, nil, fmt.Errorf("--%s=%s: %w", nodeFlagNames[d].path, *c.nodeOf(d).path, err)
		}
		seats, files = append(seats, s), append(files, f)
	}
	return seats, files, nil
}

// openNode opens the board of the node whose tree file is path (made if
// new), takes its lock, and reads the tree file into it where it
// changed. The caller unlocks and closes the board.
func openNode(path string) (*node.File, htb.Script, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, htb.Script{}, fmt.Errorf("reading the node's tree: %w", err)
	}
	tree, err := htb.ParseScript(string(text))
	if err != nil {
		return nil, htb.Script{}, fmt.Errorf("the node's tree: %w", err)
	}
	bf, err := node.OpenFile(path+BoardSuffix, BoardSlots)
	if err != nil {
		return nil, htb.Script{}, err
	}
	if err := bf.Lock(); err != nil {
		bf.Close()
		return nil, htb.Script{}, err
	}
	if old, _, err := bf.Tree(); err != nil || old.String() != tree.String() {
		if err := bf.SetTree(tree); err != nil {
			bf.Unlock()
			bf.Close()
			return nil, htb.Script{}, err
		}
	}
	return bf, tree, nil
}

// ShowNodes is ShowNode for each node the Config gives (--qdisc-node,
// --qdisc-ingress-node): for `runsc qdisc node` with no path.
func (c *Config) ShowNodes() (string, error) {
	var out strings.Builder
	for _, d := range []Ceiling{EgressCeiling, IngressCeiling} {
		if !c.InNode(d) {
			continue
		}
		show, err := ShowNode(*c.nodeOf(d).path)
		if err != nil {
			return "", fmt.Errorf("--%s: %w", nodeFlagNames[d].path, err)
		}
		out.WriteString(show)
	}
	if out.Len() == 0 {
		return "", fmt.Errorf("no node: give the node's tree file (runsc qdisc node PATH), or --%s or --%s", FlagNode, FlagIngressNode)
	}
	return out.String(), nil
}

// ShowNode reads the tree file path into its node's board where it
// changed (the running sandboxes take it at their next step) and prints
// the node's classes as `tc -s class show` prints an htb's, after a
// warning for each class whose children are guaranteed more than its
// rate: `runsc qdisc node PATH`, which needs none of a sandbox's flags.
func ShowNode(path string) (string, error) {
	bf, _, err := openNode(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	now := node.Now()
	show, err := bf.Show(now)
	var over []string
	if err == nil {
		over, err = bf.Overcommitted(now, int64(node.Stale))
	}
	bf.Unlock()
	bf.Close()
	if err != nil {
		return "", err
	}
	var warn strings.Builder
	for _, o := range over {
		fmt.Fprintf(&warn, "warning: %s\n", o)
	}
	return fmt.Sprintf("node %s:\n%s%s", path, warn.String(), show), nil
}

// joinNode is JoinNode for direction d.
func (c *Config) joinNode(d Ceiling, pid int) (NodeSeat, *os.File, error) {
	path := *c.nodeOf(d).path
	bf, tree, err := openNode(path)
	if err != nil {
		return NodeSeat{}, nil, err
	}
	defer bf.Close()
	defer bf.Unlock()
	cls, err := c.nodeClass(d, tree, 0)
	if err != nil {
		return NodeSeat{}, nil, err
	}
	cls.ID = cls.Parent &^ 0xffff // the board gives the minor
	var token [8]byte
	rand.Read(token[:])
	owner := binary.LittleEndian.Uint64(token[:]) | 1
	slot, err := bf.JoinProcess(cls, owner, pid, node.Now(), int64(node.Stale))
	if err != nil {
		return NodeSeat{}, nil, err
	}
	f, err := os.OpenFile(path+BoardSuffix, os.O_RDWR, 0)
	if err != nil {
		bf.Leave(slot, owner)
		return NodeSeat{}, nil, err
	}
	cls.ID |= node.AutoMinor + uint32(slot)
	return NodeSeat{Ingress: d == IngressCeiling, Path: path, Slot: slot, Owner: owner, ID: cls.ID, Parent: cls.Parent, Rate: cls.Rate, Ceil: cls.Ceil, Prio: cls.Prio}, f, nil
}

// NodeClass is a sandbox's class of its node in one direction, in the
// sandbox: the board mapped from the file runsc handed it, and the
// uplink and runner of the NIC it shapes.
type NodeClass struct {
	seat NodeSeat

	mu sync.Mutex
	// file and member are unmapped and left by Close.
	// +checklocks:mu
	file *node.File
	// +checklocks:mu
	member *node.Member
	// +checklocks:mu
	up *node.Uplink
	// +checklocks:mu
	runner *node.Runner
	// +checklocks:mu
	closed bool
}

// AttachNode takes the sandbox's seat on its node's board, whose file f
// runsc handed it; the NodeClass owns f from then on.
func AttachNode(seat NodeSeat, f *os.File) (*NodeClass, error) {
	bf, err := node.MapFile(f)
	if err != nil {
		return nil, err
	}
	if bf.Board == nil {
		bf.Close()
		return nil, fmt.Errorf("node: %s is not a formatted board", seat.Path+BoardSuffix)
	}
	m, err := node.NewMember(bf.Board, seat.Slot, seat.Owner, seat.class())
	if err != nil {
		bf.Close()
		return nil, err
	}
	return &NodeClass{seat: seat, file: bf, member: m}, nil
}

// Ingress says whether the class shapes what the sandbox receives.
func (n *NodeClass) Ingress() bool { return n.seat.Ingress }

// uplink returns the class's uplink over link (or, with link nil, the
// writer w on the receive path) and starts stepping its share on
// clock's timers. A class shapes one NIC.
func (n *NodeClass) uplink(link stack.LinkEndpoint, w stack.LinkWriter, clock tcpip.Clock) (*node.Uplink, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.up != nil {
		return nil, fmt.Errorf("node: the sandbox's class of %s shapes one NIC; the sandbox has more", n.seat.Path)
	}
	if link != nil {
		n.up = node.NewUplink(link, n.seat.Rate)
	} else {
		n.up = node.NewUplinkWriter(w, n.seat.Rate)
	}
	n.runner = node.Run(n.member, n.up, clock, node.Now)
	return n.up, nil
}

// NewQueueingDisciplineIn is NewQueueingDiscipline for a NIC whose
// egress is nc's class of its node: the qdisc writes through the class's
// uplink, which holds what leaves to the class's share.
func (c *Config) NewQueueingDisciplineIn(lower stack.LinkEndpoint, clock tcpip.Clock, nc *NodeClass) (stack.QueueingDiscipline, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	up, err := nc.uplink(lower, nil, clock)
	if err != nil {
		return nil, err
	}
	return c.NewQueueingDiscipline(up, clock)
}

// String describes the class as the boot log names it.
func (n *NodeClass) String() string {
	s := n.seat
	return fmt.Sprintf("node %s class htb %s parent %s rate %s ceil %s prio %d (slot %d)", s.Path, classify.ClassID(s.ID), classify.ClassID(s.Parent), rate.FormatRate(s.Rate), rate.FormatRate(s.Ceil), s.Prio, s.Slot)
}

// Show prints the node's classes, as `tc -s class show` prints an
// htb's, after a line naming the sandbox's.
func (n *NodeClass) Show() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return fmt.Sprintf("%v: closed\n", n)
	}
	out, err := n.file.Show(node.Now())
	if err != nil {
		out = err.Error() + "\n"
	}
	dir := "egress"
	if n.seat.Ingress {
		dir = "ingress"
	}
	return fmt.Sprintf("%s: %v\n%s", dir, n, out)
}

// Err returns the last step's error, nil if it went well.
func (n *NodeClass) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runner == nil {
		return nil
	}
	return n.runner.Err()
}

// Close stops the class's runner, gives its slot back and unmaps the
// board; it is safe to call more than once.
func (n *NodeClass) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.closed = true
	if n.runner != nil {
		n.runner.Close()
	} else {
		n.member.Leave()
	}
	n.file.Close()
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
