package lab

// This file holds the htb runs' topology (the peer's cluster addresses,
// the kernel side's twins) and what a run takes and gives: its loads and
// results. The runs themselves are in htb_netstack.go, htb_kernel.go and
// htb_sandbox.go, their shared window in htb_window.go.

import (
	"fmt"
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// Classes by destination (htb, issue 28): the peer holds a second address
// on each side, the "cluster" peer, beside the one it has, the "internet"
// peer; the netstack's htb and the kernel sender's sch_htb split what
// they send by destination /24. The kernel side's addresses are the
// netstack side's with 10.78 for 10.77 (kernelSide).
const (
	PeerClusterAddr       = "10.77.1.2"
	PeerKernelClusterAddr = "10.78.1.2"
)

// AddClusterPeer gives the peer its "cluster" addresses (PeerClusterAddr on
// vethP1, PeerKernelClusterAddr on vethP2) and the netstack (n, if not nil)
// and the kernel sender routes to them, on their links.
func (l *Lab) AddClusterPeer(n *Netstack) error {
	for _, s := range [][]string{
		{l.NSP, "ip", "addr", "replace", PeerClusterAddr + "/24", "dev", l.VethP1},
		{l.NSP, "ip", "addr", "replace", PeerKernelClusterAddr + "/24", "dev", l.VethP2},
		{l.NSK, "ip", "route", "replace", "10.78.1.0/24", "dev", l.VethK},
	} {
		if _, err := Run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	if n == nil {
		return nil
	}
	sub, err := tcpip.NewSubnet(tcpip.AddrFrom4([4]byte{10, 77, 1, 0}), tcpip.MaskFromBytes([]byte{255, 255, 255, 0}))
	if err != nil {
		return err
	}
	n.Stack.AddRoute(tcpip.Route{Destination: sub, NIC: 1})
	return nil
}

// kernelSide is the kernel side's address for a netstack side's: 10.77.x.y
// is 10.78.x.y; any other stays.
func kernelSide(a netip.Addr) netip.Addr {
	if !a.Is4() {
		return a
	}
	if b := a.As4(); b[0] == 10 && b[1] == 77 {
		b[1] = 78
		return netip.AddrFrom4(b)
	}
	return a
}

// ClassLoad is one class's load in an htb run: Streams bulk TCP streams to
// Dst (a netstack side address: PeerAddr or PeerClusterAddr; the kernel
// sender sends to its kernelSide twin), which Class's filter or the
// default puts in that class.
type ClassLoad struct {
	Class   uint32
	Dst     string
	Streams int
}

// ClassResult is what one class sent over an htb run's window.
type ClassResult struct {
	Class uint32
	// Bytes were dequeued from the class over the window (its tc -s
	// counter: L2 bytes, a GSO packet as its segments).
	Bytes uint64
	Bps   float64
	// Goodput is the payload the peer's TCP received over the window from
	// the class's streams (ss's bytes_received), per second.
	Goodput float64
	// RTTs are those of pings from the class's peer address to the sender
	// (the replies go through the class), PingsSent how many were sent;
	// IdleRTT their median before the streams started.
	RTTs      []time.Duration
	PingsSent int
	IdleRTT   time.Duration
}

// RTT returns the q quantile of the class's ping RTTs (0 if none).
func (c ClassResult) RTT(q float64) time.Duration { return measure.Quantile(c.RTTs, q) }

// HTBResult is an htb run's window: each class's share, in the loads'
// order, and the class counters at its end.
type HTBResult struct {
	Elapsed time.Duration
	Classes []ClassResult
	// PeerBps is what the peer's veth facing the sender received over the
	// window, as a wire carries it (WireBytes), per second: all classes.
	PeerBps float64
	// TC is the classes' `tc -s class show` at the end of the window.
	TC string
}

// checkLoads checks that each load has an IPv4 destination and a stream
// or more.
func checkLoads(loads []ClassLoad) error {
	if len(loads) == 0 {
		return fmt.Errorf("no load")
	}
	for i, ld := range loads {
		if a, err := netip.ParseAddr(ld.Dst); err != nil || !a.Is4() {
			return fmt.Errorf("load %d: destination %q: want an IPv4 address", i+1, ld.Dst)
		}
		if ld.Streams < 1 {
			return fmt.Errorf("load %d: %d streams: want 1 or more", i+1, ld.Streams)
		}
	}
	return nil
}
