package ingress

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Whole is a qdisc that shapes the receive path on its own, in place of
// the tbf, as Linux runs any qdisc on an ifb device (htb's classes,
// cake): NewWhole builds it to write what leaves to the Endpoint's stack.
// Its lanes are QueueOnly: a link's delivering goroutine only queues.
type Whole interface {
	Enqueue(pkt *stack.PacketBuffer, _ uint32) tcpip.Error
	Close()
	Stats() qdisc.Stats
	Quiescent() bool
	Lanes() int
	String() string
	qdisc.Shower
}

// BuildWhole builds the qdisc that shapes an Endpoint: it writes what
// leaves to out (the Endpoint's stack), on a link of child's MTU, timed by
// clock. htb.NewTo and cake.NewTo have its shape.
type BuildWhole func(out stack.LinkWriter, child stack.LinkEndpoint, clock tcpip.Clock) (Whole, error)

// NewWhole returns an Endpoint that shapes what child delivers with the
// qdisc build makes, as an ifb device with that qdisc does on a host.
// Control frames pass within their allowance, as with a tbf; the rest is
// queued, a GRO aggregate whole (charged as the segments it was).
func NewWhole(child stack.LinkEndpoint, clock tcpip.Clock, build BuildWhole) (*Endpoint, error) {
	e, err := newEndpoint(child, clock)
	if err != nil {
		return nil, err
	}
	w, err := build(delivery{e}, child, clock)
	if err != nil {
		return nil, err
	}
	e.whole = w
	return e, nil
}

// Whole returns the qdisc that shapes in place of a tbf (NewWhole), nil
// when there is none: for its own statistics and changes.
func (e *Endpoint) Whole() Whole { return e.whole }

// errWhole is Change's answer on an Endpoint that q shapes: it has no tbf
// to change.
func errWhole(q Whole) error {
	kind, _ := qdisc.SplitKind(q.String())
	return fmt.Errorf("ingress: the receive direction is shaped by %s; change it in place, not a tbf", kind)
}

// deliverWhole is deliver for an Endpoint shaped by a Whole: a control
// frame within its allowance goes up at once; the rest is queued.
func (e *Endpoint) deliverWhole(protocol tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) tcpip.Error {
	if isControl(protocol, pkt) && !e.closed.Load() && e.control.take() {
		e.controlPackets.Add(1)
		e.controlBytes.Add(uint64(pkt.Size()))
		e.Endpoint.DeliverNetworkPacket(protocol, pkt)
		return nil
	}
	if pkt.NetworkProtocolNumber != protocol {
		pkt.NetworkProtocolNumber = protocol // the classifier and delivery read it
	}
	return e.whole.Enqueue(pkt, 0)
}
