package ingress

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// wholeQDisc is a qdisc that shapes the receive path on its own, in place
// of the tbf: htb's classes (NewClasses) or cake (NewCake), each as Linux
// runs it on an ifb device. Its lane is QueueOnly, writing what leaves to
// the Endpoint's stack (delivery).
type wholeQDisc interface {
	Enqueue(pkt *stack.PacketBuffer, _ uint32) tcpip.Error
	Close()
	Stats() qdisc.Stats
	Quiescent() bool
	Lanes() int
	String() string
	Show() qdisc.Showing
}

// errWhole is Change's answer on an Endpoint that q shapes: it has no tbf
// to change.
func errWhole(q wholeQDisc) error {
	if _, ok := q.(*cake.Discipline); ok {
		return fmt.Errorf("ingress: the receive direction is shaped by cake; change it in place (ChangeCake), not a tbf")
	}
	return fmt.Errorf("ingress: the receive direction is shaped by htb classes; change a class in place (ChangeClass), not a tbf")
}

// NewCake returns an Endpoint that shapes what child delivers with cake
// (package cake), as an ifb device with a cake qdisc does on a host, with
// CAKE's ingress keyword on whatever cfg says: a packet cake drops still
// counts against the bandwidth, since on the receiving end it has crossed
// the link already. Control frames pass within their allowance, as with a
// tbf.
func NewCake(child stack.LinkEndpoint, clock tcpip.Clock, cfg cake.Config) (*Endpoint, error) {
	e, err := newEndpoint(child, clock)
	if err != nil {
		return nil, err
	}
	cfg.Ingress = true
	d, err := cake.NewTo(delivery{e}, child, clock, cfg)
	if err != nil {
		return nil, err
	}
	e.whole = d
	return e, nil
}

// Cake returns the cake that shapes, nil when cake does not: for its
// Config and TCStats.
func (e *Endpoint) Cake() *cake.Discipline {
	c, _ := e.whole.(*cake.Discipline)
	return c
}

// ChangeCake changes the cake that shapes in place (cake's
// Discipline.Change: tc qdisc change ... cake), its ingress keyword kept.
func (e *Endpoint) ChangeCake(cfg cake.Config) error {
	c := e.Cake()
	if c == nil {
		return fmt.Errorf("ingress: the receive direction is not shaped by cake")
	}
	cfg.Ingress = true
	return c.Change(cfg)
}
