package lab

// This file holds the htb ingress runs' topology (the cluster host behind
// the peer) and what a run takes and gives: its loads and results. The
// runs are in htb_ingress_netstack.go and htb_ingress_sandbox.go, their
// shared window in htb_ingress_window.go.

import (
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
)

// Classes on the receive path (htb, issue 28 point 3): the same classes
// as on the send path shape what the netstack receives, a rule's dst
// matching the sender. Two senders download at once: the peer (PeerAddr,
// the "internet", which no rule matches) and the cluster host, a second
// kernel in a namespace of its own behind the peer (PeerClusterAddr,
// which the rule "dst 10.77.1.0/24" matches). The peer routes between the
// cluster host and the netstack's link:
//
//	netstack 10.77.0.1 ─── vethP1 nsP 10.77.0.2 (forwards)
//	                        vethR  10.77.1.1 ─── vethC nsC 10.77.1.2
//
// The netstack (or the sandbox, through its namespace's routes) reaches
// 10.77.1.0/24 through the peer. A packet from the cluster host crosses
// the peer's vethP1, whose GSO is off: the netstack reads MTU-sized
// frames from both senders.

// clusterGateway is the peer's address facing the cluster host.
const clusterGateway = "10.77.1.1"

// ClusterHost returns the namespace of the Lab's cluster host (made by
// AddClusterHost): the Lab's namespaces' name with "-c".
func (l *Lab) ClusterHost() string { return strings.TrimSuffix(l.NSN, "-n") + "-c" }

// AddClusterHost makes the cluster host (ClusterHost, at PeerClusterAddr)
// and its link to the peer, which forwards between it and the netstack's
// link, if it is not there yet. The Lab's Close removes it. It does not
// mix with AddClusterPeer, which puts PeerClusterAddr on the peer itself.
func (l *Lab) AddClusterHost() error {
	ns := l.ClusterHost()
	if _, err := os.Stat("/var/run/netns/" + ns); err == nil {
		return nil
	}
	id := strings.TrimPrefix(l.VethN, "nqn")
	vethC, vethR := "nqc"+id, "nqr"+id
	l.mu.Lock()
	l.closers = append(l.closers, func() {
		killAll(ns)
		osexec.Command("ip", "netns", "del", ns).Run()
	})
	l.mu.Unlock()
	for _, s := range [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", vethC, "netns", ns, "type", "veth", "peer", "name", vethR, "netns", l.NSP},
		{"ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"},
		{"ip", "netns", "exec", ns, "ip", "addr", "add", PeerClusterAddr + "/24", "dev", vethC},
		{"ip", "netns", "exec", ns, "ip", "link", "set", vethC, "up"},
		{"ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"},
		{"ip", "netns", "exec", ns, "ip", "route", "add", "default", "via", clusterGateway},
		{"ip", "netns", "exec", l.NSP, "ip", "addr", "add", clusterGateway + "/24", "dev", vethR},
		{"ip", "netns", "exec", l.NSP, "ip", "link", "set", vethR, "up"},
		{"ip", "netns", "exec", l.NSP, "sysctl", "-qw", "net.ipv4.ip_forward=1"},
	} {
		if out, err := osexec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("making the cluster host: %s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return nil
}

// routeToClusterHost gives the netstack a route to the cluster host's
// /24 through the peer.
func routeToClusterHost(n *Netstack) error {
	sub, err := tcpip.NewSubnet(tcpip.AddrFrom4([4]byte{10, 77, 1, 0}), tcpip.MaskFromBytes([]byte{255, 255, 255, 0}))
	if err != nil {
		return err
	}
	n.Stack.AddRoute(tcpip.Route{Destination: sub, Gateway: tcpip.AddrFrom4([4]byte{10, 77, 0, 2}), NIC: 1})
	return nil
}

// IngressLoad is one sender's download in an htb ingress run: Streams
// bulk TCP streams from From (PeerAddr, the peer; PeerClusterAddr, the
// cluster host) to the netstack, which Class's rule or the default puts in
// that class.
type IngressLoad struct {
	Class   uint32
	From    string
	Streams int
}

// IngressClassResult is one download's share of an htb ingress run's
// window.
type IngressClassResult struct {
	Class uint32
	From  string
	// Bytes left the class for the stack over the window (its tc -s
	// counter: L2 bytes), Bps per second.
	Bytes uint64
	Bps   float64
	// WireBytes is what the sender's TCP had delivered to the netstack
	// over the window, as a wire carries it (PeerDeliveredBytes: payload
	// acknowledged, each delivered segment with its headers), WireBps per
	// second.
	WireBytes uint64
	WireBps   float64
	// RetransBytes is what the sender's TCP sent again over the window
	// (ss's bytes_retrans): what was lost on the way, before the classes
	// or in them.
	RetransBytes uint64
	// Samples is how often the class's queue was looked at over the
	// window (every 10 ms, in process only), Empty how often it held
	// nothing: a class whose queue empties sends less than its rate for
	// want of packets, its senders' doing, not the classes'.
	Samples, Empty int
}

// IngressHTBResult is an htb ingress run's window: each download's share,
// in the loads' order, and the classes at its end.
type IngressHTBResult struct {
	Elapsed time.Duration
	Loads   []IngressClassResult
	// RxBps is what the receiver took over the window, per second: for
	// the netstack in process, what its NIC received (RxWireBytes), after
	// the classes; for a sandbox, the senders' delivered bytes summed.
	RxBps float64
	// SocketDrops are the frames the netstack's packet socket dropped
	// over the window, before any class saw them (the kernel's
	// PACKET_STATISTICS: the socket's buffer was full); 0 for a sandbox,
	// whose socket is runsc's.
	SocketDrops uint64
	// TC is the receive path's classes as tc -s prints them, at the end.
	TC string
}

// senderNS is the namespace that sends from addr.
func (l *Lab) senderNS(addr string) (string, error) {
	switch addr {
	case PeerAddr:
		return l.NSP, nil
	case PeerClusterAddr:
		return l.ClusterHost(), nil
	}
	return "", fmt.Errorf("sender %q: want %s (the peer) or %s (the cluster host)", addr, PeerAddr, PeerClusterAddr)
}

// checkIngressLoads checks each load's sender and streams.
func (l *Lab) checkIngressLoads(loads []IngressLoad) error {
	if len(loads) == 0 {
		return fmt.Errorf("no load")
	}
	for i, ld := range loads {
		if _, err := l.senderNS(ld.From); err != nil {
			return fmt.Errorf("load %d: %v", i+1, err)
		}
		if ld.Streams < 1 {
			return fmt.Errorf("load %d: %d streams: want 1 or more", i+1, ld.Streams)
		}
	}
	return nil
}
