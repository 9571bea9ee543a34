package lab

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// Hosts the sandbox serves (cake, issue 29): the peer's two addresses,
// PeerAddr and PeerClusterAddr (AddClusterPeer), are two clients, two
// hosts to a qdisc that isolates hosts by destination (cake's dsthost,
// dual-dsthost and triple-isolate), one kernel TCP receiving for both.

// HostLoads are the loads of a host fairness run: streamsA bulk TCP
// streams to client A (PeerAddr, labelled 1) and streamsB to client B
// (PeerClusterAddr, labelled 2).
func HostLoads(streamsA, streamsB int) []ClassLoad {
	return []ClassLoad{
		{Class: 1, Dst: PeerAddr, Streams: streamsA},
		{Class: 2, Dst: PeerClusterAddr, Streams: streamsB},
	}
}

// MeasureNetstackHosts runs the netstack with the qdisc mk builds (any:
// cake, or tbf with fq_codel beside it), sends each load's streams to its
// client, and reads each client's goodput at the peer (its Goodput; Bytes
// is 0: no class counters) over o.Window after o.Warmup, and, with
// o.PingInterval, pings from each client's address. TC is the qdisc's tc
// -s statistics at the end, where it has them.
func (l *Lab) MeasureNetstackHosts(mk MakeQDisc, loads []ClassLoad, o measure.Options) (HTBResult, error) {
	return l.measureNetstackLoads(mk, loads, o, func(q stack.QueueingDiscipline) (func() (map[uint32]uint64, error), func() string, error) {
		tc := func() string { return "" }
		if s, ok := q.(interface{ TCStats() string }); ok {
			tc = s.TCStats
		}
		none := func() (map[uint32]uint64, error) { return nil, nil }
		return none, tc, nil
	})
}

// CakeQDisc is a MakeQDisc of cake as words (tc-cake's: "bandwidth 100mbit
// triple-isolate") configure it.
func CakeQDisc(words string) (MakeQDisc, error) {
	cfg, err := cake.ParseQdisc(words)
	if err != nil {
		return nil, err
	}
	return func(lower stack.LinkEndpoint, clock tcpip.Clock) (stack.QueueingDiscipline, error) {
		return cake.New(lower, clock, cfg)
	}, nil
}

// Shares returns each load's share of the goodput the loads got in r.
func Shares(r HTBResult) []float64 {
	var sum float64
	for _, c := range r.Classes {
		sum += c.Goodput
	}
	out := make([]float64, len(r.Classes))
	for i, c := range r.Classes {
		if sum > 0 {
			out[i] = c.Goodput / sum
		}
	}
	return out
}

// MarkedProbe is one ping probe of MeasureNetstackMarked: the ping's IP
// TOS byte (the DSCP shifted left by 2: EF is 0xb8), which the netstack's
// echo reply keeps, so the reply crosses the qdisc in that tin.
type MarkedProbe struct {
	TOS uint8
	// RTTs are the probe's RTTs under load, PingsSent how many it sent,
	// IdleRTT its median RTT before the streams started.
	RTTs      []time.Duration
	PingsSent int
	IdleRTT   time.Duration
}

// RTT returns the q quantile of the probe's RTTs under load (0 if none).
func (p MarkedProbe) RTT(q float64) time.Duration { return measure.Quantile(p.RTTs, q) }

// MarkedResult is a MeasureNetstackMarked window: the probes, and the
// peer's goodput of the bulk streams, per second.
type MarkedResult struct {
	Probes  []MarkedProbe
	Goodput float64
	// Tins are cake's per-tin counters at the end (nil for another qdisc).
	Tins []cake.TinStats
}

// MeasureNetstackMarked runs the netstack with the qdisc mk builds, sends
// streams bulk TCP streams (unmarked: best effort) to the peer, and pings
// the netstack from the peer with each TOS in tos at once, every
// o.PingInterval over o.Window after o.Warmup: how a marked sparse flow
// fares against an unmarked one under the same bulk load (cake's
// diffserv tins).
func (l *Lab) MeasureNetstackMarked(mk MakeQDisc, streams int, tos []uint8, o measure.Options) (MarkedResult, error) {
	var r MarkedResult
	if len(tos) == 0 || o.PingInterval <= 0 || o.Window < o.PingInterval {
		return r, fmt.Errorf("marked probes: want at least one TOS and a ping interval (%v) within the window (%v)", o.PingInterval, o.Window)
	}
	loads := []ClassLoad{{Class: 1, Dst: PeerAddr, Streams: streams}}
	if err := checkLoads(loads); err != nil {
		return r, err
	}
	n, closeAll, err := l.startSinkAndNetstack(mk, nil)
	if err != nil {
		return r, err
	}
	defer closeAll()
	r.Probes = make([]MarkedProbe, len(tos))
	for i, t := range tos {
		r.Probes[i].TOS = t
		rtts, _, err := pingTOS(l.NSP, PeerAddr, NetstackAddr, t, 5, 50*time.Millisecond)
		if err != nil {
			return r, err
		}
		if len(rtts) == 0 {
			return r, fmt.Errorf("no answer to ping -Q %#x %s", t, NetstackAddr)
		}
		r.Probes[i].IdleRTT = measure.Quantile(rtts, 0.5)
	}
	stop, err := startStreams(n, loads)
	if err != nil {
		return r, err
	}
	defer stop()
	time.Sleep(o.Warmup)
	g0, err := l.peerReceived(PeerAddr)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	perr := make([]error, len(tos))
	for i := range tos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &r.Probes[i]
			p.RTTs, p.PingsSent, perr[i] = pingTOS(l.NSP, PeerAddr, NetstackAddr, p.TOS, int(o.Window/o.PingInterval), o.PingInterval)
		}()
	}
	wg.Wait()
	g1, err := l.peerReceived(PeerAddr)
	if err != nil {
		return r, err
	}
	r.Goodput = float64(g1-g0) / time.Since(t0).Seconds()
	if d, ok := n.QDisc.(*cake.Discipline); ok {
		r.Tins = d.XStats().Tins
	}
	for _, err := range perr {
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// pingTOS is pingFrom with the IP TOS byte tos on the requests.
func pingTOS(ns, from, to string, tos uint8, count int, interval time.Duration) ([]time.Duration, int, error) {
	out, _ := Run(ns, "ping", "-n", "-Q", strconv.Itoa(int(tos)), "-I", from, "-c", fmt.Sprint(count), "-i", fmt.Sprintf("%.3f", interval.Seconds()), "-W", "2", to)
	var rtts []time.Duration
	for _, m := range pingLine.FindAllStringSubmatch(out, -1) {
		if ms, err := strconv.ParseFloat(m[1], 64); err == nil {
			rtts = append(rtts, time.Duration(ms*float64(time.Millisecond)))
		}
	}
	m := pingSent.FindStringSubmatch(out)
	if m == nil {
		return nil, 0, fmt.Errorf("ping -Q %#x -I %s %s: no summary: %s", tos, from, to, out)
	}
	sent, _ := strconv.Atoi(m[1])
	return rtts, sent, nil
}

// DownloadResult is a MeasureNetstackDownload window: the download's
// goodput at the netstack and what the netstack's qdisc sent meanwhile
// (its ACKs, mostly), and cake's ACK filter drops, over the window.
type DownloadResult struct {
	// RxWireBps is what the netstack's NIC received (L2 bytes) per second.
	RxWireBps float64
	// EgressPackets the qdisc handed to the link, AckDrops the packets
	// cake's ACK filter dropped (all tins), over the window.
	EgressPackets, AckDrops uint64
	Elapsed                 time.Duration
}

// MeasureNetstackDownload runs the netstack with the qdisc mk builds
// (cake: the ACK filter's counter is read) as a receiver: the peer sends
// it o.Streams TCP streams (iperf) through the kernel's tbf at downRate
// (bytes/s) on the peer's veth, and the netstack's ACKs go out through
// the qdisc. It reads the download's L2 rate at the netstack, the
// packets the qdisc sent and the ACK filter's drops over o.Window after
// o.Warmup.
func (l *Lab) MeasureNetstackDownload(mk MakeQDisc, downRate uint64, o measure.Options) (DownloadResult, error) {
	var r DownloadResult
	if o.Streams < 1 || downRate == 0 {
		return r, fmt.Errorf("download: %d streams at %d bytes/s: want a stream or more and a rate", o.Streams, downRate)
	}
	if err := Tbf(l.NSP, l.VethP1, downRate, 64*1024, 50*time.Millisecond); err != nil {
		return r, err
	}
	defer Run(l.NSP, "tc", "qdisc", "del", "dev", l.VethP1, "root")
	n, err := l.StartNetstack(mk)
	if err != nil {
		return r, err
	}
	defer n.Close()
	const port = 5004
	stopSink, err := n.Sink(port)
	if err != nil {
		return r, err
	}
	defer stopSink()
	stats := func() (uint64, uint64) {
		var pkts, acks uint64
		if s, ok := n.QDisc.(interface{ Stats() qdisc.Stats }); ok {
			pkts = s.Stats().Packets
		}
		if d, ok := n.QDisc.(*cake.Discipline); ok {
			for _, t := range d.XStats().Tins {
				acks += uint64(t.AckDrops)
			}
		}
		return pkts, acks
	}
	cl, err := l.Start(l.NSP, nil, iperfArgsPort(NetstackAddr, port, o)...)
	if err != nil {
		return r, err
	}
	defer cl.Process.Kill()
	time.Sleep(o.Warmup)
	b0, err := n.RxWireBytes()
	if err != nil {
		return r, err
	}
	p0, a0 := stats()
	t0 := time.Now()
	time.Sleep(o.Window)
	b1, err := n.RxWireBytes()
	if err != nil {
		return r, err
	}
	p1, a1 := stats()
	r.Elapsed = time.Since(t0)
	r.RxWireBps = float64(b1-b0) / r.Elapsed.Seconds()
	r.EgressPackets, r.AckDrops = p1-p0, a1-a0
	return r, nil
}
