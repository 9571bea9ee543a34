package lab

// This file holds a node's topology (issue 38): runsc sandboxes, each in
// a namespace of its own, routed by one router namespace to a peer over
// one uplink, as the pods of a host share its NIC; and a run's window:
// what the peer received for each sandbox, and what the uplink sent.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// Addresses of a Node: sandbox i (from 1) is NodeSandboxAddr(i) on
// 10.80.i.0/24, the router 10.80.i.2 on its link and NodeRouterAddr on
// the uplink's 10.81.0.0/24, the peer NodePeerAddr there and one address
// per sandbox, NodePeerAddrOf(i), which sandbox i's load goes to.
const (
	NodeRouterAddr = "10.81.0.1"
	NodePeerAddr   = "10.81.0.2"
)

// NodeSandboxAddr is sandbox i's address (i from 1): 10.80.i.1.
func NodeSandboxAddr(i int) string { return fmt.Sprintf("10.80.%d.1", i) }

// NodePeerAddrOf is the peer's address for sandbox i (i from 1):
// 10.81.0.(10+i).
func NodePeerAddrOf(i int) string { return fmt.Sprintf("10.81.0.%d", 10+i) }

// NodeHost is one sandbox's place on a Node.
type NodeHost struct {
	// NS is the sandbox's namespace, Veth its veth there and RouterVeth
	// the router's end of it.
	NS         string
	Veth       string
	RouterVeth string
	// Addr is the sandbox's address, Gateway the router's on their link.
	Addr    string
	Gateway string
	// PeerAddr is the peer's address the sandbox's load goes to, on
	// PeerDev, a macvlan of the peer's end of the uplink with MAC
	// PeerMAC.
	PeerAddr string
	PeerDev  string
	PeerMAC  string
}

// Node is a node's uplink shared by its sandboxes, in network namespaces
// made for one run, with unique names:
//
//	sandbox 1 (runsc, its own ns)  10.80.1.1 ─┐
//	sandbox 2                      10.80.2.1 ─┤ router ns ── uplink ── peer ns
//	sandbox 3                      10.80.3.1 ─┘ 10.81.0.1             10.81.0.2
//	                                                                   macvlans .11 .12 .13
//
// The router forwards; its uplink is the node's NIC, where the kernel's
// htb goes for the control (KernelHTB). The peer has each sandbox's
// address on a macvlan of its end of the uplink, with a MAC of its own,
// so that the macvlan's receive counter is what the uplink carried for
// that sandbox: its frames, as htb counts them (Counters). GSO, TSO and
// GRO are off on the router's and the peer's veths, as New turns them
// off on the peer's, so that every packet is a frame of the wire; start
// the sandboxes with --gso=false for the same.
//
// The embedded Lab's NSN and NSK are the router's namespace and its NSP
// the peer's: its Start and Close work on them. Close (the
// Lab's) stops the sandboxes and removes every namespace; Sweep removes
// what an interrupted run left.
type Node struct {
	*Lab
	// Router is the router's namespace (the Lab's NSN and NSK), Uplink
	// its veth to the peer, PeerUplink the peer's end (in the Lab's NSP).
	Router     string
	Uplink     string
	PeerUplink string
	// Hosts are the sandboxes' places, sandbox i+1's at i.
	Hosts []NodeHost

	sandboxesMu sync.Mutex
	// sandboxes are those started on the node, closed before their
	// namespaces are removed.
	// +checklocks:sandboxesMu
	sandboxes []*Sandbox
}

// NewNode makes a Node with n sandbox places (1 to 200). On error,
// whatever it made is removed.
func NewNode(n int) (*Node, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if n < 1 || n > 200 {
		return nil, fmt.Errorf("a node of %d sandboxes: want 1 to 200", n)
	}
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(b[:])
	// The PID in the names lets Sweep leave other processes' nodes alone.
	base := fmt.Sprintf("%s-%d-%s", Prefix, os.Getpid(), id)
	nd := &Node{Router: base + "-r", Uplink: "nqu" + id, PeerUplink: "nqv" + id}
	for i := 1; i <= n; i++ {
		nd.Hosts = append(nd.Hosts, NodeHost{
			NS: fmt.Sprintf("%s-s%d", base, i),
			// Interface names are at most 15 bytes.
			Veth: fmt.Sprintf("nqs%s%d", id, i), RouterVeth: fmt.Sprintf("nqr%s%d", id, i),
			Addr: NodeSandboxAddr(i), Gateway: fmt.Sprintf("10.80.%d.2", i),
			PeerAddr: NodePeerAddrOf(i), PeerDev: fmt.Sprintf("nqm%s%d", id, i),
			// Locally administered, unique to the node.
			PeerMAC: fmt.Sprintf("02:%02x:%02x:%02x:00:%02x", b[0], b[1], b[2], i),
		})
	}
	l := &Lab{NSN: nd.Router, NSP: base + "-p", NSK: nd.Router, VethP1: nd.PeerUplink}
	nd.Lab = l
	// The Lab's closers run first at its Close, before it kills what runs
	// in the router's and the peer's namespaces: this one stops the
	// sandboxes, then removes their namespaces.
	l.mu.Lock()
	l.closers = append(l.closers, nd.closeSandboxes)
	l.mu.Unlock()
	labsMu.Lock()
	labs[l] = true
	labsMu.Unlock()
	peer, r := l.NSP, nd.Router
	in := func(ns string, args ...string) []string { return append([]string{"ip", "netns", "exec", ns}, args...) }
	quiet := func(ns string) [][]string {
		return [][]string{
			in(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"),
			in(ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"),
			in(ns, "ip", "link", "set", "lo", "up"),
		}
	}
	offloadsOff := func(ns, dev string) []string {
		return in(ns, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off")
	}
	steps := [][]string{
		{"ip", "netns", "add", r},
		{"ip", "netns", "add", peer},
		{"ip", "link", "add", nd.Uplink, "netns", r, "type", "veth", "peer", "name", nd.PeerUplink, "netns", peer},
	}
	steps = append(steps, quiet(r)...)
	steps = append(steps, quiet(peer)...)
	steps = append(steps,
		in(r, "sysctl", "-qw", "net.ipv4.ip_forward=1"),
		in(r, "ip", "addr", "add", NodeRouterAddr+"/24", "dev", nd.Uplink),
		in(r, "ip", "link", "set", nd.Uplink, "up"),
		offloadsOff(r, nd.Uplink),
		// The peer answers ARP for an address only on the device that
		// has it (a macvlan's own MAC), and takes a sandbox's packets on
		// its macvlan though its replies leave by the uplink.
		in(peer, "sysctl", "-qw", "net.ipv4.conf.all.arp_ignore=1"),
		in(peer, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0"),
		in(peer, "sysctl", "-qw", "net.ipv4.conf.default.rp_filter=0"),
		in(peer, "ip", "addr", "add", NodePeerAddr+"/24", "dev", nd.PeerUplink),
		in(peer, "ip", "link", "set", nd.PeerUplink, "up"),
		in(peer, "ip", "route", "add", "10.80.0.0/16", "via", NodeRouterAddr, "dev", nd.PeerUplink),
		offloadsOff(peer, nd.PeerUplink),
	)
	for _, h := range nd.Hosts {
		steps = append(steps, []string{"ip", "netns", "add", h.NS})
		steps = append(steps, quiet(h.NS)...)
		steps = append(steps,
			[]string{"ip", "link", "add", h.Veth, "netns", h.NS, "type", "veth", "peer", "name", h.RouterVeth, "netns", r},
			// The sandbox's namespace has no address until a sandbox
			// starts (launch puts it there for runsc to take): its
			// kernel must stay silent.
			in(h.NS, "ip", "link", "set", h.Veth, "up"),
			in(r, "ip", "addr", "add", h.Gateway+"/24", "dev", h.RouterVeth),
			in(r, "ip", "link", "set", h.RouterVeth, "up"),
			offloadsOff(r, h.RouterVeth),
			in(peer, "ip", "link", "add", h.PeerDev, "link", nd.PeerUplink, "address", h.PeerMAC, "type", "macvlan", "mode", "private"),
			in(peer, "ip", "addr", "add", h.PeerAddr+"/32", "dev", h.PeerDev),
			in(peer, "ip", "link", "set", h.PeerDev, "up"),
			// The router knows the macvlan's MAC without asking: a
			// macvlan takes broadcasts (ARP) through a work queue, which
			// a loaded machine delays. (Once, before this, a sandbox's
			// streams reached nothing through a whole window, on a
			// machine loaded to 5 on its 2 cores: the likeliest cause.)
			in(r, "ip", "neigh", "replace", h.PeerAddr, "lladdr", h.PeerMAC, "dev", nd.Uplink, "nud", "permanent"),
		)
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			l.Close()
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(s, " "), err, out)
		}
	}
	return nd, nil
}

// closeSandboxes stops the sandboxes started on the node and removes the
// sandboxes' namespaces (and so their veths).
func (nd *Node) closeSandboxes() {
	nd.sandboxesMu.Lock()
	sandboxes := nd.sandboxes
	nd.sandboxes = nil
	nd.sandboxesMu.Unlock()
	for _, s := range sandboxes {
		s.Close()
	}
	for _, h := range nd.Hosts {
		killAll(h.NS)
		exec.Command("ip", "netns", "del", h.NS).Run()
	}
}

// Namespaces are the node's network namespaces: the router's, the
// peer's and the sandboxes'.
func (nd *Node) Namespaces() []string {
	ns := []string{nd.Router, nd.NSP}
	for _, h := range nd.Hosts {
		ns = append(ns, h.NS)
	}
	return ns
}

// StartSandbox starts a runsc sandbox (Lab.StartSandbox) in place i (from
// 0) of the node: on its veth, with its address and a default route via
// the router, answering ping from the peer. The node's Close stops it;
// Sandbox.Close stops it before.
func (nd *Node) StartSandbox(i int, o SandboxOptions) (*Sandbox, error) {
	if i < 0 || i >= len(nd.Hosts) {
		return nil, fmt.Errorf("no sandbox place %d on a node of %d", i, len(nd.Hosts))
	}
	h := nd.Hosts[i]
	o.Net = &SandboxNet{NS: h.NS, Dev: h.Veth, Addr: h.Addr + "/24", Gateway: h.Gateway, PingFrom: nd.NSP}
	s, err := nd.Lab.StartSandbox(o)
	if err != nil {
		return nil, err
	}
	nd.sandboxesMu.Lock()
	nd.sandboxes = append(nd.sandboxes, s)
	nd.sandboxesMu.Unlock()
	return s, nil
}

// NodeLink is one of a node's links where the kernel's htb goes for a
// control: the router's uplink for what the node sends (SendLink), the
// peer's end of it for what the node receives (ReceiveLink).
type NodeLink struct {
	NS, Dev string
}

// SendLink is the router's uplink: every byte the node's sandboxes send
// leaves by it, as by a host's NIC.
func (nd *Node) SendLink() NodeLink { return NodeLink{NS: nd.Router, Dev: nd.Uplink} }

// ReceiveLink is the peer's end of the uplink: every byte the peer sends
// the node's sandboxes leaves by it, so a class keyed by a sandbox's
// address (filter dst) shapes what that sandbox receives, as an ifb's
// htb on the node's NIC would.
func (nd *Node) ReceiveLink() NodeLink { return NodeLink{NS: nd.NSP, Dev: nd.PeerUplink} }

// HTB puts cfg on the link as Linux's sch_htb (KernelHTB) and returns
// what tc warned; DeleteHTB removes it.
func (k NodeLink) HTB(cfg htb.Config) ([]string, error) { return KernelHTB(k.NS, k.Dev, cfg) }

// DeleteHTB removes the root qdisc HTB put on the link.
func (k NodeLink) DeleteHTB() error {
	_, err := Run(k.NS, "tc", "qdisc", "del", "dev", k.Dev, "root")
	return err
}

// Classes is `tc -s class show` of the link.
func (k NodeLink) Classes() (string, error) {
	return Run(k.NS, "tc", "-s", "class", "show", "dev", k.Dev)
}

// NodeCounters are the node's counters at one time.
type NodeCounters struct {
	// At is when they were read.
	At time.Time
	// Uplink is the bytes the router's uplink has sent (its tx_bytes):
	// every frame, headers and all, as htb counts it.
	Uplink uint64
	// Peer is what the peer has received for each sandbox's peer
	// address, host i's at i: the rx_bytes of the address's macvlan,
	// which counts each frame, headers and all.
	Peer []uint64
}

// Counters reads the node's counters, all at once: from this process, on
// a thread that enters the router's and then the peer's namespace and
// reads the interfaces' counters there (/proc/thread-self/net/dev), in
// well under a millisecond. (A command started in a namespace takes from
// ms to half a second on a loaded machine: a window's ends would not be
// read alike.)
func (nd *Node) Counters() (NodeCounters, error) {
	var c NodeCounters
	devs, at, err := netDevs(nd.Router, nd.NSP)
	if err != nil {
		return c, err
	}
	c.At = at
	up := devs[0][nd.Uplink]
	if !up.ok {
		return c, fmt.Errorf("no %s in the router's /proc/net/dev", nd.Uplink)
	}
	c.Uplink = up.tx
	c.Peer = make([]uint64, len(nd.Hosts))
	for i, h := range nd.Hosts {
		d := devs[1][h.PeerDev]
		if !d.ok {
			return c, fmt.Errorf("no %s in the peer's /proc/net/dev", h.PeerDev)
		}
		c.Peer[i] = d.rx
	}
	return c, nil
}

// devBytes are an interface's byte counters; ok says it was listed.
type devBytes struct {
	rx, tx uint64
	ok     bool
}

// netDevs reads /proc/net/dev as each of the namespaces nss sees it, in
// turn, on one thread, and returns each interface's byte counters in
// each, and the time in the middle of the reading. The thread goes back
// to its own namespace before it is unlocked: the runtime may run any
// goroutine on it after, and if it is the process's main thread, the
// process is listed in the namespace it is in (ip netns pids), which a
// Lab's Close kills.
func netDevs(nss ...string) ([]map[string]devBytes, time.Time, error) {
	var devs []map[string]devBytes
	var at time.Time
	err := onNSThread(nss, func(enter func(i int) error) error {
		texts := make([][]byte, len(nss))
		t0 := time.Now()
		for i := range nss {
			if err := enter(i); err != nil {
				return err
			}
			var err error
			if texts[i], err = os.ReadFile("/proc/thread-self/net/dev"); err != nil {
				return err
			}
		}
		at = t0.Add(time.Since(t0) / 2)
		for i, text := range texts {
			d, err := parseNetDev(string(text))
			if err != nil {
				return fmt.Errorf("namespace %s: %v", nss[i], err)
			}
			devs = append(devs, d)
		}
		return nil
	})
	return devs, at, err
}

// parseNetDev reads /proc/net/dev: after two lines of headings, a line
// per interface, "name: " and its receive counters (bytes first), then
// its transmit counters (bytes first), 8 of each.
func parseNetDev(text string) (map[string]devBytes, error) {
	devs := map[string]devBytes{}
	for _, line := range strings.Split(text, "\n") {
		name, counters, ok := strings.Cut(line, ":")
		f := strings.Fields(counters)
		if !ok || len(f) < 16 {
			continue
		}
		rx, err1 := strconv.ParseUint(f[0], 10, 64)
		tx, err2 := strconv.ParseUint(f[8], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("/proc/net/dev: %q", line)
		}
		devs[strings.TrimSpace(name)] = devBytes{rx: rx, tx: tx, ok: true}
	}
	return devs, nil
}

// NodeResult is a node run's window.
type NodeResult struct {
	Elapsed time.Duration
	// Bps is what the peer received for each sandbox's peer address, per
	// second, as the wire carried it (NodeCounters.Peer): host i's at i.
	Bps []float64
	// UplinkBps is what the router's uplink sent, per second, in frames
	// (NodeCounters.Uplink): every sandbox's, and ARP's.
	UplinkBps float64
	// CPU is the CPU time each sandbox used over the window (0 for an
	// idle place, or where its cgroup has no CPU accounting).
	CPU []time.Duration
	// Samples, with measure.Options.Sample, are Bps over each Sample of
	// the window, in order: Samples[k][i] is host i's in the k-th.
	Samples [][]float64
	// With measure.Options.PingInterval, the peer pings each busy
	// sandbox (a sparse flow beside its streams, its echo reply through
	// the sandbox's class): IdleRTT[i] is the median of 5 before the
	// load, RTTs[i] the answered ones over the window, of PingsSent[i].
	IdleRTT   []time.Duration
	RTTs      [][]time.Duration
	PingsSent []int
	// Flowing is how long after the load was started every busy
	// sandbox's streams were reaching the peer: the node's change, from
	// which Warmup counts (runsc exec takes hundreds of milliseconds).
	Flowing time.Duration
}

// NodeLoad is bulk TCP load running from a node's sandboxes to the
// peer (StartLoad); Stop ends it.
type NodeLoad struct {
	outs    []strings.Builder
	clients []*exec.Cmd
	kills   []func()
	stop    func()
}

// StartLoad starts streams[i] bulk TCP streams (iperf's client, to a
// socat sink at the peer) from sandboxes[i] (in place i, or nil where
// streams[i] is 0: idle) to its peer address, for at most d: Stop ends
// them before.
func (nd *Node) StartLoad(sandboxes []*Sandbox, streams []int, d time.Duration) (*NodeLoad, error) {
	return nd.startLoad(sandboxes, streams, 0, d)
}

// startLoad is StartLoad with each stream's socket buffer sndbuf bytes
// (iperf -w), or iperf's default where sndbuf is 0.
func (nd *Node) startLoad(sandboxes []*Sandbox, streams []int, sndbuf int, d time.Duration) (_ *NodeLoad, err error) {
	if len(sandboxes) != len(nd.Hosts) || len(streams) != len(nd.Hosts) {
		return nil, fmt.Errorf("%d sandboxes and %d loads on a node of %d", len(sandboxes), len(streams), len(nd.Hosts))
	}
	stopSink, err := nd.startSink()
	if err != nil {
		return nil, err
	}
	l := &NodeLoad{outs: make([]strings.Builder, len(nd.Hosts)), stop: stopSink}
	defer func() {
		if err != nil {
			l.Stop()
		}
	}()
	// The streams are killed by Stop: their time only bounds them should
	// a kill fail.
	secs := int(math.Ceil(d.Seconds())) + 2
	for i, n := range streams {
		if n == 0 {
			continue
		}
		if sandboxes[i] == nil {
			return nil, fmt.Errorf("load %d: %d streams and no sandbox", i+1, n)
		}
		args := []string{"iperf", "-c", nd.Hosts[i].PeerAddr, "-p", fmt.Sprint(sinkPort), "-P", fmt.Sprint(n), "-t", fmt.Sprint(secs)}
		if sndbuf > 0 {
			args = append(args, "-w", fmt.Sprint(sndbuf))
		}
		c, kill, err := sandboxes[i].execKillable(&l.outs[i], args...)
		if err != nil {
			return nil, err
		}
		l.clients, l.kills = append(l.clients, c), append(l.kills, kill)
	}
	return l, nil
}

// Said is what load i's iperf has printed so far.
func (l *NodeLoad) Said(i int) string {
	outMu.Lock()
	defer outMu.Unlock()
	return l.outs[i].String()
}

// Stop kills each iperf in its sandbox and the sink, which resets the
// streams (startSink), and waits for the iperfs to end, so that a next
// load on the same sandboxes starts from quiet.
func (l *NodeLoad) Stop() {
	for _, kill := range l.kills {
		kill()
	}
	l.stop()
	waitEnded(l.clients, 10*time.Second)
}

// Measure runs a load (StartLoad) and reads what the peer received for
// each address and what the uplink sent over o.Window after o.Warmup,
// counted from when every busy sandbox's streams reach the peer
// (NodeResult.Flowing), then stops it.
func (nd *Node) Measure(sandboxes []*Sandbox, streams []int, o measure.Options) (NodeResult, error) {
	var r NodeResult
	var pinged func() error
	if err := nd.waitQuiet(); err != nil {
		return r, err
	}
	if o.PingInterval > 0 {
		var err error
		if r.IdleRTT, err = nd.idleRTTs(streams); err != nil {
			return r, err
		}
	}
	before, err := nd.Counters()
	if err != nil {
		return r, err
	}
	load, err := nd.StartLoad(sandboxes, streams, flowingTimeout+o.Warmup+o.Window)
	if err != nil {
		return r, err
	}
	defer load.Stop()
	if r.Flowing, err = nd.waitFlowing(streams, before, load); err != nil {
		return r, err
	}
	cpu := func() []time.Duration {
		d := make([]time.Duration, len(sandboxes))
		for i, s := range sandboxes {
			if s != nil {
				d[i], _ = s.CPU()
			}
		}
		return d
	}
	time.Sleep(o.Warmup)
	if o.PingInterval > 0 {
		pinged = nd.pingDuring(streams, o, &r)
		defer func() { // on an error, the pings still end before Measure does
			if pinged != nil {
				pinged()
			}
		}()
	}
	cpu0 := cpu()
	c0, err := nd.Counters()
	if err != nil {
		return r, err
	}
	c1 := c0
	if o.Sample > 0 {
		// The window in samples: each read is the next's start.
		for k := range int(o.Window / o.Sample) {
			time.Sleep(time.Until(c0.At.Add(time.Duration(k+1) * o.Sample)))
			next, err := nd.Counters()
			if err != nil {
				return r, err
			}
			secs := next.At.Sub(c1.At).Seconds()
			bps := make([]float64, len(nd.Hosts))
			for i := range next.Peer {
				bps[i] = float64(next.Peer[i]-c1.Peer[i]) / secs
			}
			r.Samples = append(r.Samples, bps)
			c1 = next
		}
	} else {
		time.Sleep(o.Window)
		if c1, err = nd.Counters(); err != nil {
			return r, err
		}
	}
	cpu1 := cpu()
	r.CPU = make([]time.Duration, len(sandboxes))
	for i := range cpu1 {
		r.CPU[i] = cpu1[i] - cpu0[i]
	}
	r.Elapsed = c1.At.Sub(c0.At)
	secsIn := r.Elapsed.Seconds()
	r.UplinkBps = float64(c1.Uplink-c0.Uplink) / secsIn
	r.Bps = make([]float64, len(nd.Hosts))
	for i := range c0.Peer {
		r.Bps[i] = float64(c1.Peer[i]-c0.Peer[i]) / secsIn
	}
	if pinged != nil {
		err := pinged()
		pinged = nil
		if err != nil {
			return r, err
		}
	}
	// A busy sandbox's streams carry far more than a thousandth of the
	// uplink; below it (a SYN or two), they did not run.
	for i, n := range streams {
		if n > 0 && r.Bps[i] <= r.UplinkBps/1000 {
			return r, fmt.Errorf("next to nothing reached the peer from sandbox %d (%s): %.0f bytes/s; iperf in it said: %s", i+1, nd.Hosts[i].Addr, r.Bps[i], load.Said(i))
		}
	}
	return r, nil
}

// flowingBytes is what the peer must have received from a busy sandbox
// since its load started for its streams to be flowing: far more than
// handshakes and ARP, 50 ms at 10 Mbit/s.
const flowingBytes = 64 << 10

// flowingTimeout bounds waitFlowing.
const flowingTimeout = 10 * time.Second

// waitQuiet waits, for flowingTimeout at most, until the peer receives
// less than quietBytes from every place over 100 ms: a previous load's
// streams, their sink gone, can go on sending what their sockets held
// for a while after Stop, and would count as the next load flowing.
func (nd *Node) waitQuiet() error {
	prev, err := nd.Counters()
	if err != nil {
		return err
	}
	for start := prev.At; ; {
		time.Sleep(100 * time.Millisecond)
		c, err := nd.Counters()
		if err != nil {
			return err
		}
		busy := -1
		for i := range c.Peer {
			if c.Peer[i]-prev.Peer[i] >= quietBytes {
				busy = i
			}
		}
		if busy < 0 {
			return nil
		}
		if c.At.Sub(start) > flowingTimeout {
			return fmt.Errorf("the peer still receives from sandbox %d %v after the last load was stopped (%d bytes in 100 ms)", busy+1, flowingTimeout, c.Peer[busy]-prev.Peer[busy])
		}
		prev = c
	}
}

// quietBytes is what a place may send in 100 ms and be quiet: ARP and a
// ping or two, not a stream.
const quietBytes = 4 << 10

// waitFlowing polls the node's counters every 10 ms until the peer has
// received flowingBytes from every busy sandbox (streams[i] > 0) since
// before, and returns how long that took since before was read.
func (nd *Node) waitFlowing(streams []int, before NodeCounters, load *NodeLoad) (time.Duration, error) {
	for {
		c, err := nd.Counters()
		if err != nil {
			return 0, err
		}
		waiting := -1
		for i, n := range streams {
			if n > 0 && c.Peer[i]-before.Peer[i] < flowingBytes {
				waiting = i
				break
			}
		}
		if waiting < 0 {
			return c.At.Sub(before.At), nil
		}
		if c.At.Sub(before.At) > flowingTimeout {
			return 0, fmt.Errorf("sandbox %d's streams had not reached the peer %v after they were started (%d bytes); iperf in it said: %s", waiting+1, flowingTimeout, c.Peer[waiting]-before.Peer[waiting], load.Said(waiting))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// idleRTTs pings each busy sandbox (streams[i] > 0) 5 times from the
// peer and returns the medians (0 for an idle place).
func (nd *Node) idleRTTs(streams []int) ([]time.Duration, error) {
	out := make([]time.Duration, len(nd.Hosts))
	for i, n := range streams {
		if n > 0 {
			var err error
			if out[i], err = idleRTT(nd.NSP, nd.Hosts[i].Addr); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// pingDuring starts a ping from the peer to each busy sandbox every
// o.PingInterval for o.Window; the func it returns waits for them and
// fills r's RTTs and PingsSent.
func (nd *Node) pingDuring(streams []int, o measure.Options, r *NodeResult) func() error {
	r.RTTs, r.PingsSent = make([][]time.Duration, len(nd.Hosts)), make([]int, len(nd.Hosts))
	errs := make([]error, len(nd.Hosts))
	var wg sync.WaitGroup
	for i, n := range streams {
		if n == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.RTTs[i], r.PingsSent[i], errs[i] = ping(nd.NSP, nd.Hosts[i].Addr, int(o.Window/o.PingInterval), o.PingInterval)
		}()
	}
	return func() error {
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				return fmt.Errorf("pinging sandbox %d: %v", i+1, err)
			}
		}
		return nil
	}
}

// execKillable starts a program in the sandbox as Exec does, and returns
// a kill that kills it in the sandbox (runsc kill --pid), by the PID in
// the sandbox runsc exec writes to a file, and kills runsc exec: killing
// runsc exec alone leaves the program running in the sandbox.
func (s *Sandbox) execKillable(out *strings.Builder, args ...string) (*exec.Cmd, func(), error) {
	f, err := os.CreateTemp(s.dir, "exec-*.pid")
	if err != nil {
		return nil, nil, err
	}
	pidFile := f.Name()
	f.Close()
	os.Remove(pidFile) // runsc exec makes it
	c := exec.Command(s.runsc, append([]string{"--root", s.root, "exec", "--internal-pid-file", pidFile, s.id}, args...)...)
	if out != nil {
		c.Stdout, c.Stderr = &syncWriter{b: out}, &syncWriter{b: out}
	}
	c.WaitDelay = 2 * time.Second
	if err := c.Start(); err != nil {
		return nil, nil, err
	}
	s.lab.mu.Lock()
	s.lab.procs = append(s.lab.procs, c)
	s.lab.mu.Unlock()
	kill := func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				RunBounded(exec.Command(s.runsc, "--root", s.root, "kill", "--pid", strconv.Itoa(pid), s.id, "KILL"), 10*time.Second)
			}
		}
		c.Process.Kill()
	}
	return c, kill, nil
}

// startSink starts the peer's TCP sink, socat (a process a connection,
// discarding), and waits until it listens; stop kills it, with every
// process in the peer's namespace, which are its. Its sockets then close
// with data unread, and the peer's kernel resets their streams: a stream
// whose iperf was killed in its sandbox would otherwise go on sending
// what its socket holds, megabytes, into the next run. (iperf's own
// server, killed and started for each run, once did not listen within
// WaitListening's 5 s on a loaded machine, and kept for every run, now
// and then stopped taking connections.)
func (nd *Node) startSink() (stop func(), err error) {
	var out strings.Builder
	srv, err := nd.Start(nd.NSP, &out, "socat", "-u", fmt.Sprintf("TCP-LISTEN:%d,reuseaddr,fork", sinkPort), "OPEN:/dev/null")
	if err != nil {
		return nil, err
	}
	stop = func() {
		srv.Process.Kill()
		killAll(nd.NSP)
	}
	if err := WaitListening(nd.NSP, sinkPort); err != nil {
		stop()
		outMu.Lock()
		defer outMu.Unlock()
		return nil, fmt.Errorf("%v; socat said: %s", err, out.String())
	}
	return stop, nil
}

// waitEnded waits until every command in cmds has exited, for at most d
// in all, and kills those still running then.
func waitEnded(cmds []*exec.Cmd, d time.Duration) {
	done := make(chan struct{}, len(cmds))
	for _, c := range cmds {
		go func() {
			c.Wait()
			done <- struct{}{}
		}()
	}
	timeout := time.After(d)
	for left := len(cmds); left > 0; left-- {
		select {
		case <-done:
		case <-timeout:
			for _, c := range cmds {
				c.Process.Kill()
			}
			// Killed, each Wait returns within the command's WaitDelay.
			for ; left > 0; left-- {
				<-done
			}
			return
		}
	}
}
