package benchmarks

import (
	"fmt"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// The two stacks and the link between them: an in-memory pipe behind
// Ethernet framing, tapped where the qdisc hands it packets.

const (
	nicID     = 1
	bulkPort  = 5001
	probePort = 5002
	probeSize = 64
	mtu       = 1500
)

var (
	// The two stacks exist only in this process, joined by a pipe; no
	// packet reaches the host's network.
	addrA = tcpip.AddrFrom4([4]byte{10, 99, 0, 1})
	addrB = tcpip.AddrFrom4([4]byte{10, 99, 0, 2})
	macA  = tcpip.LinkAddress("\x02\x00\x00\x00\x00\x01")
	macB  = tcpip.LinkAddress("\x02\x00\x00\x00\x00\x02")
)

// tap counts what the qdisc hands the link.
type tap struct {
	stack.LinkEndpoint
	bytes atomic.Uint64
}

func (t *tap) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	var sizes [64]int
	list := pkts.AsSlice()
	for i, p := range list {
		if i < len(sizes) {
			sizes[i] = p.Size()
		}
	}
	n, err := t.LinkEndpoint.WritePackets(pkts)
	var b uint64
	for i := 0; i < n && i < len(list); i++ {
		if i < len(sizes) {
			b += uint64(sizes[i])
		} else {
			b += uint64(list[i].Size())
		}
	}
	t.bytes.Add(b)
	return n, err
}

// valve is the receiver's link: closed at teardown, it drops what the
// receiver sends. The pipe delivers synchronously, so without it a packet
// the sender's qdisc is delivering could make the receiver answer (an RST)
// straight back into the sender while the sender's Destroy holds its stack
// lock and waits, in the qdisc's Close, for that very delivery.
type valve struct {
	stack.LinkEndpoint
	closed atomic.Bool
}

func (v *valve) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	if v.closed.Load() {
		return pkts.Len(), nil
	}
	return v.LinkEndpoint.WritePackets(pkts)
}

func newStack() *stack.Stack {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol},
	})
	sack := tcpip.TCPSACKEnabled(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	snd := tcpip.TCPSendBufferSizeRangeOption{Min: 4096, Default: 1 << 20, Max: 4 << 20}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &snd)
	rcv := tcpip.TCPReceiveBufferSizeRangeOption{Min: 4096, Default: 1 << 20, Max: 4 << 20}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &rcv)
	return s
}

func setupNIC(s *stack.Stack, ep stack.LinkEndpoint, q stack.QueueingDiscipline, local, remote tcpip.Address, remoteMAC tcpip.LinkAddress) error {
	if err := s.CreateNICWithOptions(nicID, ep, stack.NICOptions{QDisc: q}); err != nil {
		return fmt.Errorf("CreateNIC: %s", err)
	}
	pa := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: local.WithPrefix()}
	pa.AddressWithPrefix.PrefixLen = 24
	if err := s.AddProtocolAddress(nicID, pa, stack.AddressProperties{}); err != nil {
		return fmt.Errorf("AddProtocolAddress: %s", err)
	}
	if err := s.AddStaticNeighbor(nicID, ipv4.ProtocolNumber, remote, remoteMAC); err != nil {
		return fmt.Errorf("AddStaticNeighbor: %s", err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: pa.AddressWithPrefix.Subnet(), NIC: nicID}})
	return nil
}

// setUpStacks makes the two stacks, joined by an in-memory pipe, and the
// qdisc on A's NIC.
func (h *harness) setUpStacks() error {
	h.sa, h.sb = newStack(), newStack()
	pa, pb := pipe.New(macA, macB, mtu+header.EthernetMinimumSize)
	h.wire = &tap{LinkEndpoint: ethernet.New(pa)}
	h.back = &valve{LinkEndpoint: ethernet.New(pb)}
	q, err := h.c.Make(h.wire, h.sa.Clock())
	if err != nil {
		return fmt.Errorf("%s: %w", h.c.Name(), err)
	}
	h.q = q
	if err := setupNIC(h.sa, h.wire, q, addrA, addrB, macB); err != nil {
		return err
	}
	h.attached = true
	return setupNIC(h.sb, h.back, nil, addrB, addrA, macA)
}
