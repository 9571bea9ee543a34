package lab

// This file holds the htb ingress run of the netstack in process.

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/runsc-flags"
)

// runscSocketBuffer gives the netstack's packet socket the receive buffer
// runsc gives a sandbox's (4 MB, SO_RCVBUFFORCE; the kernel's default,
// rmem_default, is some 200 KB): with the default, a download the
// receiver cannot keep up with is dropped at the socket, before any class
// sees it, whatever its class; with runsc's, it queues in its class's
// leaf, and the classes decide what is dropped.
func runscSocketBuffer(n *Netstack) error {
	if err := unix.SetsockoptInt(n.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20); err != nil {
		return fmt.Errorf("the packet socket's receive buffer (SO_RCVBUFFORCE): %v", err)
	}
	return nil
}

// MeasureNetstackIngressHTB runs the netstack with the receive path's
// htb classes cfg gives (--qdisc-ingress-htb) and cfg's egress qdisc, has
// each load's sender (the peer, the cluster host: AddClusterHost) send
// its streams to it at once, and reads each class's counter (the ingress
// endpoint's Classes), each sender's delivered bytes and what the NIC
// received over o.Window after o.Warmup.
func (l *Lab) MeasureNetstackIngressHTB(cfg *runscflags.Config, loads []IngressLoad, o measure.Options) (IngressHTBResult, error) {
	var r IngressHTBResult
	if err := l.checkIngressLoads(loads); err != nil {
		return r, err
	}
	if err := l.AddClusterHost(); err != nil {
		return r, err
	}
	var ep *htb.Discipline // the receive path's classes
	wrap := func(link stack.LinkEndpoint, clock tcpip.Clock) (stack.LinkEndpoint, error) {
		e, err := cfg.NewIngress(link, clock)
		if err != nil {
			return nil, err
		}
		h, ok := e.Whole().(*htb.Discipline)
		if !ok {
			e.Close()
			return nil, fmt.Errorf("the receive path has no htb classes: give --qdisc-ingress-htb")
		}
		ep = h
		return e, nil
	}
	n, err := l.StartNetstackOn(cfg.NewQueueingDiscipline, wrap)
	if err != nil {
		return r, err
	}
	defer n.Close()
	if err := runscSocketBuffer(n); err != nil {
		return r, err
	}
	if err := routeToClusterHost(n); err != nil {
		return r, err
	}
	stopSink, err := n.Sink(sinkPortRx)
	if err != nil {
		return r, err
	}
	defer stopSink()
	var cout strings.Builder
	stop, err := l.startDownloads(loads, sinkPortRx, o, &cout)
	if err != nil {
		return r, err
	}
	defer stop()
	counters := func() (map[uint32]uint64, error) {
		m := map[uint32]uint64{}
		for _, c := range ep.Classes() {
			m[c.ID] = c.Bytes
		}
		return m, nil
	}
	// The socket's drops are read with the NIC's count: the first read
	// clears them (PACKET_STATISTICS counts since the last read), the
	// second gives the window's.
	reads := 0
	rx := func() (uint64, error) {
		st, err := unix.GetsockoptTpacketStats(n.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
		if err != nil {
			return 0, fmt.Errorf("PACKET_STATISTICS: %v", err)
		}
		if reads > 0 {
			r.SocketDrops += uint64(st.Drops)
		}
		reads++
		return n.RxWireBytes()
	}
	backlog := func() map[uint32]uint64 {
		m := map[uint32]uint64{}
		for _, c := range ep.Classes() {
			m[c.ID] = c.BacklogPackets
		}
		return m
	}
	err = l.ingressWindow(loads, counters, rx, backlog, o, &r)
	r.TC = ep.TCStats()
	if err == nil && r.RxBps == 0 {
		err = fmt.Errorf("nothing reached the netstack; iperf on the senders said: %s", cout.String())
	}
	return r, err
}
