package lab

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"github.com/netqdisc/netqdisc/lab/measure"
)

const iperfPort = 5001

var (
	pingLine = regexp.MustCompile(`time=([0-9.]+) ms`)
	pingSent = regexp.MustCompile(`(\d+) packets transmitted`)
)

// ping pings addr from ns count times, interval apart, and returns the
// answered RTTs and how many were sent.
func ping(ns, addr string, count int, interval time.Duration) ([]time.Duration, int, error) {
	out, _ := Run(ns, "ping", "-n", "-c", fmt.Sprint(count), "-i", fmt.Sprintf("%.3f", interval.Seconds()), "-W", "2", addr)
	var rtts []time.Duration
	for _, m := range pingLine.FindAllStringSubmatch(out, -1) {
		ms, err := strconv.ParseFloat(m[1], 64)
		if err == nil {
			rtts = append(rtts, time.Duration(ms*float64(time.Millisecond)))
		}
	}
	m := pingSent.FindStringSubmatch(out)
	if m == nil {
		return nil, 0, fmt.Errorf("ping %s: no summary: %s", addr, out)
	}
	sent, _ := strconv.Atoi(m[1])
	return rtts, sent, nil
}

// Ping pings the sandbox's or netstack's address from the peer count
// times, interval apart, and returns the answered RTTs and how many were
// sent: a delay a qdisc adds, as its users measure it.
func (l *Lab) Ping(count int, interval time.Duration) ([]time.Duration, int, error) {
	return ping(l.NSP, NetstackAddr, count, interval)
}

// rxBytes counts the L2 bytes dev in ns has received (its rx_bytes).
func rxBytes(ns, dev string) func() (uint64, error) {
	return func() (uint64, error) { return RxBytes(ns, dev) }
}

// wireBytes counts the bytes dev in ns has received as a wire carries
// them, host-GSO packets as their segments (WireBytes).
func wireBytes(ns, dev string) func() (uint64, error) {
	return func() (uint64, error) { return WireBytes(ns, dev) }
}

// window measures what bytes counts over o.Window, pinging target from ns
// meanwhile, after o.Warmup; with cpu, the sender's CPU time too.
func window(o measure.Options, ns, target string, bytes func() (uint64, error), r *measure.Result, cpu func() (time.Duration, error)) (err error) {
	time.Sleep(o.Warmup)
	var wg sync.WaitGroup
	var perr error
	if o.PingInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int(o.Window / o.PingInterval)
			r.RTTs, r.PingsSent, perr = ping(ns, target, n, o.PingInterval)
		}()
	}
	defer func() {
		wg.Wait() // the pings write r: wait for them on every path
		if err == nil {
			err = perr
		}
	}()
	var c0, c1 time.Duration
	if cpu != nil {
		if c0, err = cpu(); err != nil {
			return err
		}
	}
	b0, err := bytes()
	if err != nil {
		return err
	}
	t0 := time.Now()
	time.Sleep(o.Window)
	b1, err := bytes()
	if err != nil {
		return err
	}
	r.Elapsed = time.Since(t0)
	r.WireBytes = b1 - b0
	r.WireBps = float64(b1-b0) / r.Elapsed.Seconds()
	if cpu != nil {
		if c1, err = cpu(); err != nil {
			return err
		}
		r.CPU = c1 - c0
	}
	return nil
}

func idleRTT(ns, target string) (time.Duration, error) {
	rtts, _, err := ping(ns, target, 5, 100*time.Millisecond)
	if err != nil {
		return 0, err
	}
	if len(rtts) == 0 {
		return 0, fmt.Errorf("no answer to ping %s from %s", target, ns)
	}
	return measure.Quantile(rtts, 0.5), nil
}

// startIperfServer starts iperf's server on the peer and waits until it
// listens; stop kills it.
func (l *Lab) startIperfServer() (stop func(), err error) {
	return l.startIperfServerIn(l.NSP, iperfPort)
}

// startIperfServerIn starts iperf's server in namespace ns on port and
// waits until it listens; stop kills it.
func (l *Lab) startIperfServerIn(ns string, port int) (stop func(), err error) {
	srv, err := l.Start(ns, nil, "iperf", "-s", "-p", fmt.Sprint(port))
	if err != nil {
		return nil, err
	}
	stop = func() { srv.Process.Kill() }
	if err := WaitListening(ns, port); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// iperfArgs is the iperf client's command line: o.Streams streams to addr
// for the warm-up, the window and 2 s more, each with an o.SendBuffer
// socket buffer (-w) if set.
func iperfArgs(addr string, o measure.Options) []string { return iperfArgsPort(addr, iperfPort, o) }

// iperfArgsPort is iperfArgs to another port than iperf's own.
func iperfArgsPort(addr string, port int, o measure.Options) []string {
	secs := int((o.Warmup + o.Window).Seconds()) + 2
	args := []string{"iperf", "-c", addr, "-p", fmt.Sprint(port), "-P", fmt.Sprint(o.Streams), "-t", fmt.Sprint(secs)}
	if o.SendBuffer > 0 {
		args = append(args, "-w", fmt.Sprint(o.SendBuffer))
	}
	return args
}

// sinkPort is where the peer's kernel takes the netstack's bulk streams:
// socat, discarding. (iperf's server reads the first bytes of a connection
// as its own client's header, so it cannot take a plain stream.)
const sinkPort = 5003

// startSinkAndNetstack starts the peer's TCP sink (socat, its output to
// out if not nil) and the netstack with the qdisc mk builds; stop closes
// both.
func (l *Lab) startSinkAndNetstack(mk MakeQDisc, out *strings.Builder) (n *Netstack, stop func(), err error) {
	srv, err := l.Start(l.NSP, out, "socat", "-u", fmt.Sprintf("TCP-LISTEN:%d,reuseaddr,fork", sinkPort), "OPEN:/dev/null")
	if err != nil {
		return nil, nil, err
	}
	if err := WaitListening(l.NSP, sinkPort); err != nil {
		srv.Process.Kill()
		return nil, nil, err
	}
	if n, err = l.StartNetstack(mk); err != nil {
		srv.Process.Kill()
		return nil, nil, err
	}
	return n, func() { n.Close(); srv.Process.Kill() }, nil
}

// MeasureNetstack runs the netstack with the qdisc mk builds, sends
// o.Streams bulk TCP streams to the peer's kernel, and reads the peer.
func (l *Lab) MeasureNetstack(mk MakeQDisc, o measure.Options) (measure.Result, error) {
	var r measure.Result
	var out strings.Builder
	n, closeAll, err := l.startSinkAndNetstack(mk, &out)
	if err != nil {
		return r, err
	}
	defer closeAll()
	if o.SendBuffer > 0 {
		opt := tcpip.TCPSendBufferSizeRangeOption{Min: min(4096, o.SendBuffer), Default: o.SendBuffer, Max: o.SendBuffer}
		if err := n.Stack.SetTransportProtocolOption(tcp.ProtocolNumber, &opt); err != nil {
			return r, fmt.Errorf("send buffer: %s", err)
		}
	}
	if r.IdleRTT, err = idleRTT(l.NSP, NetstackAddr); err != nil {
		return r, err
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	senders := make([]*Sender, o.Streams)
	conns := make([]net.Conn, 0, o.Streams)
	for i := range senders {
		conn, err := n.Dial(PeerAddr, sinkPort)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			return r, fmt.Errorf("stream %d: %v", i, err)
		}
		conns = append(conns, conn)
		senders[i] = NewSender(uint64(i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			senders[i].Run(conn, 0, &stop)
		}()
	}
	err = window(o, l.NSP, NetstackAddr, rxBytes(l.NSP, l.VethP1), &r, nil)
	// Stop now: a sender blocked in Write would otherwise wait for TCP to
	// drain its buffer through the shaper, seconds behind a full queue,
	// and longer still while it recovers from tail drops.
	stop.Store(true)
	for _, c := range conns {
		c.SetWriteDeadline(time.Now())
	}
	wg.Wait()
	for _, s := range senders {
		r.SentBytes += s.Sent.Load()
	}
	return r, err
}

// MeasureKernel puts the kernel's tbf on the kernel sender's veth, runs
// iperf with o.Streams streams to the peer through it, and reads the peer.
func (l *Lab) MeasureKernel(rate, burst uint64, latency time.Duration, o measure.Options) (measure.Result, error) {
	var r measure.Result
	if err := Tbf(l.NSK, l.VethK, rate, burst, latency); err != nil {
		return r, err
	}
	defer Run(l.NSK, "tc", "qdisc", "del", "dev", l.VethK, "root")
	stop, err := l.startIperfServer()
	if err != nil {
		return r, err
	}
	defer stop()
	if r.IdleRTT, err = idleRTT(l.NSP, KernelAddr); err != nil {
		return r, err
	}
	var cout strings.Builder
	cli, err := l.Start(l.NSK, &cout, iperfArgs(PeerKernelAddr, o)...)
	if err != nil {
		return r, err
	}
	defer cli.Process.Kill()
	return r, window(o, l.NSP, KernelAddr, rxBytes(l.NSP, l.VethP2), &r, nil)
}

// Integrity sends size bytes from the netstack, through the qdisc mk
// builds, to socat on the peer, which hashes what it receives; it returns
// the sent and received SHA-256 and byte counts.
func (l *Lab) Integrity(mk MakeQDisc, size uint64) (sent, got string, n uint64, err error) {
	const port = 5202
	var out strings.Builder
	sink, err := l.Start(l.NSP, &out, "sh", "-c", fmt.Sprintf("socat -u TCP-LISTEN:%d,reuseaddr STDOUT | sha256sum", port))
	if err != nil {
		return "", "", 0, err
	}
	if err := WaitListening(l.NSP, port); err != nil {
		return "", "", 0, err
	}
	ns, err := l.StartNetstack(mk)
	if err != nil {
		return "", "", 0, err
	}
	defer ns.Close()
	conn, err := ns.Dial(PeerAddr, port)
	if err != nil {
		return "", "", 0, err
	}
	s := NewSender(42)
	if err := s.Run(conn, size, nil); err != nil {
		return "", "", 0, fmt.Errorf("sending: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- sink.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return "", "", 0, fmt.Errorf("socat | sha256sum: %v: %s", err, out.String())
		}
	case <-time.After(60 * time.Second):
		return "", "", 0, fmt.Errorf("the peer did not finish receiving: %s", out.String())
	}
	f := strings.Fields(out.String())
	if len(f) == 0 {
		return "", "", 0, fmt.Errorf("no hash from the peer")
	}
	return s.Sum(), f[0], s.Sent.Load(), nil
}
