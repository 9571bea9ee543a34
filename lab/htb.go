package lab

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
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

// KernelHTBCommands are the tc commands that put cfg on dev as Linux's
// sch_htb: the qdisc, its classes in order, and each rule as a u32 filter
// by destination (tc's defaults where cfg leaves a field 0, as ours fill
// them). Its rules' prefixes are moved to the kernel side (kernelSide).
// What sch_htb or u32 by destination cannot say is an error: a quota, a
// leaf qdisc, a leaf limit, a rule matching anything but an IPv4
// destination.
func KernelHTBCommands(dev string, cfg htb.Config) ([][]string, error) {
	handle := cfg.Handle
	if handle == 0 {
		handle = 1 << 16
	}
	major := fmt.Sprintf("%x:", handle>>16)
	q := []string{"tc", "qdisc", "replace", "dev", dev, "root", "handle", major, "htb"}
	if cfg.Default != 0 {
		q = append(q, "default", fmt.Sprintf("%x", cfg.Default&0xffff))
	}
	if cfg.R2Q != 0 {
		q = append(q, "r2q", fmt.Sprint(cfg.R2Q))
	}
	if cfg.DirectQLen != 0 {
		q = append(q, "direct_qlen", fmt.Sprint(cfg.DirectQLen))
	}
	if cfg.LeafLimit != 0 {
		return nil, fmt.Errorf("a leaf limit: the kernel's leaves take the device's tx_queue_len")
	}
	if len(cfg.Chains) != 0 {
		return nil, fmt.Errorf("filters on a class's chain: the kernel's side here is given the root chain's filters only")
	}
	cmds := [][]string{q}
	for _, c := range cfg.Classes {
		id := classify.ClassID(c.ID)
		switch {
		case c.Quota != nil:
			return nil, fmt.Errorf("class %s: Linux's htb has no quota", id)
		case c.Leaf != nil:
			return nil, fmt.Errorf("class %s: a leaf qdisc: graft the kernel's with tc qdisc add parent %s", id, id)
		}
		parent := major
		if c.Parent != 0 && c.Parent != handle {
			parent = classify.ClassID(c.Parent)
		}
		cmd := []string{"tc", "class", "add", "dev", dev, "parent", parent, "classid", id, "htb", "rate", fmt.Sprintf("%dbit", c.Rate*8)}
		if c.Ceil != 0 {
			cmd = append(cmd, "ceil", fmt.Sprintf("%dbit", c.Ceil*8))
		}
		for _, o := range []struct {
			name string
			v    int64
		}{{"burst", int64(c.Burst)}, {"cburst", int64(c.CBurst)}, {"quantum", int64(c.Quantum)}, {"overhead", int64(c.Overhead)}, {"mpu", int64(c.MPU)}} {
			if o.v != 0 {
				cmd = append(cmd, o.name, fmt.Sprint(o.v))
			}
		}
		cmds = append(cmds, append(cmd, "prio", fmt.Sprint(c.Prio)))
	}
	for i, r := range cfg.Rules {
		dstOnly := classify.Rule{Dst: r.Dst, Class: r.Class}
		if r != dstOnly || !r.Dst.IsValid() || !r.Dst.Addr().Is4() {
			return nil, fmt.Errorf("filter %d (%s): only a rule by IPv4 destination has a u32 twin here", i+1, r)
		}
		dst := netip.PrefixFrom(kernelSide(r.Dst.Addr()), r.Dst.Bits()).Masked()
		cmds = append(cmds, []string{"tc", "filter", "add", "dev", dev, "parent", major, "protocol", "ip", "prio", fmt.Sprint(i + 1),
			"u32", "match", "ip", "dst", dst.String(), "flowid", classify.ClassID(r.Class)})
	}
	return cmds, nil
}

// KernelHTB puts cfg on dev in ns as Linux's sch_htb (KernelHTBCommands)
// and returns what tc warned ("quantum of class ... is big").
func KernelHTB(ns, dev string, cfg htb.Config) (warnings []string, err error) {
	cmds, err := KernelHTBCommands(dev, cfg)
	if err != nil {
		return nil, err
	}
	for _, c := range cmds {
		out, err := Run(ns, c...)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if line != "" {
				warnings = append(warnings, line)
			}
		}
	}
	return warnings, nil
}

// KernelClassBytes reads `tc -s class show dev dev` in ns: every class's
// Sent bytes.
func KernelClassBytes(ns, dev string) (map[uint32]uint64, error) {
	out, err := Run(ns, "tc", "-s", "class", "show", "dev", dev)
	if err != nil {
		return nil, err
	}
	return parseClassBytes(out)
}

// parseClassBytes reads each class's Sent bytes from `tc -s class show`'s
// output: a "class htb 1:10 ..." line, then " Sent N bytes M pkt ...".
func parseClassBytes(out string) (map[uint32]uint64, error) {
	bytes := map[uint32]uint64{}
	var cur uint32
	have := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "class":
			id, err := parseClassID(f[2])
			if err != nil {
				return nil, fmt.Errorf("tc -s class show: %q: %v", line, err)
			}
			cur, have = id, true
		case len(f) >= 3 && f[0] == "Sent" && f[2] == "bytes" && have:
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("tc -s class show: %q: %v", line, err)
			}
			bytes[cur] = n
			have = false
		}
	}
	if len(bytes) == 0 {
		return nil, fmt.Errorf("tc -s class show: no class in %q", out)
	}
	return bytes, nil
}

// parseClassID reads a classid as tc prints it: hex major:minor.
func parseClassID(s string) (uint32, error) {
	maj, min, ok := strings.Cut(s, ":")
	a, err1 := strconv.ParseUint(maj, 16, 16)
	b, err2 := strconv.ParseUint(min, 16, 16)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("classid %q: want hex major:minor", s)
	}
	return uint32(a)<<16 | uint32(b), nil
}

// WithLeaves is the htb cfg with a leaf qdisc from leaf on each of its
// leaf classes (htb.ClassConfig.Leaf, which runsc's flags cannot set yet):
// a MakeQDisc. leaf gets the link's MTU with its header, as fq_codel's
// NewQueue takes it.
func WithLeaves(cfg htb.Config, leaf func(mtu uint32) (qdisc.Queue, error)) MakeQDisc {
	return func(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error) {
		c := cfg
		c.Classes = append([]htb.ClassConfig(nil), cfg.Classes...)
		inner := map[uint32]bool{}
		for _, cl := range c.Classes {
			inner[cl.Parent] = true
		}
		for i := range c.Classes {
			if inner[c.Classes[i].ID] {
				continue
			}
			q, err := leaf(lower.MTU() + uint32(lower.MaxHeaderLength()))
			if err != nil {
				return nil, err
			}
			c.Classes[i].Leaf = q
		}
		return htb.New(lower, clock, c)
	}
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

// MeasureNetstackHTB runs the netstack with the htb qdisc mk builds,
// sends each load's streams to its destination, and reads each class's
// counter (htb's Classes) over o.Window after o.Warmup, the peer's
// goodput per class, and, with o.PingInterval, pings from each class's
// peer address.
func (l *Lab) MeasureNetstackHTB(mk MakeQDisc, loads []ClassLoad, o measure.Options) (HTBResult, error) {
	return l.measureNetstackLoads(mk, loads, o, func(q stack.QueueingDiscipline) (func() (map[uint32]uint64, error), func() string, error) {
		d, ok := q.(*htb.Discipline)
		if !ok {
			return nil, nil, fmt.Errorf("the qdisc is %T, not htb", q)
		}
		counters := func() (map[uint32]uint64, error) {
			m := map[uint32]uint64{}
			for _, c := range d.Classes() {
				m[c.ID] = c.Bytes
			}
			return m, nil
		}
		return counters, d.TCStats, nil
	})
}

// classReader returns, for the qdisc under measurement, its per-class byte
// counters and its tc -s statistics.
type classReader func(q stack.QueueingDiscipline) (counters func() (map[uint32]uint64, error), tc func() string, err error)

// measureNetstackLoads is MeasureNetstackHTB for any qdisc whose classes
// (if any) classes reads.
func (l *Lab) measureNetstackLoads(mk MakeQDisc, loads []ClassLoad, o measure.Options, classes classReader) (HTBResult, error) {
	var r HTBResult
	if err := checkLoads(loads); err != nil {
		return r, err
	}
	n, closeAll, err := l.startSinkAndNetstack(mk, nil)
	if err != nil {
		return r, err
	}
	defer closeAll()
	counters, tc, err := classes(n.QDisc)
	if err != nil {
		return r, err
	}
	if err := l.AddClusterPeer(n); err != nil {
		return r, err
	}
	peers := make([]string, len(loads))
	for i, ld := range loads {
		peers[i] = ld.Dst
	}
	idle, err := idleRTTs(l.NSP, peers, NetstackAddr)
	if err != nil {
		return r, err
	}
	stop, err := startStreams(n, loads)
	if err != nil {
		return r, err
	}
	defer stop()
	err = l.htbWindow(loads, peers, NetstackAddr, counters, wireBytes(l.NSP, l.VethP1), o, &r)
	for i := range r.Classes {
		r.Classes[i].IdleRTT = idle[i]
	}
	r.TC = tc()
	return r, err
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

// startStreams dials each load's streams from the netstack to the peer's
// sink and sends until stop.
func startStreams(n *Netstack, loads []ClassLoad) (stop func(), err error) {
	var done atomic.Bool
	var wg sync.WaitGroup
	var conns []interface{ SetWriteDeadline(time.Time) error }
	stop = func() {
		done.Store(true)
		for _, c := range conns {
			c.SetWriteDeadline(time.Now())
		}
		wg.Wait()
	}
	for _, ld := range loads {
		for i := 0; i < ld.Streams; i++ {
			conn, err := n.Dial(ld.Dst, sinkPort)
			if err != nil {
				stop()
				return nil, fmt.Errorf("stream %d to %s: %v", i, ld.Dst, err)
			}
			conns = append(conns, conn)
			s := NewSender(uint64(len(conns)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.Run(conn, 0, &done)
			}()
		}
	}
	return stop, nil
}

// MeasureKernelHTB puts cfg on the kernel sender's veth as Linux's sch_htb
// (KernelHTB), runs iperf with each load's streams to its destination's
// kernel side twin, and reads each class's counter (tc -s class show)
// over o.Window after o.Warmup, the peer's goodput per class and, with
// o.PingInterval, pings from each class's peer address. It returns tc's
// warnings too.
func (l *Lab) MeasureKernelHTB(cfg htb.Config, loads []ClassLoad, o measure.Options) (HTBResult, []string, error) {
	var warnings []string
	install := func() (err error) {
		warnings, err = KernelHTB(l.NSK, l.VethK, cfg)
		return err
	}
	counters := func() (map[uint32]uint64, error) { return KernelClassBytes(l.NSK, l.VethK) }
	r, err := l.measureKernelLoads(install, counters, "class", loads, o)
	return r, warnings, err
}

// MeasureKernelTBF is MeasureKernelHTB with Linux's sch_tbf at rate and
// burst (bytes/s, bytes) and latency on the kernel sender's veth in place
// of classes: one FIFO for every load, so its loads' Bytes are 0 and
// their goodput tells them apart.
func (l *Lab) MeasureKernelTBF(rate, burst uint64, latency time.Duration, loads []ClassLoad, o measure.Options) (HTBResult, error) {
	install := func() error { return Tbf(l.NSK, l.VethK, rate, burst, latency) }
	none := func() (map[uint32]uint64, error) { return nil, nil }
	return l.measureKernelLoads(install, none, "qdisc", loads, o)
}

// measureKernelLoads runs loads from the kernel sender with the root qdisc
// install puts on its veth (removed after), as MeasureKernelHTB says,
// reading counters for the loads' classes, and at the end `tc -s show`
// of what (class or qdisc) into the result's TC.
func (l *Lab) measureKernelLoads(install func() error, counters func() (map[uint32]uint64, error), what string, loads []ClassLoad, o measure.Options) (HTBResult, error) {
	var r HTBResult
	if err := checkLoads(loads); err != nil {
		return r, err
	}
	peers := make([]string, len(loads))
	for i, ld := range loads {
		peers[i] = kernelSide(netip.MustParseAddr(ld.Dst)).String() // checked
	}
	if err := l.AddClusterPeer(nil); err != nil {
		return r, err
	}
	if err := install(); err != nil {
		return r, err
	}
	defer Run(l.NSK, "tc", "qdisc", "del", "dev", l.VethK, "root")
	stop, err := l.startIperfServer()
	if err != nil {
		return r, err
	}
	defer stop()
	idle, err := idleRTTs(l.NSP, peers, KernelAddr)
	if err != nil {
		return r, err
	}
	for i, ld := range loads {
		o := o
		o.Streams = ld.Streams
		cli, err := l.Start(l.NSK, nil, iperfArgs(peers[i], o)...)
		if err != nil {
			return r, err
		}
		defer cli.Process.Kill()
	}
	err = l.htbWindow(loads, peers, KernelAddr, counters, wireBytes(l.NSP, l.VethP2), o, &r)
	for i := range r.Classes {
		r.Classes[i].IdleRTT = idle[i]
	}
	r.TC, _ = Run(l.NSK, "tc", "-s", what, "show", "dev", l.VethK)
	return r, err
}

// idleRTTs is the median RTT of a few pings to sender from each of the
// peer's addresses, the path idle.
func idleRTTs(ns string, peers []string, sender string) ([]time.Duration, error) {
	idle := make([]time.Duration, len(peers))
	for i, p := range peers {
		rtts, _, err := pingFrom(ns, p, sender, 5, 50*time.Millisecond)
		if err != nil {
			return nil, err
		}
		if len(rtts) == 0 {
			return nil, fmt.Errorf("no answer to ping -I %s %s", p, sender)
		}
		idle[i] = measure.Quantile(rtts, 0.5)
	}
	return idle, nil
}

// htbWindow waits o.Warmup, then reads counters, each load's goodput at
// the peer (at its address peers[i]) and wire, the peer's received bytes,
// over o.Window, pinging sender from each load's peer address meanwhile.
func (l *Lab) htbWindow(loads []ClassLoad, peers []string, sender string, counters func() (map[uint32]uint64, error), wire func() (uint64, error), o measure.Options, r *HTBResult) error {
	time.Sleep(o.Warmup)
	r.Classes = make([]ClassResult, len(loads))
	var wg sync.WaitGroup
	perr := make([]error, len(loads))
	if o.PingInterval > 0 {
		for i := range loads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := &r.Classes[i]
				c.RTTs, c.PingsSent, perr[i] = pingFrom(l.NSP, peers[i], sender, int(o.Window/o.PingInterval), o.PingInterval)
			}()
		}
	}
	defer wg.Wait()
	// The counters are read first, at a time halfway through their
	// reading; the peer's wire and goodput after them, a few ms later, on
	// both ends of the window alike.
	read := func() (map[uint32]uint64, []uint64, uint64, time.Time, error) {
		t0 := time.Now()
		b, err := counters()
		t := t0.Add(time.Since(t0) / 2)
		if err != nil {
			return nil, nil, 0, t, err
		}
		w, err := wire()
		if err != nil {
			return nil, nil, 0, t, err
		}
		g := make([]uint64, len(loads))
		for i, p := range peers {
			if g[i], err = l.peerReceived(p); err != nil {
				return nil, nil, 0, t, err
			}
		}
		return b, g, w, t, nil
	}
	b0, g0, w0, t0, err := read()
	if err != nil {
		return err
	}
	time.Sleep(o.Window)
	b1, g1, w1, t1, err := read()
	if err != nil {
		return err
	}
	r.Elapsed = t1.Sub(t0)
	secs := r.Elapsed.Seconds()
	r.PeerBps = float64(w1-w0) / secs
	for i, ld := range loads {
		c := &r.Classes[i]
		c.Class = ld.Class
		c.Bytes = b1[ld.Class] - b0[ld.Class]
		c.Bps = float64(c.Bytes) / secs
		c.Goodput = float64(g1[i]-g0[i]) / secs
	}
	wg.Wait()
	for _, err := range perr {
		if err != nil {
			return err
		}
	}
	return nil
}

// pingFrom pings to from ns with source address from, count times,
// interval apart, and returns the answered RTTs and how many were sent.
func pingFrom(ns, from, to string, count int, interval time.Duration) ([]time.Duration, int, error) {
	out, _ := Run(ns, "ping", "-n", "-I", from, "-c", fmt.Sprint(count), "-i", fmt.Sprintf("%.3f", interval.Seconds()), "-W", "2", to)
	var rtts []time.Duration
	for _, m := range pingLine.FindAllStringSubmatch(out, -1) {
		if ms, err := strconv.ParseFloat(m[1], 64); err == nil {
			rtts = append(rtts, time.Duration(ms*float64(time.Millisecond)))
		}
	}
	m := pingSent.FindStringSubmatch(out)
	if m == nil {
		return nil, 0, fmt.Errorf("ping -I %s %s: no summary: %s", from, to, out)
	}
	sent, _ := strconv.Atoi(m[1])
	return rtts, sent, nil
}

// peerReceived sums what the peer's TCP has received so far on its open
// connections at local address addr (ss's bytes_received).
func (l *Lab) peerReceived(addr string) (uint64, error) {
	out, err := Run(l.NSP, "ss", "-tinH", "src", addr)
	if err != nil {
		return 0, err
	}
	return sumField(out, "bytes_received")
}

// sumField sums the values of ss's name:value fields called name.
func sumField(out, name string) (uint64, error) {
	var sum uint64
	for _, f := range strings.Fields(out) {
		k, v, ok := strings.Cut(f, ":")
		if !ok || k != name {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("ss: %s: %v", f, err)
		}
		sum += n
	}
	return sum, nil
}

// QuotaCutover is where a class's quota fell, as its counters said.
type QuotaCutover struct {
	// Budget is the quota's bytes; Used the class's QuotaUsed and Bytes
	// its Sent counter at the first poll that saw the quota spent, After
	// how long after the streams started that was; Unspent its QuotaUsed
	// at the poll before, Gap the time between the two polls. The quota
	// fell between Unspent and Used.
	Budget, Used, Bytes, Unspent uint64
	After, Gap                   time.Duration
	// Before is the class's rate over the second before the cut-over,
	// Fallen its rate over o.Window after it (from o.Warmup on), in
	// bytes per second.
	Before, Fallen float64
}

// MeasureQuotaCutover runs the netstack with the htb qdisc mk builds and
// load's streams into load.Class, which has a quota; it polls the class's
// counters every poll until the quota is spent (at most timeout), then
// measures the rate it fell to over o.Window after o.Warmup.
func (l *Lab) MeasureQuotaCutover(mk MakeQDisc, load ClassLoad, o measure.Options, poll, timeout time.Duration) (QuotaCutover, error) {
	var q QuotaCutover
	if err := checkLoads([]ClassLoad{load}); err != nil {
		return q, err
	}
	srv, err := l.Start(l.NSP, nil, "socat", "-u", fmt.Sprintf("TCP-LISTEN:%d,reuseaddr,fork", sinkPort), "OPEN:/dev/null")
	if err != nil {
		return q, err
	}
	defer srv.Process.Kill()
	if err := WaitListening(l.NSP, sinkPort); err != nil {
		return q, err
	}
	n, err := l.StartNetstack(mk)
	if err != nil {
		return q, err
	}
	defer n.Close()
	d, ok := n.QDisc.(*htb.Discipline)
	if !ok {
		return q, fmt.Errorf("the qdisc is %T, not htb", n.QDisc)
	}
	if err := l.AddClusterPeer(n); err != nil {
		return q, err
	}
	class := func() (htb.ClassStats, error) {
		for _, c := range d.Classes() {
			if c.ID == load.Class {
				return c, nil
			}
		}
		return htb.ClassStats{}, fmt.Errorf("no class %s", classify.ClassID(load.Class))
	}
	c, err := class()
	if err != nil || c.Quota == nil {
		return q, fmt.Errorf("class %s has no quota (%v)", classify.ClassID(load.Class), err)
	}
	q.Budget = c.Quota.Bytes
	start := time.Now()
	stop, err := startStreams(n, []ClassLoad{load})
	if err != nil {
		return q, err
	}
	defer stop()
	// The samples of the last second give the rate before the cut-over.
	type sample struct {
		t     time.Time
		bytes uint64
	}
	var ring []sample // the last second's, oldest first
	for {
		c, err := class()
		if err != nil {
			return q, err
		}
		now := time.Now()
		for len(ring) > 1 && now.Sub(ring[1].t) >= time.Second {
			ring = ring[1:]
		}
		if c.QuotaSpent {
			q.Used, q.Bytes, q.After = c.QuotaUsed, c.Bytes, now.Sub(start)
			if len(ring) > 0 {
				q.Gap = now.Sub(ring[len(ring)-1].t)
			}
			if len(ring) > 0 && now.Sub(ring[0].t) > 0 {
				q.Before = float64(c.Bytes-ring[0].bytes) / now.Sub(ring[0].t).Seconds()
			}
			break
		}
		ring = append(ring, sample{now, c.Bytes})
		q.Unspent = c.QuotaUsed
		if now.Sub(start) > timeout {
			return q, fmt.Errorf("class %s's quota of %d bytes not spent after %v: used %d", classify.ClassID(load.Class), q.Budget, timeout, c.QuotaUsed)
		}
		time.Sleep(poll)
	}
	time.Sleep(o.Warmup)
	c0, err := class()
	if err != nil {
		return q, err
	}
	t0 := time.Now()
	time.Sleep(o.Window)
	c1, err := class()
	if err != nil {
		return q, err
	}
	q.Fallen = float64(c1.Bytes-c0.Bytes) / time.Since(t0).Seconds()
	return q, nil
}

// The classes of the side-by-side table (ANCHORS' "Linux HTB on a veth"):
// under a 100 Mbit/s root 1:1, the cluster class 1:10, which a filter by
// destination (10.77.1.0/24, the kernel's 10.78.1.0/24) fills, and the
// internet class 1:20, the default.
const (
	ClusterClass  = 1<<16 | 0x10
	InternetClass = 1<<16 | 0x20
)

// HTBSetting is one configuration of the table: the two classes' words
// (htb.ParseClass's, after "classid") and what the model of sch_htb
// predicts each sends, in bytes per second, alone and both busy.
type HTBSetting struct {
	Label             string
	Cluster, Internet string
	// ClusterAlone and InternetAlone are each class's share alone (its
	// ceil); Both the two shares with both busy: each its rate, the
	// excess to the lower prio up to its ceil, then to the other.
	ClusterAlone, InternetAlone uint64
	Both                        [2]uint64
}

const mbit = 125_000

// HTBSettings are ANCHORS' three configurations.
var HTBSettings = []HTBSetting{
	{"90/10 ceil 100 prio 0/1", "rate 90mbit ceil 100mbit prio 0", "rate 10mbit ceil 100mbit prio 1", 100 * mbit, 100 * mbit, [2]uint64{90 * mbit, 10 * mbit}},
	{"20/20 ceil 100 prio 0/1", "rate 20mbit ceil 100mbit prio 0", "rate 20mbit ceil 100mbit prio 1", 100 * mbit, 100 * mbit, [2]uint64{80 * mbit, 20 * mbit}},
	{"90 ceil 100 / 10 ceil 10", "rate 90mbit ceil 100mbit prio 0", "rate 10mbit ceil 10mbit prio 1", 100 * mbit, 10 * mbit, [2]uint64{90 * mbit, 10 * mbit}},
}

// Script is the setting's --qdisc-htb (internetExtra appended to the
// internet class's words: a quota).
func (s HTBSetting) Script(internetExtra string) string {
	return "qdisc default 20; class root classid 1:1 rate 100mbit; " +
		"class parent 1:1 classid 1:10 " + s.Cluster + "; " +
		"class parent 1:1 classid 1:20 " + strings.TrimSpace(s.Internet+" "+internetExtra) + "; " +
		"filter dst 10.77.1.0/24 classid 1:10"
}

// Flags are runsc's flags for the setting.
func (s HTBSetting) Flags(internetExtra string) []string {
	return []string{"--qdisc=htb", "--qdisc-htb=" + s.Script(internetExtra)}
}

// Loads are the table's loads: streams TCP streams into the cluster
// class, the internet class, or both.
func Loads(cluster, internet bool, streams int) []ClassLoad {
	var l []ClassLoad
	if cluster {
		l = append(l, ClassLoad{ClusterClass, PeerClusterAddr, streams})
	}
	if internet {
		l = append(l, ClassLoad{InternetClass, PeerAddr, streams})
	}
	return l
}

// StartHTBSandbox starts a sandbox (StartSandbox) after giving the
// netstack's namespace (NSN) an on-link route to the peer's cluster
// addresses on vethN, which the sandbox takes with the namespace's address
// as it starts (runsc copies the namespace's routes and removes them: each
// sandbox needs the route anew).
func (l *Lab) StartHTBSandbox(o SandboxOptions) (*Sandbox, error) {
	if _, err := Run(l.NSN, "ip", "route", "replace", "10.77.1.0/24", "dev", l.VethN); err != nil {
		return nil, err
	}
	return l.StartSandbox(o)
}

// MeasureSandboxHTB runs iperf in sandbox s (started with --qdisc=htb by
// StartHTBSandbox) with each load's streams to the peer's address of its
// class, and reads each class's counter as `runsc qdisc show` prints it
// over o.Window after o.Warmup, the peer's goodput per class and, with
// o.PingInterval, pings from each class's peer address.
func (l *Lab) MeasureSandboxHTB(s *Sandbox, loads []ClassLoad, o measure.Options) (HTBResult, error) {
	var r HTBResult
	if err := checkLoads(loads); err != nil {
		return r, err
	}
	if err := l.AddClusterPeer(nil); err != nil {
		return r, err
	}
	peers := make([]string, len(loads))
	for i, ld := range loads {
		peers[i] = ld.Dst
	}
	stop, err := l.startIperfServer()
	if err != nil {
		return r, err
	}
	defer stop()
	idle, err := idleRTTs(l.NSP, peers, NetstackAddr)
	if err != nil {
		return r, err
	}
	var cout strings.Builder
	for _, ld := range loads {
		o := o
		o.Streams = ld.Streams
		cli, err := s.Exec(&cout, iperfArgs(ld.Dst, o)...)
		if err != nil {
			return r, err
		}
		defer cli.Process.Kill()
	}
	counters := func() (map[uint32]uint64, error) {
		out, err := s.QDisc("show")
		if err != nil {
			return nil, err
		}
		return parseClassBytes(out)
	}
	err = l.htbWindow(loads, peers, NetstackAddr, counters, wireBytes(l.NSP, l.VethP1), o, &r)
	for i := range r.Classes {
		r.Classes[i].IdleRTT = idle[i]
	}
	r.TC, _ = s.QDisc("show")
	if err == nil && r.PeerBps == 0 {
		err = fmt.Errorf("nothing reached the peer; iperf in the sandbox said: %s", cout.String())
	}
	return r, err
}
