package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

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
// bytes, with this process's CPU time over the window.
func (l *Lab) MeasureNetstackIngress(mk MakeQDisc, wrap WrapLink, o Options) (Result, error) {
	var r Result
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
	if err := window(o, l.NSP, NetstackAddr, n.RxWireBytes, &r, processCPU); err != nil {
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
// to iperf's server there, and counts what the ifb passed.
func (l *Lab) MeasureKernelIngress(rate, burst uint64, latency time.Duration, o Options) (Result, error) {
	var r Result
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
	srv, err := l.Start(l.NSK, nil, "iperf", "-s", "-p", fmt.Sprint(iperfPort))
	if err != nil {
		return r, err
	}
	defer srv.Process.Kill()
	if err := WaitListening(l.NSK, iperfPort); err != nil {
		return r, err
	}
	if r.IdleRTT, err = idleRTT(l.NSP, KernelAddr); err != nil {
		return r, err
	}
	var cout strings.Builder
	cli, err := l.Start(l.NSP, &cout, iperfArgs(KernelAddr, o)...)
	if err != nil {
		return r, err
	}
	defer cli.Process.Kill()
	return r, window(o, l.NSP, KernelAddr, txBytes(l.NSK, ifb), &r, nil)
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

// processCPU is this process's CPU time, user and system.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// MeasureSandboxIngress runs iperf's server in the sandbox, has iperf on
// the peer send o.Streams streams to it, and counts what the sandbox's
// ingress shaper delivered to its stack (its /network/ingress/sent_bytes
// metric, read with runsc export-metrics: start the sandbox with
// --metric-server), with the sandbox's CPU time over the window.
func (l *Lab) MeasureSandboxIngress(s *Sandbox, o Options) (Result, error) {
	var r Result
	var sout strings.Builder
	srv, err := s.Exec(&sout, "iperf", "-s", "-p", fmt.Sprint(iperfPort))
	if err != nil {
		return r, err
	}
	defer srv.Process.Kill()
	if r.IdleRTT, err = idleRTT(l.NSP, NetstackAddr); err != nil {
		return r, err
	}
	time.Sleep(500 * time.Millisecond) // the server listens (ss in NSN cannot see the sandbox's sockets)
	var cout strings.Builder
	cli, err := l.Start(l.NSP, &cout, iperfArgs(NetstackAddr, o)...)
	if err != nil {
		return r, err
	}
	defer cli.Process.Kill()
	delivered := func() (uint64, error) { return s.Metric("network_ingress_sent_bytes") }
	if err := window(o, l.NSP, NetstackAddr, delivered, &r, s.CPU); err != nil {
		return r, err
	}
	if r.WireBytes == 0 {
		return r, fmt.Errorf("nothing reached the sandbox; iperf on the peer said: %s; in the sandbox: %s", cout.String(), sout.String())
	}
	return r, nil
}
