// Package ingress shapes what a NIC receives, as Linux does with an
// ingress qdisc redirecting to an ifb device that has a tbf: an Endpoint
// sits between the NIC's link and the stack (a gVisor nested endpoint),
// queues the packets the link delivers, and hands them to the stack at
// the token bucket's departures.
//
// The shaping is package tbf's, whole: the same Config, buckets, booked
// departures, dispatch and statistics, held to the same Linux model
// (tbftest's conformance cases). What is particular to this direction:
//
//   - Link-layer control traffic (ARP, and IPv6 neighbour discovery:
//     router and neighbour solicitations and advertisements, redirects) is
//     neither charged nor delayed, up to an allowance of its own
//     (ControlRate frames a second): shaping it would let a full download
//     queue hold up address resolution, and the stack's own replies with
//     it. (gVisor's unmerged ingress attempt, PR #13583, shaped them.) The
//     frames come from the network, so only well-formed ones of their
//     protocol's size are exempt (isControl), and the allowance bounds what
//     even those can carry; past it, and whenever malformed, they are
//     shaped like any other frame. Exempt frames count in Stats as sent.
//   - With host GSO the host hands the sandbox TCP packets that GRO merged,
//     up to 64 KiB: such a packet, larger than the link's MTU, is charged
//     as the segments it was on the wire, each with its headers
//     (gso.ReceivedWireSize), as Linux charges a GRO packet on ifb, so that
//     the rate holds as measured on the wire. One whose segments add up to
//     more than the bucket is charged the bucket (Linux would cut it).
//   - A packet larger than the bucket is dropped, as tbf drops one on the
//     send path; it is never let through in debt.
//   - With several queues, packets are spread by a hash of their own
//     headers (package flowhash): pkt.Hash is 0 on receive.
//   - Packets reach the stack from the queues' passes, outside any lock a
//     queue holds, so one queue's delivery never waits for another's.
package ingress

import (
	"fmt"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/nested"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// Endpoint is a link endpoint that shapes what its child delivers. Use it
// as the NIC's link endpoint in place of the child.
type Endpoint struct {
	nested.Endpoint
	shaper *tbf.Discipline
	hash   flowhash.Hasher
	// spread says whether there are queues to choose between.
	spread bool
	// control is the control frames' allowance, and controlPackets and
	// controlBytes count the frames it let through unshaped.
	control        *allowance
	controlPackets atomic.Uint64
	controlBytes   atomic.Uint64
	closed         atomic.Bool
}

var _ stack.LinkEndpoint = (*Endpoint)(nil)
var _ stack.NetworkDispatcher = (*Endpoint)(nil)

// New returns an Endpoint that shapes what child delivers as cfg says,
// timed by clock. It returns a *tbf.ConfigError for every invalid cfg.
func New(child stack.LinkEndpoint, clock tcpip.Clock, cfg tbf.Config) (*Endpoint, error) {
	if child == nil {
		return nil, fmt.Errorf("ingress: no link endpoint to shape")
	}
	if clock == nil {
		return nil, fmt.Errorf("ingress: no clock")
	}
	e := &Endpoint{hash: flowhash.New(), control: newAllowance(clock)}
	e.Endpoint.Init(child, e)
	shaper, err := tbf.NewTo(delivery{e}, child, clock, cfg)
	if err != nil {
		return nil, err
	}
	e.shaper = shaper
	e.spread = shaper.Queues() > 1
	return e, nil
}

// DeliverNetworkPacket implements stack.NetworkDispatcher: the child
// delivers here. Link-layer control traffic within its allowance goes up
// at once; the rest is queued for the bucket (taking a reference of its
// own) or dropped and counted.
func (e *Endpoint) DeliverNetworkPacket(protocol tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	e.deliver(protocol, pkt) // a refusal is counted as a drop
}

// deliver is DeliverNetworkPacket, with the shaper's answer: nil when the
// packet went up or was queued.
func (e *Endpoint) deliver(protocol tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) tcpip.Error {
	if isControl(protocol, pkt) && !e.closed.Load() && e.control.take() {
		e.controlPackets.Add(1)
		e.controlBytes.Add(uint64(pkt.Size()))
		e.Endpoint.DeliverNetworkPacket(protocol, pkt)
		return nil
	}
	if pkt.NetworkProtocolNumber != protocol { // links set it already
		pkt.NetworkProtocolNumber = protocol // delivery reads it
	}
	var hash uint32
	if e.spread {
		hash = e.hash.Packet(protocol, pkt)
	}
	return e.shaper.Enqueue(pkt, hash)
}

// delivery is where the shaper's departures go: up to the stack.
type delivery struct{ e *Endpoint }

// WritePackets implements stack.LinkWriter: it delivers every packet of a
// departing batch to the stack, in order.
func (d delivery) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	for _, pkt := range pkts.AsSlice() {
		d.e.Endpoint.DeliverNetworkPacket(pkt.NetworkProtocolNumber, pkt)
	}
	return pkts.Len(), nil
}

// Close stops shaping (what is queued is dropped and counted) and closes
// the child. The shaper's queues have stopped when it returns.
func (e *Endpoint) Close() {
	e.closed.Store(true)
	e.shaper.Close()
	e.Endpoint.Close()
}

// Stats returns the shaper's `tc -s` counters; the control frames that
// went up unshaped count as sent.
func (e *Endpoint) Stats() qdisc.Stats {
	s := e.shaper.Stats()
	s.Packets += e.controlPackets.Load()
	s.Bytes += e.controlBytes.Load()
	return s
}

// Control returns the control frames that went up unshaped, within their
// allowance (they are in Stats too).
func (e *Endpoint) Control() (packets, bytes uint64) {
	return e.controlPackets.Load(), e.controlBytes.Load()
}

// Config returns the shaper's configuration, with Limit computed.
func (e *Endpoint) Config() tbf.Config { return e.shaper.Config() }

// Quiescent reports whether the shaper's queues are idle or waiting for
// their departures: nothing runs until a timer fires or a packet arrives.
// Tests use it to step a clock.
func (e *Endpoint) Quiescent() bool { return e.shaper.Quiescent() }

// Queues returns the number of queues.
func (e *Endpoint) Queues() int { return e.shaper.Queues() }

// String describes the shaper as `tc qdisc show dev ifb0` would: "tbf rate
// 10Mbit burst 12500b lat 25ms".
func (e *Endpoint) String() string { return e.shaper.String() }
