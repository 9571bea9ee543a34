// Package benchmarks measures qdiscs the way a sandbox uses them: two gVisor
// netstacks joined by an in-memory link, the qdisc under test on the
// sender's NIC, N bulk TCP streams and a small request/response probe
// through it. It reports goodput, the bytes the qdisc handed the link per
// second against the configured rate, probe RTT idle and under load, drops,
// the qdisc's statistics and process CPU per GB. Every stream's content is
// checked byte by byte at the receiver.
//
// The link is gVisor's pipe behind Ethernet framing, so a full-size packet
// is 1514 bytes as on a veth, and the bytes counted under the qdisc are L2
// bytes, as a peer's rx_bytes would count them.
//
// With a qdisc, packets reach the receiving stack on the qdisc's dispatcher
// goroutine, in batches; without one, on the sender's goroutine. The
// receiver dominates CPU, so ratios against "none" at 1-2 streams measure
// that difference as much as the qdisc: compare qdiscs with each other.
package benchmarks

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/link/pipe"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// Options shape one run.
type Options struct {
	// Streams is the number of bulk TCP streams (at least 1).
	Streams int
	// Warmup runs before measuring; Duration is measured.
	Warmup, Duration time.Duration
	// Pace, if not 0, is the total bytes/s the streams offer, split evenly;
	// 0 sends as fast as TCP allows.
	Pace uint64
	// Probe is the pause between RTT probes (default 10 ms).
	Probe time.Duration
	// Sample is the period of the timeline (default 100 ms).
	Sample time.Duration
	// Progress, if set, is called once a second with the last second.
	Progress func(Progress)
	// Sparse adds a ping-like UDP echo probe (see sparse.go) and counts
	// each stream's goodput, for the bufferbloat suite.
	Sparse bool
}

// Progress is one second of a run, for a live line.
type Progress struct {
	Elapsed time.Duration
	WireBps float64
	RTT     time.Duration // median probe RTT in the second (0: none)
	Drops   uint64        // so far
	Warmup  bool
}

// Point is one timeline sample.
type Point struct {
	At      time.Duration // since the streams started
	WireBps float64
}

// Result is what one run measured over its Duration.
type Result struct {
	Candidate  Candidate
	Streams    int
	Pace       uint64
	Elapsed    time.Duration
	WireBps    float64 // bytes the qdisc handed the link, per second
	GoodputBps float64 // stream bytes received, per second
	RTTIdle    time.Duration
	RTTP50     time.Duration
	RTTP99     time.Duration
	RTTMax     time.Duration
	RTTSamples int
	// Drops counts packets the qdisc refused or dropped in the window
	// (the NIC's count of ErrNoBufferSpace for qdiscs without Stats).
	Drops uint64
	// Describe is the qdisc's own description ("tbf rate 100Mbit ..."),
	// when it has one.
	Describe string
	// Stats is the qdisc's own statistics at the end, when it has them,
	// and TCStats their `tc -s` text (with fq_codel's own counters).
	Stats    qdisc.Stats
	HasStats bool
	TCStats  string
	// Lateness is how late the qdisc's timer wake-ups ran, over the whole
	// run, when it records that (netqdisc's tbf).
	Lateness    qdisc.HistogramSnapshot
	HasLateness bool
	// Wakeups is how many times the qdisc's timer fired in the measured
	// window, when it counts that (netqdisc's tbf).
	Wakeups  uint64
	CPU      time.Duration // process CPU time in the window
	Timeline []Point
	Received uint64 // stream bytes received and checked, in all
	// With Options.Sparse: the UDP probe's RTT over the window, how many
	// echoes it sent and lost, and each bulk stream's goodput in bytes/s.
	UDPRTTP50 time.Duration
	UDPRTTP99 time.Duration
	UDPSent   int
	UDPLost   int
	StreamBps []float64
	// ProbeRTTs are the TCP probe's samples over the whole run, in time
	// order (for a chart of RTT over time).
	ProbeRTTs []RTTPoint
	// ECNMarks is the packets fq_codel marked CE instead of dropping, over
	// the whole run (netqdisc's fq_codel, alone or as a tbf's child).
	ECNMarks uint64
}

// RTTPoint is one probe sample: when, since the streams started, and its
// RTT.
type RTTPoint struct {
	At, RTT time.Duration
}

// Ratio is WireBps over the configured rate (0 without one).
func (r Result) Ratio() float64 {
	if r.Candidate.Rate == 0 {
		return 0
	}
	return r.WireBps / float64(r.Candidate.Rate)
}

// CPUSecPerGB is process CPU seconds per 10^9 bytes on the wire.
func (r Result) CPUSecPerGB() float64 {
	wire := r.WireBps * r.Elapsed.Seconds()
	if wire == 0 {
		return 0
	}
	return r.CPU.Seconds() / (wire / 1e9)
}

// CPUPerPacket is process CPU time per full-size (1514-byte) packet on the
// wire.
func (r Result) CPUPerPacket() time.Duration {
	return time.Duration(r.CPUSecPerGB() * 1514)
}

// CPUPercent is process CPU time over the window, in percent of one core.
func (r Result) CPUPercent() float64 { return 100 * r.CPU.Seconds() / r.Elapsed.Seconds() }

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

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rtts collects probe samples with their times.
type rtts struct {
	mu sync.Mutex
	// +checklocks:mu
	samples []sample
}

type sample struct {
	at  time.Time
	rtt time.Duration
}

func (r *rtts) add(at time.Time, d time.Duration) {
	r.mu.Lock()
	r.samples = append(r.samples, sample{at, d})
	r.mu.Unlock()
}

// between returns the sorted RTTs sampled in [from, to).
// since returns the samples taken from start on, in time order, timed
// from start.
func (r *rtts) since(start time.Time) []RTTPoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []RTTPoint
	for _, s := range r.samples {
		if !s.at.Before(start) {
			out = append(out, RTTPoint{At: s.at.Sub(start), RTT: s.rtt})
		}
	}
	return out
}

func (r *rtts) between(from, to time.Time) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var d []time.Duration
	for _, s := range r.samples {
		if !s.at.Before(from) && s.at.Before(to) {
			d = append(d, s.rtt)
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d
}

// quantile of sorted durations (0 when empty).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(q * float64(len(d)-1))
	return d[i]
}

// Run measures candidate c under o: it sets the two stacks up, measures,
// and tears everything down, on every path.
func Run(c Candidate, o Options) (Result, error) {
	o.Streams = max(o.Streams, 1)
	if o.Probe == 0 {
		o.Probe = 10 * time.Millisecond
	}
	if o.Sample == 0 {
		o.Sample = 100 * time.Millisecond
	}
	h := &harness{c: c, o: o, streamBytes: make([]atomic.Uint64, o.Streams+1)}
	defer h.tearDown()
	if err := h.setUp(); err != nil {
		return Result{Candidate: c, Streams: o.Streams, Pace: o.Pace}, err
	}
	res := h.measure()
	h.tearDown() // stops the receivers, whose count and checks end here
	res.Received = h.received.Load()
	if p := h.contentErr.Load(); p != nil {
		return res, fmt.Errorf("%s: stream content: %w", c.Name(), *p)
	}
	return res, nil
}

// harness is one run: a sender stack A with the qdisc under test, a
// receiver stack B, the bulk streams, the RTT probe and the goroutines
// that serve them.
type harness struct {
	c Candidate
	o Options

	// One field a line: checklocks maps annotations to fields by their
	// declarations' order.
	sa   *stack.Stack
	sb   *stack.Stack
	wire *tap
	back *valve
	q    stack.QueueingDiscipline
	// attached says a NIC owns q (and closes it with its stack).
	attached bool

	probe net.Conn
	rt    rtts
	// The UDP probe's answered echoes (urt) and every echo whose fate is
	// known (udpSent: its RTT, 0 when lost), and the bytes each stream
	// delivered (index: the stream's id).
	urt         rtts
	udpSent     rtts
	streamBytes []atomic.Uint64
	idleRTT     time.Duration
	start       time.Time
	received    atomic.Uint64
	// contentErr is the first stream corruption a receiver found.
	contentErr atomic.Pointer[error]

	stopping atomic.Bool
	wg       sync.WaitGroup
	closeMu  sync.Mutex
	// +checklocks:closeMu
	closers []io.Closer
	// +checklocks:closeMu
	tornDown bool
}

// setUpFault, when set (by tests), is called after each set-up step and
// fails it by returning an error.
var setUpFault func(step string) error

// setUp builds the stacks and the qdisc, then starts the receivers and the
// echo server on B, the probe and the bulk senders on A. On error, what
// it started is left for tearDown.
func (h *harness) setUp() error {
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"stacks", h.setUpStacks},
		{"servers", h.startServers},
		{"probe", h.startProbe},
		{"udp probe", h.startSparse},
		{"senders", h.startSenders},
	} {
		if err := step.run(); err != nil {
			return err
		}
		if setUpFault != nil {
			if err := setUpFault(step.name); err != nil {
				return err
			}
		}
	}
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

// track registers what tearDown must close; after tearDown it closes c at
// once.
func (h *harness) track(c io.Closer) {
	h.closeMu.Lock()
	defer h.closeMu.Unlock()
	if h.tornDown {
		c.Close()
		return
	}
	h.closers = append(h.closers, c)
}

// startServers listens on B: bulk receivers that check every byte, and an
// echo server for the probe.
func (h *harness) startServers() error {
	bulkL, err := gonet.ListenTCP(h.sb, tcpip.FullAddress{NIC: nicID, Addr: addrB, Port: bulkPort}, ipv4.ProtocolNumber)
	if err != nil {
		return err
	}
	h.track(bulkL)
	probeL, err := gonet.ListenTCP(h.sb, tcpip.FullAddress{NIC: nicID, Addr: addrB, Port: probePort}, ipv4.ProtocolNumber)
	if err != nil {
		return err
	}
	h.track(probeL)
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		for {
			conn, err := bulkL.Accept()
			if err != nil {
				return
			}
			h.track(conn)
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				if err := receive(conn, &h.received, h.streamBytes); err != nil && !h.stopping.Load() {
					h.contentErr.CompareAndSwap(nil, &err)
				}
			}()
		}
	}()
	go func() {
		defer h.wg.Done()
		conn, err := probeL.Accept()
		if err != nil {
			return
		}
		h.track(conn)
		buf := make([]byte, probeSize)
		for {
			if _, err := io.ReadFull(conn, buf); err != nil {
				return
			}
			if _, err := conn.Write(buf); err != nil {
				return
			}
		}
	}()
	return nil
}

// ping sends one probe and waits for its echo.
func (h *harness) ping() (time.Duration, error) {
	buf := make([]byte, probeSize)
	t0 := time.Now()
	if _, err := h.probe.Write(buf); err != nil {
		return 0, err
	}
	if _, err := io.ReadFull(h.probe, buf); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// startProbe connects the probe, measures the idle RTT, then probes every
// o.Probe until tearDown.
func (h *harness) startProbe() error {
	probe, err := gonet.DialTCP(h.sa, tcpip.FullAddress{NIC: nicID, Addr: addrB, Port: probePort}, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("probe: %v", err)
	}
	h.track(probe)
	h.probe = probe
	var idle []time.Duration
	for i := 0; i < 20; i++ {
		d, err := h.ping()
		if err != nil {
			return fmt.Errorf("probe: %v", err)
		}
		idle = append(idle, d)
		time.Sleep(h.o.Probe / 2)
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i] < idle[j] })
	h.idleRTT = quantile(idle, 0.5)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for !h.stopping.Load() {
			d, err := h.ping()
			if err != nil {
				return
			}
			h.rt.add(time.Now(), d)
			time.Sleep(h.o.Probe)
		}
	}()
	return nil
}

// startSenders dials the bulk streams from A, each writing its content
// until tearDown.
func (h *harness) startSenders() error {
	h.start = time.Now()
	for i := 0; i < h.o.Streams; i++ {
		conn, err := gonet.DialTCP(h.sa, tcpip.FullAddress{NIC: nicID, Addr: addrB, Port: bulkPort}, ipv4.ProtocolNumber)
		if err != nil {
			return fmt.Errorf("stream %d: %v", i, err)
		}
		h.track(conn)
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			send(conn, uint64(i)+1, h.o.Pace/uint64(h.o.Streams), h.start)
		}()
	}
	return nil
}

// drops and wakeups read the qdisc's counters (upstream's qdiscs have
// none: the stack's count of refused packets, and 0).
func (h *harness) drops() uint64 {
	if s, ok := h.q.(statser); ok {
		return s.Stats().Drops
	}
	return h.sa.Stats().NICs.TxPacketsDroppedNoBufferSpace.Value()
}

func (h *harness) wakeups() uint64 {
	if w, ok := h.q.(interface{ Wakeups() uint64 }); ok {
		return w.Wakeups()
	}
	return 0
}

// measure runs the warm-up and the measured time, sampling the timeline
// and calling o.Progress, and returns what it measured.
func (h *harness) measure() Result {
	o, start := h.o, h.start
	res := Result{Candidate: h.c, Streams: o.Streams, Pace: o.Pace, RTTIdle: h.idleRTT}
	end := start.Add(o.Warmup + o.Duration)
	measureFrom := start.Add(o.Warmup)
	var wireAt0, recvAt0, drops0, wakeups0 uint64
	streams0 := make([]uint64, len(h.streamBytes))
	var cpu0 time.Duration
	lastSec, lastBytes := start, h.wire.bytes.Load()
	prevAt, prevBytes := start, h.wire.bytes.Load()
	measuring := false
	for now := time.Now(); now.Before(end); now = time.Now() {
		time.Sleep(min(o.Sample, end.Sub(now), max(0, measureFrom.Sub(now))+boolDur(measuring, o.Sample)))
		now = time.Now()
		b := h.wire.bytes.Load()
		if !measuring && !now.Before(measureFrom) {
			measuring = true
			wireAt0, recvAt0, drops0, wakeups0, cpu0 = b, h.received.Load(), h.drops(), h.wakeups(), cpuNow()
			for i := range streams0 {
				streams0[i] = h.streamBytes[i].Load()
			}
			measureFrom = now
		}
		if dt := now.Sub(prevAt); dt > 0 {
			res.Timeline = append(res.Timeline, Point{At: now.Sub(start), WireBps: float64(b-prevBytes) / dt.Seconds()})
		}
		prevAt, prevBytes = now, b
		if o.Progress != nil && now.Sub(lastSec) >= time.Second {
			r := h.rt.between(lastSec, now)
			o.Progress(Progress{Elapsed: now.Sub(start), WireBps: float64(b-lastBytes) / now.Sub(lastSec).Seconds(), RTT: quantile(r, 0.5), Drops: h.drops(), Warmup: !measuring})
			lastSec, lastBytes = now, b
		}
	}
	stopAt := time.Now()
	res.Elapsed = stopAt.Sub(measureFrom)
	res.CPU = cpuNow() - cpu0
	res.Wakeups = h.wakeups() - wakeups0
	res.WireBps = float64(h.wire.bytes.Load()-wireAt0) / res.Elapsed.Seconds()
	res.GoodputBps = float64(h.received.Load()-recvAt0) / res.Elapsed.Seconds()
	res.Drops = h.drops() - drops0
	loaded := h.rt.between(measureFrom, stopAt)
	res.RTTSamples = len(loaded)
	res.RTTP50, res.RTTP99, res.RTTMax = quantile(loaded, 0.5), quantile(loaded, 0.99), quantile(loaded, 1)
	if o.Sparse {
		for i := 1; i < len(streams0); i++ {
			res.StreamBps = append(res.StreamBps, float64(h.streamBytes[i].Load()-streams0[i])/res.Elapsed.Seconds())
		}
		answered := h.urt.between(measureFrom, stopAt)
		res.UDPRTTP50, res.UDPRTTP99 = quantile(answered, 0.5), quantile(answered, 0.99)
		// The echoes sent in the window whose fate is known (answered, or
		// timed out: an RTT of 0).
		for _, d := range h.udpSent.between(measureFrom, stopAt) {
			res.UDPSent++
			if d == 0 {
				res.UDPLost++
			}
		}
	}
	res.ProbeRTTs = h.rt.since(start)
	if s, ok := h.q.(statser); ok {
		res.Stats, res.HasStats, res.TCStats = s.Stats(), true, s.Stats().String()
	}
	if s, ok := h.q.(interface{ TCStats() string }); ok {
		res.TCStats = s.TCStats()
	}
	switch q := h.q.(type) {
	case interface{ XStats() fqcodel.XStats }:
		res.ECNMarks = q.XStats().ECNMark
	case interface {
		ChildStats() (fqcodel.XStats, bool)
	}:
		x, _ := q.ChildStats()
		res.ECNMarks = x.ECNMark
	}
	if s, ok := h.q.(fmt.Stringer); ok {
		res.Describe = s.String()
	}
	if l, ok := h.q.(interface {
		Lateness() qdisc.HistogramSnapshot
	}); ok {
		res.Lateness, res.HasLateness = l.Lateness(), true
	}
	return res
}

// tearDown stops the streams and the probe, waits for every goroutine of
// the run, and destroys both stacks (and with A, the qdisc; a qdisc no
// NIC took is closed here). It is safe on a partial set-up and more than
// once.
func (h *harness) tearDown() {
	h.closeMu.Lock()
	if h.tornDown {
		h.closeMu.Unlock()
		return
	}
	h.tornDown = true
	closers := h.closers
	h.closeMu.Unlock()
	h.stopping.Store(true)
	for _, c := range closers {
		c.Close()
	}
	h.wg.Wait()
	if h.back != nil {
		h.back.closed.Store(true) // nothing re-enters the sender now (see valve)
	}
	if h.sb != nil {
		h.sb.Destroy()
	}
	if h.sa != nil {
		h.sa.Destroy()
	}
	if h.q != nil && !h.attached {
		h.q.Close()
	}
}

func boolDur(b bool, d time.Duration) time.Duration {
	if b {
		return d
	}
	return 0
}

// send writes stream id's content to conn until it fails: as fast as TCP
// takes it, or paced at pace bytes/s.
func send(conn net.Conn, id, pace uint64, start time.Time) {
	var hdr [8]byte
	for i := range hdr {
		hdr[i] = byte(id >> (8 * i))
	}
	if _, err := conn.Write(hdr[:]); err != nil {
		return
	}
	chunk := uint64(64 << 10)
	if pace != 0 {
		chunk = min(chunk, max(1024, pace/200))
	}
	buf := make([]byte, chunk)
	var off uint64
	for {
		fill(buf, id, off)
		if _, err := conn.Write(buf); err != nil {
			return
		}
		off += chunk
		if pace != 0 {
			if ahead := time.Duration(float64(off)/float64(pace)*1e9) - time.Since(start); ahead > 0 {
				time.Sleep(ahead)
			}
		}
	}
}

// receive reads a stream and checks every byte against its content.
func receive(conn net.Conn, received *atomic.Uint64, perStream []atomic.Uint64) error {
	var hdr [8]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return nil // closed before it began
	}
	var id uint64
	for i := range hdr {
		id |= uint64(hdr[i]) << (8 * i)
	}
	var mine atomic.Uint64
	stream := &mine
	if id < uint64(len(perStream)) {
		stream = &perStream[id]
	}
	buf := make([]byte, 64<<10)
	want := make([]byte, 64<<10)
	var off uint64
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			fill(want[:n], id, off)
			for i := 0; i < n; i++ {
				if buf[i] != want[i] {
					return fmt.Errorf("stream %d: byte %d is %#x, want %#x", id, off+uint64(i), buf[i], want[i])
				}
			}
			off += uint64(n)
			received.Add(uint64(n))
			stream.Add(uint64(n))
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return nil // reset at the end of the run
		}
	}
}
