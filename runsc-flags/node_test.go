package runscflags

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/node"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

const mbitps = 1_000_000 / 8

// TestNodeFlagsValidate: each node flag's misuse is refused with an
// error naming the flag to change.
func TestNodeFlagsValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string // "" for valid
	}{
		{[]string{"--qdisc-node=/n.htb", "--qdisc-node-rate=10mbit"}, ""},
		{[]string{"--qdisc-node=/n.htb", "--qdisc-node-rate=10mbit", "--qdisc-node-ceil=100mbit", "--qdisc-node-parent=1:10", "--qdisc-node-prio=3"}, ""},
		{[]string{"--qdisc-ingress-node=/n.htb", "--qdisc-ingress-node-rate=10mbit", "--qdisc=none"}, ""},
		{[]string{"--qdisc-node=/n.htb"}, "--qdisc-node requires --qdisc-node-rate"},
		{[]string{"--qdisc-node-rate=10mbit"}, "set --qdisc-node (the node's tree file)"},
		{[]string{"--qdisc-ingress-node-ceil=10mbit"}, "set --qdisc-ingress-node"},
		{[]string{"--qdisc-node=/n.htb", "--qdisc-node-rate=10mbit", "--qdisc-node-ceil=5mbit"}, "--qdisc-node-ceil=625000 bytes/s (5Mbit) is below --qdisc-node-rate"},
		{[]string{"--qdisc-node=/n.htb", "--qdisc-node-rate=10mbit", "--qdisc-node-parent=10"}, "--qdisc-node-parent=10: want tc's major:minor"},
		{[]string{"--qdisc-node=/n.htb", "--qdisc-node-rate=10mbit", "--qdisc-node-prio=8"}, "--qdisc-node-prio=8: out of range; at most 7"},
		{[]string{"--qdisc-node=/n.htb", "--qdisc-node-rate=10mbit", "--qdisc=none"}, "--qdisc=none has none"},
	} {
		c, err := parse(t, tc.args...)
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("%q: got %v (%+v), want an error saying %q", tc.args, err, c, tc.says)
		}
	}
}

// TestNodeAnnotations: a pod may lower its class's rate and ceil, and
// Kubernetes' bandwidth annotation is its class's ceil (not a tbf); the
// node, the parent and the prio are the operator's.
func TestNodeAnnotations(t *testing.T) {
	op := []string{"--qdisc-node=/n.htb", "--qdisc-node-rate=20mbit", "--qdisc-node-ceil=100mbit",
		"--qdisc-ingress-node=/n.htb", "--qdisc-ingress-node-rate=20mbit"}
	for _, tc := range []struct {
		name               string
		ann                map[string]string
		rate, ceil, inCeil uint64
		says, notice       string
	}{
		{name: "lower rate", ann: a(FlagNodeRate, "5mbit"), rate: 5 * mbitps, ceil: 100 * mbitps},
		{name: "lower ceil", ann: a(FlagNodeCeil, "50mbit"), rate: 20 * mbitps, ceil: 50 * mbitps},
		{name: "kube egress", ann: map[string]string{AnnotationKubeEgress: "50M"}, rate: 20 * mbitps, ceil: 50 * mbitps},
		{name: "kube egress below the rate", ann: map[string]string{AnnotationKubeEgress: "10M"}, rate: 10 * mbitps, ceil: 10 * mbitps},
		{name: "kube egress above", ann: map[string]string{AnnotationKubeEgress: "1G"}, rate: 20 * mbitps, ceil: 100 * mbitps, notice: "the pod gets the ceiling"},
		{name: "kube ingress", ann: map[string]string{AnnotationKubeIngress: "30M"}, rate: 20 * mbitps, ceil: 100 * mbitps, inCeil: 30 * mbitps},
		{name: "higher rate", ann: a(FlagNodeRate, "40mbit"), says: "qdisc-node-rate"},
		{name: "higher ceil", ann: a(FlagNodeCeil, "1gbit"), says: "qdisc-node-ceil"},
		{name: "another node", ann: a(FlagNode, "/other.htb"), says: "qdisc-node"},
		{name: "another parent", ann: a(FlagNodeParent, "1:20"), says: "qdisc-node-parent"},
		{name: "prio", ann: a(FlagNodePrio, "0"), says: "qdisc-node-prio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, op...)
			if err != nil {
				t.Fatal(err)
			}
			err = c.ApplyAnnotations(tc.ann)
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("got %v, want an error naming %s", err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.NodeRate != tc.rate || c.NodeCeil != tc.ceil || c.IngressNodeCeil != tc.inCeil {
				t.Errorf("rate, ceil, ingress ceil = %d, %d, %d; want %d, %d, %d", c.NodeRate, c.NodeCeil, c.IngressNodeCeil, tc.rate, tc.ceil, tc.inCeil)
			}
			if c.QDisc != "fifo" {
				t.Errorf("the qdisc became %v: a bandwidth annotation on a class of a node sets its ceil, not a tbf", c.QDisc)
			}
			if got := strings.Join(c.Warnings(), "\n"); tc.notice != "" && !strings.Contains(got, tc.notice) {
				t.Errorf("notices %q, want one saying %q", got, tc.notice)
			}
		})
	}
}

// TestJoinNode: runsc's join on the host and the sandbox's attach: each
// sandbox gets a slot and a classid of its own under the parent, the
// tree file is put in force by its allocator when it changes, a guarantee that
// does not fit is refused, the sandbox's NIC shapes through its class,
// `runsc qdisc show` prints the node's classes, and Close gives the slot
// back.
func TestJoinNode(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "node.htb")
	write := func(s string) {
		if err := os.WriteFile(tree, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("class root classid 1:1 rate 100mbit; class parent 1:1 classid 1:10 rate 60mbit ceil 100mbit")
	join := func(args ...string) (*NodeClass, error) {
		t.Helper()
		c, err := parse(t, append([]string{"--qdisc-node=" + tree}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		seats, files, err := c.JoinNode(os.Getpid())
		if err != nil {
			return nil, err
		}
		if len(seats) != 1 || len(files) != 1 || seats[0].Ingress {
			t.Fatalf("JoinNode: %+v, %d files; want one egress seat", seats, len(files))
		}
		nc, err := AttachNode(seats[0], files[0])
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc, nil
	}
	a, err := join("--qdisc-node-rate=10mbit", "--qdisc-node-parent=1:10")
	if err != nil {
		t.Fatal(err)
	}
	b, err := join("--qdisc-node-rate=30mbit", "--qdisc-node-parent=1:10", "--qdisc-node-prio=1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		nc   *NodeClass
		want string
	}{
		{a, "class htb 1:8000 parent 1:10 rate 10Mbit ceil 100Mbit prio 0 (slot 0)"},
		{b, "class htb 1:8001 parent 1:10 rate 30Mbit ceil 100Mbit prio 1 (slot 1)"},
	} {
		if got := tc.nc.String(); !strings.Contains(got, tc.want) {
			t.Errorf("joined %q, want %q", got, tc.want)
		}
	}
	if _, err := join("--qdisc-node-rate=30mbit", "--qdisc-node-parent=1:10"); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("a third guarantee past 1:10's 60mbit: %v, want it refused as not fitting", err)
	}
	if _, err := join("--qdisc-node-rate=1mbit", "--qdisc-node-parent=1:20"); err == nil || !strings.Contains(err.Error(), "no such class") {
		t.Errorf("a parent the tree lacks: %v, want it refused", err)
	}

	// The sandbox's NIC: a fifo over the class's uplink.
	c, err := parse(t, "--qdisc-node="+tree, "--qdisc-node-rate=10mbit")
	if err != nil {
		t.Fatal(err)
	}
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	q, err := c.NewQueueingDisciplineIn(link, clock, a)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	pkt := qdisctest.MakePacket(1500, 0, 1)
	q.WritePacket(pkt)
	pkt.DecRef()
	qdisctest.WaitQuiescent(t, q.(qdisctest.Quiescer))
	clock.Advance(node.Period)
	if n, _ := link.Count(); n != 1 {
		t.Errorf("the link took %d packets through the class, want 1", n)
	}
	if _, err := c.NewQueueingDisciplineIn(link, clock, a); err == nil {
		t.Error("a second NIC on one class: accepted")
	}
	if err := a.Err(); err != nil {
		t.Errorf("the class's step: %v", err)
	}

	// A changed tree is put in force by `runsc qdisc node` and at
	// the next join, and the running sandboxes take it.
	write("class root classid 1:1 rate 200mbit; class parent 1:1 classid 1:10 rate 120mbit ceil 200mbit")
	if nodeShow, err := ShowNode(tree); err != nil || !strings.Contains(nodeShow, "class htb 1:10 parent 1:1 rate 120Mbit") {
		t.Errorf("runsc qdisc node did not read the changed tree: %v\n%s", err, nodeShow)
	}
	if nodeShow, err := (&Config{Node: tree}).ShowNodes(); err != nil || !strings.Contains(nodeShow, "node "+tree+":") {
		t.Errorf("runsc --qdisc-node=PATH qdisc node: %v\n%s", err, nodeShow)
	}
	if _, err := (&Config{}).ShowNodes(); err == nil || !strings.Contains(err.Error(), "runsc qdisc node PATH") {
		t.Errorf("runsc qdisc node with no node: %v, want an error saying to give the tree file", err)
	}
	// 1:10 lowered under its two sandboxes' 40mbit: they keep their
	// rates, and runsc qdisc node says so.
	write("class root classid 1:1 rate 200mbit; class parent 1:1 classid 1:10 rate 30mbit ceil 200mbit")
	if nodeShow, err := ShowNode(tree); err != nil || !strings.Contains(nodeShow, "warning: class 1:10 guarantees 40Mbit to its children, past its rate 30Mbit") || strings.Contains(nodeShow, "warning: class 1:1 ") {
		t.Errorf("runsc qdisc node of a class lowered under its children's guarantees: %v\n%s", err, nodeShow)
	}
	write("class root classid 1:1 rate 200mbit; class parent 1:1 classid 1:10 rate 120mbit ceil 200mbit")
	if nodeShow, err := ShowNode(tree); err != nil || strings.Contains(nodeShow, "warning") {
		t.Errorf("runsc qdisc node of a tree the guarantees fit: %v\n%s", err, nodeShow)
	}
	if _, err := ShowNode(tree + ".missing"); err == nil || !strings.Contains(err.Error(), "reading the node's tree") {
		t.Errorf("runsc qdisc node of a missing file: %v", err)
	}
	if _, err := join("--qdisc-node-rate=30mbit", "--qdisc-node-parent=1:10"); err != nil {
		t.Errorf("a third guarantee under the new tree's 120mbit: %v", err)
	}
	// The sandbox shows its own class; the node's allocator, every
	// class (runsc qdisc show asks it on the host).
	if show := a.Show(); !strings.Contains(show, "class htb 1:8000 parent 1:10") || !strings.Contains(show, "Sent 1500 bytes 1 pkt") {
		t.Errorf("the sandbox's show:\n%s\nwant its class and what it sent", show)
	}
	time.Sleep(3 * node.Period) // the sandbox published; the allocator read it
	show, err := ShowNode(tree)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"class htb 1:10 parent 1:1", "rate 120Mbit", "class htb 1:8000 parent 1:10", "class htb 1:8001 parent 1:10", "class htb 1:8002 parent 1:10", "Sent 1500 bytes 1 pkt", "sandbox: slot 0 pid "} {
		if !strings.Contains(show, want) {
			t.Errorf("runsc qdisc node lacks %q:\n%s", want, show)
		}
	}
	// runsc qdisc show: the sandbox's own, then every class of its node,
	// whether runsc's flags name the node or only the sandbox does.
	for _, cfg := range []*Config{{}, {Node: tree}} {
		nodes := cfg.ShowNodesOf(a.Show())
		if !strings.Contains(nodes, "node "+tree+":") || !strings.Contains(nodes, "class htb 1:8002 parent 1:10") {
			t.Errorf("runsc qdisc show with --qdisc-node=%q: the node's classes\n%s", cfg.Node, nodes)
		}
	}

	// Close gives the slot back: the next sandbox takes slot 0.
	a.Close()
	d, err := join("--qdisc-node-rate=10mbit", "--qdisc-node-parent=1:10")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.String(); !strings.Contains(got, "1:8000") {
		t.Errorf("after the first sandbox left, the next joined as %q, want its slot 0 (1:8000)", got)
	}
}

// TestNodeIngress: the receive direction of a class of a node gets a
// fifo where its flags give it no shaper, and its tbf where they do.
func TestNodeIngress(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "node.htb")
	if err := os.WriteFile(tree, []byte("class root classid 1:1 rate 100mbit"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		kind string
	}{
		{nil, "fifo"},
		{[]string{"--qdisc-ingress-rate=5mbit", "--qdisc-ingress-burst=64kb"}, "tbf"},
	} {
		c, err := parse(t, append([]string{"--qdisc-ingress-node=" + tree, "--qdisc-ingress-node-rate=10mbit"}, tc.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		seats, files, err := c.JoinNode(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if len(seats) != 1 || !seats[0].Ingress {
			t.Fatalf("seats %+v, want one ingress seat", seats)
		}
		nc, err := AttachNode(seats[0], files[0])
		if err != nil {
			t.Fatal(err)
		}
		clock := faketime.NewManualClock()
		e, err := c.NewIngressIn(qdisctest.NewLink(clock), clock, nc)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Whole().String(); !strings.HasPrefix(got, tc.kind) {
			t.Errorf("%q: the receive path's shaper is %q, want %s", tc.args, got, tc.kind)
		}
		e.Close()
		nc.Close()
	}
}

// TestNodeCommand: `runsc qdisc node`'s verbs: a path shows the node,
// evict frees a parked sandbox's class (a live one's is refused, a
// classid no sandbox holds is an error), and a word out of place says
// how to call it.
func TestNodeCommand(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "node.htb")
	if err := os.WriteFile(tree, []byte("class root classid 1:1 rate 100mbit"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parse(t, "--qdisc-node="+tree, "--qdisc-node-rate=10mbit")
	if err != nil {
		t.Fatal(err)
	}
	seats, files, err := c.JoinNode(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := AttachNode(seats[0], files[0]) // no NIC: it never publishes, as a parked sandbox
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	id := classify.ClassID(seats[0].ID)
	for _, tc := range []struct {
		args []string
		want string // in the output, or the error
		err  bool
	}{
		{[]string{tree}, "class htb " + id + " parent 1:1", false},
		{[]string{tree, "evict", id}, "is live", true},
		{[]string{tree, "evict", "1:7777"}, "no sandbox holds class 1:7777", true},
		{[]string{tree, "evict", "nonsense"}, "give the sandbox's classid", true},
		{[]string{tree, "serve", "now"}, "usage: runsc qdisc node", true},
	} {
		out, err := NodeCommand(&Config{}, tc.args)
		got := out
		switch {
		case tc.err && err == nil:
			got = "no error: " + out
		case err != nil:
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) || (err != nil) != tc.err {
			t.Errorf("runsc qdisc node %q: %q, want %q", tc.args, got, tc.want)
		}
	}
	time.Sleep(node.Stale + 100*time.Millisecond)
	if out, err := NodeCommand(&Config{}, []string{tree}); err != nil || !strings.Contains(out, "parked") {
		t.Errorf("runsc qdisc node after %v silent: %v\n%s\nwant the class shown parked", node.Stale, err, out)
	}
	if out, err := NodeCommand(&Config{}, []string{tree, "evict", id}); err != nil || !strings.Contains(out, "evicted class "+id) {
		t.Errorf("evicting the parked class: %q, %v", out, err)
	}
	if out, _ := NodeCommand(&Config{}, []string{tree}); strings.Contains(out, "class htb "+id) {
		t.Errorf("the evicted class is still shown:\n%s", out)
	}
}
