package ingress

import (
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// NewClasses returns an Endpoint that shapes what child delivers with htb
// classes (package htb), as an ifb device with an htb qdisc does on a
// host: the same classes on the way in, rules matching a packet's source
// as dst (downloads from the internet capped, from the cluster not).
// Control frames pass within their allowance, as with a tbf.
func NewClasses(child stack.LinkEndpoint, clock tcpip.Clock, cfg htb.Config) (*Endpoint, error) {
	e, err := newEndpoint(child, clock)
	if err != nil {
		return nil, err
	}
	cfg.Direction = classify.Ingress
	d, err := htb.NewTo(delivery{e}, child, clock, cfg)
	if err != nil {
		return nil, err
	}
	e.whole = d
	return e, nil
}

// deliverWhole is deliver for an Endpoint shaped by htb classes or cake:
// a control frame within its allowance goes up at once; the rest is
// queued, a GRO aggregate whole (charged as the segments it was).
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

// Classes returns the classes' tc -s counters (nil when htb does not
// shape).
func (e *Endpoint) Classes() []htb.ClassStats {
	if h := e.HTB(); h != nil {
		return h.Classes()
	}
	return nil
}

// ChangeClass changes a class in place (htb.Discipline.ChangeClass).
func (e *Endpoint) ChangeClass(cls htb.ClassConfig) error {
	h := e.HTB()
	if h == nil {
		return fmt.Errorf("ingress: the receive direction has no htb classes to change")
	}
	return h.ChangeClass(cls)
}

// HTB returns the classes' qdisc, nil when htb does not shape: for its
// TCStats and quotas.
func (e *Endpoint) HTB() *htb.Discipline {
	h, _ := e.whole.(*htb.Discipline)
	return h
}
