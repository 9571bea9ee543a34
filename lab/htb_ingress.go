package lab

import (
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/runsc-flags"
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

// deliveredFrom counts what the sender at addr has had delivered to the
// netstack so far, as PeerDeliveredBytes counts it, in the sender's own
// namespace, and what it has sent again.
func (l *Lab) deliveredFrom(addr string) (wire, retrans uint64, err error) {
	ns, err := l.senderNS(addr)
	if err != nil {
		return 0, 0, err
	}
	out, err := Run(ns, "ss", "-tinH", "src", addr, "dst", NetstackAddr)
	if err != nil {
		return 0, 0, err
	}
	acked, delivered, err := parseDelivered(out)
	if err != nil {
		return 0, 0, err
	}
	if retrans, err = sumField(out, "bytes_retrans"); err != nil {
		return 0, 0, err
	}
	return acked + delivered*gsoSegmentHeaders, retrans, nil
}

// startDownloads starts each load's iperf client in its sender's
// namespace, to the netstack's port, for o's warm-up and window; out
// collects what they say.
func (l *Lab) startDownloads(loads []IngressLoad, port int, o measure.Options, out *strings.Builder) (stop func(), err error) {
	var clis []func()
	stop = func() {
		for _, c := range clis {
			c()
		}
	}
	for _, ld := range loads {
		ns, _ := l.senderNS(ld.From) // checked
		o := o
		o.Streams = ld.Streams
		cli, err := l.Start(ns, out, iperfArgsPort(NetstackAddr, port, o)...)
		if err != nil {
			stop()
			return nil, err
		}
		clis = append(clis, func() { cli.Process.Kill() })
	}
	return stop, nil
}

// ingressWindow waits o.Warmup, then reads the class counters, each
// load's delivered bytes and the receiver's (rx) over o.Window. Each count
// is timed by its own reads (the middle of each), as each takes its own
// time: `runsc qdisc show` tens of ms, more when the machine is busy.
//
// With backlog (not nil), it also looks at the classes' queues every
// 10 ms over the window (backlog returns each class's queued packets).
func (l *Lab) ingressWindow(loads []IngressLoad, counters func() (map[uint32]uint64, error), rx func() (uint64, error), backlog func() map[uint32]uint64, o measure.Options, r *IngressHTBResult) error {
	time.Sleep(o.Warmup)
	type reading struct {
		classes          map[uint32]uint64
		classesAt        time.Time
		delivered, again []uint64
		deliveredAt      []time.Time
		rx               uint64
		rxAt             time.Time
	}
	timed := func(f func() error) (time.Time, error) {
		t0 := time.Now()
		err := f()
		return t0.Add(time.Since(t0) / 2), err
	}
	read := func() (reading, error) {
		var g reading
		var err error
		if g.classesAt, err = timed(func() (err error) { g.classes, err = counters(); return err }); err != nil {
			return g, err
		}
		g.delivered, g.again, g.deliveredAt = make([]uint64, len(loads)), make([]uint64, len(loads)), make([]time.Time, len(loads))
		for i, ld := range loads {
			if g.deliveredAt[i], err = timed(func() (err error) { g.delivered[i], g.again[i], err = l.deliveredFrom(ld.From); return err }); err != nil {
				return g, err
			}
		}
		if rx != nil {
			if g.rxAt, err = timed(func() (err error) { g.rx, err = rx(); return err }); err != nil {
				return g, err
			}
		}
		return g, nil
	}
	g0, err := read()
	if err != nil {
		return err
	}
	samples, empty := 0, map[uint32]int{}
	if backlog == nil {
		time.Sleep(o.Window)
	} else {
		for end := time.Now().Add(o.Window); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			samples++
			for id, n := range backlog() {
				if n == 0 {
					empty[id]++
				}
			}
		}
	}
	g1, err := read()
	if err != nil {
		return err
	}
	r.Elapsed = g1.classesAt.Sub(g0.classesAt)
	r.Loads = make([]IngressClassResult, len(loads))
	var delivered float64
	for i, ld := range loads {
		c := &r.Loads[i]
		c.Class, c.From = ld.Class, ld.From
		c.Bytes = g1.classes[ld.Class] - g0.classes[ld.Class]
		c.Bps = float64(c.Bytes) / r.Elapsed.Seconds()
		c.WireBytes = g1.delivered[i] - g0.delivered[i]
		c.WireBps = float64(c.WireBytes) / g1.deliveredAt[i].Sub(g0.deliveredAt[i]).Seconds()
		c.RetransBytes = g1.again[i] - g0.again[i]
		c.Samples, c.Empty = samples, empty[ld.Class]
		delivered += c.WireBps
	}
	r.RxBps = delivered
	if rx != nil {
		r.RxBps = float64(g1.rx-g0.rx) / g1.rxAt.Sub(g0.rxAt).Seconds()
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

// StartIngressHTBSandbox starts a sandbox (StartSandbox) after making the
// cluster host (AddClusterHost) and giving the netstack's namespace (NSN)
// a route to it through the peer, which the sandbox takes as it starts
// (runsc copies the namespace's routes and removes them: each sandbox
// needs the route anew).
func (l *Lab) StartIngressHTBSandbox(o SandboxOptions) (*Sandbox, error) {
	if err := l.AddClusterHost(); err != nil {
		return nil, err
	}
	// The route's gateway must be on a subnet of the namespace's: put
	// back the address a previous sandbox took (launch does it too).
	if _, err := Run(l.NSN, "ip", "addr", "replace", NetstackAddr+"/24", "dev", l.VethN); err != nil {
		return nil, err
	}
	if _, err := Run(l.NSN, "ip", "route", "replace", "10.77.1.0/24", "via", PeerAddr, "dev", l.VethN); err != nil {
		return nil, err
	}
	return l.StartSandbox(o)
}

// MeasureSandboxIngressHTB runs iperf's server in sandbox s (started with
// --qdisc-ingress-htb by StartIngressHTBSandbox), has each load's sender
// send its streams to it at once, and reads each class's counter as
// `runsc qdisc show` prints the ingress classes, and each sender's
// delivered bytes, over o.Window after o.Warmup.
func (l *Lab) MeasureSandboxIngressHTB(s *Sandbox, loads []IngressLoad, o measure.Options) (IngressHTBResult, error) {
	var r IngressHTBResult
	if err := l.checkIngressLoads(loads); err != nil {
		return r, err
	}
	if err := l.AddClusterHost(); err != nil {
		return r, err
	}
	var sout strings.Builder
	srv, err := s.Exec(&sout, "iperf", "-s", "-p", fmt.Sprint(iperfPort))
	if err != nil {
		return r, err
	}
	defer srv.Process.Kill()
	time.Sleep(500 * time.Millisecond) // the server listens (ss in NSN cannot see the sandbox's sockets)
	var cout strings.Builder
	stop, err := l.startDownloads(loads, iperfPort, o, &cout)
	if err != nil {
		return r, err
	}
	defer stop()
	show := func() (string, error) {
		out, err := s.QDisc("show")
		if err != nil {
			return "", err
		}
		return ingressSection(out)
	}
	counters := func() (map[uint32]uint64, error) {
		out, err := show()
		if err != nil {
			return nil, err
		}
		return parseClassBytes(out)
	}
	// A first show before the window: it says at once if the sandbox has
	// no ingress classes, and the window's reads are not the first.
	if _, err := show(); err != nil {
		return r, err
	}
	err = l.ingressWindow(loads, counters, nil, nil, o, &r)
	r.TC, _ = show()
	if err == nil && r.RxBps == 0 {
		err = fmt.Errorf("nothing reached the sandbox; iperf on the senders said: %s; in the sandbox: %s", cout.String(), sout.String())
	}
	return r, err
}

// ingressSection is the part of `runsc qdisc show`'s output about the
// receive path of the first NIC that has one: from its "qdisc ingress"
// line, through the shaper grafted under it (its qdiscs and classes), to
// the next NIC's root qdisc or ingress qdisc.
func ingressSection(show string) (string, error) {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(show, "\n") {
		if strings.HasPrefix(line, "qdisc ") {
			next := strings.HasPrefix(line, "qdisc ingress ")
			if in && (next || strings.Contains(line, " root ")) {
				break
			}
			in = in || next
		}
		if in {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("runsc qdisc show has no ingress qdisc: %q", show)
	}
	return b.String(), nil
}
