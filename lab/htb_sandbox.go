package lab

// This file holds the htb run in a runsc sandbox.

import (
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/lab/measure"
)

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
