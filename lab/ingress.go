package lab

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/runsc-flags"
)

// The receive direction: the peer's kernel sends bulk TCP to the netstack
// (through netqdisc's ingress shaper) or to the kernel sender's namespace
// (through Linux's own ingress shaping: an ingress qdisc whose filter
// redirects every IP packet to an ifb device that has a tbf, as the CNI
// bandwidth plugin sets it up), with pings from the peer meanwhile.

// sinkPortRx is where the netstack takes the peer's bulk streams.
const sinkPortRx = 5004

// IngressFrom is the WrapLink a runtime with cfg uses: the link wrapped in
// the receive-direction shaper, or the link itself when that direction is
// not shaped.
func IngressFrom(cfg *runscflags.Config) WrapLink {
	return func(link stack.LinkEndpoint, clock tcpip.Clock) (stack.LinkEndpoint, error) {
		e, err := cfg.NewIngress(link, clock)
		if err != nil || e == nil {
			return link, err
		}
		return e, nil
	}
}

// MeasureNetstackIngress runs the netstack with its link wrapped by wrap
// and the qdisc mk builds, has iperf on the peer send o.Streams bulk TCP
// streams to it, and counts what the netstack's NIC received, in L2
// bytes, with the machine's CPU time over the window (SystemCPU).
func (l *Lab) MeasureNetstackIngress(mk MakeQDisc, wrap WrapLink, o measure.Options) (measure.Result, error) {
	var r measure.Result
	n, err := l.StartNetstackOn(mk, wrap)
	if err != nil {
		return r, err
	}
	defer n.Close()
	stop, err := n.Sink(sinkPortRx)
	if err != nil {
		return r, err
	}
	defer stop()
	if r.IdleRTT, err = idleRTT(l.NSP, NetstackAddr); err != nil {
		return r, err
	}
	var cout strings.Builder
	cli, err := l.Start(l.NSP, &cout, iperfArgsPort(NetstackAddr, sinkPortRx, o)...)
	if err != nil {
		return r, err
	}
	defer cli.Process.Kill()
	if err := window(o, l.NSP, NetstackAddr, n.RxWireBytes, &r, SystemCPU); err != nil {
		return r, err
	}
	if r.WireBytes == 0 {
		return r, fmt.Errorf("nothing reached the netstack; iperf on the peer said: %s", cout.String())
	}
	return r, nil
}

// MeasureKernelIngress shapes what the kernel sender's namespace receives
// with Linux's ingress qdisc, mirred and an ifb with tbf (rate in bytes/s,
// burst in bytes, latency), has iperf on the peer send o.Streams streams
// to iperf's server there, and counts what the ifb passed, with the
// machine's CPU time over the window (SystemCPU).
func (l *Lab) MeasureKernelIngress(rate, burst uint64, latency time.Duration, o measure.Options) (measure.Result, error) {
	var r measure.Result
	ifb := "nqi" + strings.TrimPrefix(l.VethK, "nqk")
	steps := [][]string{
		{"ip", "link", "add", ifb, "type", "ifb"},
		{"ip", "link", "set", ifb, "up"},
		{"tc", "qdisc", "add", "dev", l.VethK, "handle", "ffff:", "ingress"},
		{"tc", "filter", "add", "dev", l.VethK, "parent", "ffff:", "protocol", "ip", "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", ifb},
	}
	defer func() {
		Run(l.NSK, "tc", "qdisc", "del", "dev", l.VethK, "ingress")
		Run(l.NSK, "ip", "link", "del", ifb)
	}()
	for _, s := range steps {
		if _, err := Run(l.NSK, s...); err != nil {
			return r, err
		}
	}
	if err := Tbf(l.NSK, ifb, rate, burst, latency); err != nil {
		return r, err
	}
	stopServer, err := l.startIperfServerIn(l.NSK, iperfPort)
	if err != nil {
		return r, err
	}
	defer stopServer()
	if r.IdleRTT, err = idleRTT(l.NSP, KernelAddr); err != nil {
		return r, err
	}
	var cout strings.Builder
	cli, err := l.Start(l.NSP, &cout, iperfArgs(KernelAddr, o)...)
	if err != nil {
		return r, err
	}
	defer cli.Process.Kill()
	return r, window(o, l.NSP, KernelAddr, txBytes(l.NSK, ifb), &r, SystemCPU)
}

// txBytes counts the L2 bytes dev in ns has sent (its tx_bytes).
func txBytes(ns, dev string) func() (uint64, error) {
	return func() (uint64, error) {
		out, err := Run(ns, "cat", "/sys/class/net/"+dev+"/statistics/tx_bytes")
		if err != nil {
			return 0, err
		}
		return strconv.ParseUint(strings.TrimSpace(out), 10, 64)
	}
}

// SystemCPU is the CPU time the whole machine has spent since boot, out of
// idle and I/O wait (/proc/stat): the receive direction's cost, shaped in
// a userspace netstack or in the kernel's softirqs, counted alike (the
// sender, iperf on the peer, in both).
func SystemCPU() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks uint64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is in user already
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %v", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// userHZ is /proc/stat's ticks per second (USER_HZ, 100 on Linux).
const userHZ = 100

// MeasureSandboxIngress runs iperf's server in the sandbox, has iperf on
// the peer send o.Streams streams to it, and counts what the sandbox's
// ingress shaper let through as a wire carries it, read at the peer
// (PeerDeliveredBytes: with the peer's GSO on, each segment of a host-GSO
// packet with its headers, as Linux's tbf on an ifb charges it), with the
// sandbox's CPU time over the window, and the shaper's own count over it
// (ShaperBytes: its /network/ingress/sent_bytes metric; start the sandbox
// with --metric-server).
func (l *Lab) MeasureSandboxIngress(s *Sandbox, o measure.Options) (measure.Result, error) {
	var r measure.Result
	var sout strings.Builder
	stopServer, err := s.startIperfServer(iperfPort, &sout)
	if err != nil {
		return r, err
	}
	defer stopServer()
	if r.IdleRTT, err = idleRTT(l.NSP, NetstackAddr); err != nil {
		return r, err
	}
	var cout strings.Builder
	cli, err := l.Start(l.NSP, &cout, iperfArgs(NetstackAddr, o)...)
	if err != nil {
		return r, err
	}
	defer cli.Process.Kill()
	// The shaper's count is read between two of the peer's, at both ends
	// (runsc export-metrics takes tens of milliseconds): ShaperPeerBytes
	// is the peer's count over the same span, from the middle of one pair
	// to the middle of the other.
	var shaped, mid []uint64
	delivered := func() (uint64, error) {
		before, err := l.PeerDeliveredBytes(NetstackAddr)
		if err != nil {
			return 0, err
		}
		n, err := s.Metric("network_ingress_sent_bytes")
		if err != nil {
			return 0, err
		}
		after, err := l.PeerDeliveredBytes(NetstackAddr)
		if err != nil {
			return 0, err
		}
		shaped, mid = append(shaped, n), append(mid, before+(after-before)/2)
		return after, nil
	}
	if err := window(o, l.NSP, NetstackAddr, delivered, &r, s.CPU); err != nil {
		return r, err
	}
	r.ShaperBytes = shaped[len(shaped)-1] - shaped[0]
	r.ShaperPeerBytes = mid[len(mid)-1] - mid[0]
	if r.WireBytes == 0 {
		return r, fmt.Errorf("nothing reached the sandbox; iperf on the peer said: %s; in the sandbox: %s", cout.String(), sout.String())
	}
	return r, nil
}
