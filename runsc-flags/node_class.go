package runscflags

import (
	"fmt"
	"os"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fq"
	"github.com/netqdisc/netqdisc/pkg/qdisc/node"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// NodeClass is a sandbox's class of its node in one direction, in the
// sandbox: its seat mapped from the descriptor runsc handed it, and the
// uplink and runner of the NIC it shapes.
type NodeClass struct {
	seat NodeSeat

	mu sync.Mutex
	// file is unmapped and member left by Close.
	// +checklocks:mu
	file *node.Seat
	// +checklocks:mu
	member *node.Member
	// +checklocks:mu
	up *node.Uplink
	// +checklocks:mu
	runner *node.Runner
	// +checklocks:mu
	closed bool
}

// AttachNode takes the sandbox's seat on its node, whose descriptor f
// runsc handed it; the NodeClass owns f from then on.
func AttachNode(seat NodeSeat, f *os.File) (*NodeClass, error) {
	s, err := node.MapSeat(f)
	if err != nil {
		return nil, err
	}
	return &NodeClass{seat: seat, file: s, member: node.NewMember(s, seat.class())}, nil
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
// uplink, which holds what leaves to the class's share. runsc's default
// fifo (--qdisc=fifo with no words) is fq there: under the class's
// ceiling, as under a tbf's, a sparse flow's packets should not wait
// behind the bulk flows' (docs/backpressure.md), and host-GSO packets are
// cut to a millisecond of the class's rate as they leave.
func (c *Config) NewQueueingDisciplineIn(lower stack.LinkEndpoint, clock tcpip.Clock, nc *NodeClass) (stack.QueueingDiscipline, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	up, err := nc.uplink(lower, nil, clock)
	if err != nil {
		return nil, err
	}
	if c.QDisc.Is(fifo.Kind) && c.Words[kindFlagName(EgressCeiling, "fifo")] == "" {
		q, err := fq.New(up, clock, fq.Config{})
		if err != nil {
			return nil, err
		}
		q.SplitGSOAt(max(uint64(lower.MTU()+uint32(lower.MaxHeaderLength())), nc.seat.Rate/1000))
		return q, nil
	}
	return c.NewQueueingDiscipline(up, clock)
}

// String describes the class as the boot log names it.
func (n *NodeClass) String() string {
	s := n.seat
	return fmt.Sprintf("node %s class htb %s parent %s rate %s ceil %s prio %d (slot %d)", s.Path, classify.ClassID(s.ID), classify.ClassID(s.Parent), rate.FormatRate(s.Rate), rate.FormatRate(s.Ceil), s.Prio, s.Slot)
}

// Show prints the sandbox's class: a line naming it, and its share and
// counters as the sandbox holds them. The node's other classes are the
// allocator's to print (`runsc qdisc show` asks it on the host, through
// ShowNodes): a sandbox sees only its own seat.
func (n *NodeClass) Show() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	dir := "egress"
	if n.seat.Ingress {
		dir = "ingress"
	}
	if n.closed {
		return fmt.Sprintf("%s: %v: closed\n", dir, n)
	}
	var state string
	if n.up != nil {
		c := n.up.Counters()
		state = fmt.Sprintf(" share %s\n Sent %d bytes %d pkt\n", rate.FormatRate(n.up.Bucket().Rate()), c.Bytes, c.Packets)
	}
	return fmt.Sprintf("%s: %v\n%s", dir, n, state)
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

// Close stops the class's runner, gives its class back and unmaps the
// seat; it is safe to call more than once.
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
