package lab

// This file holds the htb ingress run in a runsc sandbox.

import (
	"fmt"
	"strings"

	"github.com/netqdisc/netqdisc/lab/measure"
)

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
	stopServer, err := s.startIperfServer(iperfPort, &sout)
	if err != nil {
		return r, err
	}
	defer stopServer()
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
