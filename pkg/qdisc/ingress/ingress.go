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
//     more than the bucket (a 64 KiB aggregate is 68,130 bytes on the wire,
//     Kubernetes' bucket 65,550) is cut into pieces of whole segments that
//     each fit, as Linux's tbf_segment cuts it (gso.SplitReceived), and the
//     pieces go up in its place; one that cannot be cut (a checksum the
//     link has not validated is wrong) is charged the bucket.
//   - A packet larger than the bucket is dropped, as tbf drops one on the
//     send path; it is never let through in debt.
//   - With several queues, packets are spread by a hash of their own
//     headers (package flowhash): pkt.Hash is 0 on receive.
//   - Packets reach the stack from the queues' passes, outside any lock a
//     queue holds, so one queue's delivery never waits for another's.
//   - An Endpoint may start with no ceiling (a Config with neither a rate
//     nor a packet rate): packets then go up as they come, counted, with
//     no queue, until Change sets one; Change also changes or removes a
//     ceiling in place (tbf's Change), for `runsc qdisc change`.
//
// An Endpoint may be shaped by any other qdisc instead (NewWhole), as
// an ifb device may have any qdisc: htb's classes, whose rules then match
// the remote end (a packet's source), so that downloads from the internet
// are capped and those from the cluster are not, or cake with its ingress
// keyword. The package knows none of them: the runtime builds the qdisc
// (runscflags). Either way control frames pass as above; a GRO aggregate
// is queued whole, charged as the segments it was (htb passes any size;
// cake splits it when split-gso is on).
package ingress

import (
	"fmt"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/nested"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/flowhash"
	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// Endpoint is a link endpoint that shapes what its child delivers. Use it
// as the NIC's link endpoint in place of the child.
type Endpoint struct {
	nested.Endpoint
	// child and clock are New's, for the shaper Change creates.
	child stack.LinkEndpoint // +checklocksignore: set once, by New
	clock tcpip.Clock        // +checklocksignore: set once, by New
	// shaper is nil until a ceiling is first set (see Change, which
	// stores it under mu; the packet path loads it without).
	shaper atomic.Pointer[tbf.Discipline] // +checklocksignore
	// whole, when not nil, shapes in place of a tbf (NewWhole). Set
	// once, by NewWhole.
	whole Whole // +checklocksignore
	// mtu is the child's MTU when the shaper was created, as the shaper
	// reads it to count a received aggregate's segments; set with shaper.
	mtu  atomic.Uint32 // +checklocksignore
	hash flowhash.Hasher
	// passPackets and passBytes count what went up with no shaper.
	passPackets atomic.Uint64
	passBytes   atomic.Uint64
	// control is the control frames' allowance, and controlPackets and
	// controlBytes count the frames it let through unshaped.
	control        *allowance
	controlPackets atomic.Uint64
	controlBytes   atomic.Uint64
	closed         atomic.Bool

	// mu serializes Change and Close: a shaper is created only while the
	// Endpoint is open, and closed by Close.
	mu sync.Mutex
}

var _ stack.LinkEndpoint = (*Endpoint)(nil)
var _ stack.NetworkDispatcher = (*Endpoint)(nil)

// New returns an Endpoint that shapes what child delivers as cfg says,
// timed by clock; with neither cfg.Rate nor cfg.PacketRate it shapes
// nothing until Change sets a ceiling. It returns a *tbf.ConfigError for
// every invalid cfg.
func New(child stack.LinkEndpoint, clock tcpip.Clock, cfg tbf.Config) (*Endpoint, error) {
	e, err := newEndpoint(child, clock)
	if err != nil {
		return nil, err
	}
	if err := e.Change(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// Change changes the ceiling in place (tbf's Discipline.Change, whose
// token semantics are Linux's tbf_change): what is queued stays queued,
// in order. The first ceiling creates the shaper; a Config with neither
// a rate nor a packet rate removes the ceiling (what is queued then goes
// up at once, and later packets pass the shaper's queue unheld). It
// returns a *tbf.ConfigError for an invalid cfg, and then nothing
// changes.
func (e *Endpoint) Change(cfg tbf.Config) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Load() {
		return fmt.Errorf("ingress: closed")
	}
	if e.whole != nil {
		return errWhole(e.whole)
	}
	if s := e.shaper.Load(); s != nil {
		return s.Change(cfg)
	}
	if cfg.Rate == 0 && cfg.PacketRate == 0 {
		return nil
	}
	e.mtu.Store(e.child.MTU()) // before NewTo reads it: no smaller
	s, err := tbf.NewTo(delivery{e}, e.child, e.clock, cfg)
	if err != nil {
		return err
	}
	e.shaper.Store(s)
	return nil
}

// CheckChange reports whether Change would accept cfg, changing nothing:
// a caller that changes several NICs as one checks them all first.
func (e *Endpoint) CheckChange(cfg tbf.Config) error {
	if e.whole != nil {
		return errWhole(e.whole)
	}
	if s := e.shaper.Load(); s != nil {
		return s.CheckChange(cfg)
	}
	if cfg.Rate == 0 && cfg.PacketRate == 0 {
		return nil
	}
	return tbf.CheckOn(e.child, cfg, false)
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
	if e.whole != nil {
		return e.deliverWhole(protocol, pkt)
	}
	s := e.shaper.Load()
	if s == nil { // no ceiling yet
		if e.closed.Load() {
			return &tcpip.ErrClosedForSend{}
		}
		e.passPackets.Add(1)
		e.passBytes.Add(uint64(pkt.Size()))
		e.Endpoint.DeliverNetworkPacket(protocol, pkt)
		return nil
	}
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
	if s.Lanes() > 1 {
		hash = e.hash.Packet(protocol, pkt)
	}
	if mtu := e.mtu.Load(); uint64(pkt.Data().Size()) > uint64(mtu) {
		if pieces, _ := gso.SplitReceived(pkt, mtu, uint64(s.MaxPacketBytes())); len(pieces) > 0 {
			return enqueuePieces(s, pieces, hash)
		}
	}
	return s.Enqueue(pkt, hash)
}

// enqueuePieces queues the pieces of a received aggregate in its place, in
// order, on its queue, and releases them; it returns the first refusal
// (each is counted as a drop).
func enqueuePieces(s *tbf.Discipline, pieces []*stack.PacketBuffer, hash uint32) tcpip.Error {
	var first tcpip.Error
	for _, p := range pieces {
		if err := s.Enqueue(p, hash); err != nil && first == nil {
			first = err
		}
		p.DecRef()
	}
	return first
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
	e.mu.Lock()
	e.closed.Store(true)
	if s := e.shaper.Load(); s != nil {
		s.Close()
	}
	if e.whole != nil {
		e.whole.Close()
	}
	e.mu.Unlock()
	e.Endpoint.Close()
}

// Stats returns the shaper's `tc -s` counters; the control frames that
// went up unshaped, and what went up before any ceiling, count as sent.
func (e *Endpoint) Stats() qdisc.Stats {
	var s qdisc.Stats
	if sh := e.shaper.Load(); sh != nil {
		s = sh.Stats()
	}
	if e.whole != nil {
		s = e.whole.Stats()
	}
	s.Packets += e.controlPackets.Load() + e.passPackets.Load()
	s.Bytes += e.controlBytes.Load() + e.passBytes.Load()
	return s
}

// Control returns the control frames that went up unshaped, within their
// allowance (they are in Stats too).
func (e *Endpoint) Control() (packets, bytes uint64) {
	return e.controlPackets.Load(), e.controlBytes.Load()
}

// Config returns the shaper's configuration, with Limit computed (the
// zero Config before any ceiling).
func (e *Endpoint) Config() tbf.Config {
	if s := e.shaper.Load(); s != nil {
		return s.Config()
	}
	return tbf.Config{}
}

// Quiescent reports whether the shaper's queues are idle or waiting for
// their departures: nothing runs until a timer fires or a packet arrives.
// Tests use it to step a clock.
func (e *Endpoint) Quiescent() bool {
	if e.whole != nil {
		return e.whole.Quiescent()
	}
	s := e.shaper.Load()
	return s == nil || s.Quiescent()
}

// Lanes returns the number of the shaper's lanes (0 before any ceiling).
func (e *Endpoint) Lanes() int {
	if e.whole != nil {
		return e.whole.Lanes()
	}
	if s := e.shaper.Load(); s != nil {
		return s.Lanes()
	}
	return 0
}

// String describes the shaper as `tc qdisc show dev ifb0` would: "tbf rate
// 10Mbit burst 12500b lat 25ms"; "none" before any ceiling.
func (e *Endpoint) String() string {
	if e.whole != nil {
		return e.whole.String()
	}
	if s := e.shaper.Load(); s != nil {
		return s.String()
	}
	return "none"
}

// Show implements qdisc.Shower: the ingress qdisc as tc shows Linux's
// ("qdisc ingress ffff: ... ----------------"), with the Endpoint's
// counters (Stats: what went up, shaped or not, and what the shaper
// dropped), and its shaper grafted under it at ffff: on a line of its
// own, as an ifb device's qdisc shapes what Linux's ingress qdisc
// redirects to it; no shaper before a ceiling is set.
func (e *Endpoint) Show() qdisc.Showing {
	s := qdisc.Showing{Kind: "ingress", Handle: 0xffff << 16, Options: "----------------", Stats: e.Stats()}
	var shaper qdisc.Shower = e.whole
	if e.whole == nil {
		if sh := e.shaper.Load(); sh != nil {
			shaper = sh
		}
	}
	if shaper != nil {
		s.Children = []qdisc.Grafted{{Showing: shaper.Show()}}
	}
	return s
}

// newEndpoint returns an Endpoint over child, timed by clock, with no
// shaper yet: New and NewWhole give it one.
func newEndpoint(child stack.LinkEndpoint, clock tcpip.Clock) (*Endpoint, error) {
	if child == nil {
		return nil, fmt.Errorf("ingress: no link endpoint to shape")
	}
	if clock == nil {
		return nil, fmt.Errorf("ingress: no clock")
	}
	e := &Endpoint{child: child, clock: clock, hash: flowhash.New(), control: newAllowance(clock)}
	e.Endpoint.Init(child, e)
	return e, nil
}
