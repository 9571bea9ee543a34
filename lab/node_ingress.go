package lab

// This file holds a node's receive direction (issue 38): bulk TCP from
// the peer to each of the node's sandboxes, what the wire carried to
// each, and the kernel's htb for that direction on the one link all of
// it crosses, the peer's end of the uplink.

import (
	"fmt"
	"math"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// nodeSinkPortRx is where each sandbox's iperf server takes the peer's
// streams.
const nodeSinkPortRx = 5005

// NodeIngressCounters are the node's receive-direction counters at one
// time.
type NodeIngressCounters struct {
	// At is when they were read.
	At time.Time
	// Uplink is the bytes the router's uplink has received (its
	// rx_bytes): every frame the peer sent, headers and all.
	Uplink uint64
	// Hosts is what the router has sent toward each sandbox, host i's
	// at i: the tx_bytes of its veth to the sandbox (RouterVeth), each
	// frame, headers and all, whether the sandbox then keeps it or its
	// receive queue drops it.
	Hosts []uint64
}

// IngressCounters reads the node's receive-direction counters, all at
// once, in the router's namespace, as Counters reads the send
// direction's.
func (nd *Node) IngressCounters() (NodeIngressCounters, error) {
	var c NodeIngressCounters
	devs, at, err := netDevs(nd.Router)
	if err != nil {
		return c, err
	}
	c.At = at
	up := devs[0][nd.Uplink]
	if !up.ok {
		return c, fmt.Errorf("no %s in the router's /proc/net/dev", nd.Uplink)
	}
	c.Uplink = up.rx
	c.Hosts = make([]uint64, len(nd.Hosts))
	for i, h := range nd.Hosts {
		d := devs[0][h.RouterVeth]
		if !d.ok {
			return c, fmt.Errorf("no %s in the router's /proc/net/dev", h.RouterVeth)
		}
		c.Hosts[i] = d.tx
	}
	return c, nil
}

// NodeIngressLoad is bulk TCP load running from the peer to a node's
// sandboxes (StartIngressLoad); Stop ends it.
type NodeIngressLoad struct {
	// souts are what each sandbox's iperf server printed, couts what
	// each load's iperf client at the peer printed.
	souts, couts []strings.Builder
	// servers are the runsc execs of the servers, kills what kills each
	// in its sandbox; clients are the iperf clients at the peer.
	servers []*exec.Cmd
	kills   []func()
	clients []*exec.Cmd
}

// StartIngressLoad starts iperf's server in each sandboxes[i] whose
// streams[i] is not 0 (nil where it is 0: idle), waits until each
// answers at its address, then starts streams[i] bulk TCP streams
// (iperf's client, in the peer's namespace) to it, for at most d: Stop
// ends them before.
func (nd *Node) StartIngressLoad(sandboxes []*Sandbox, streams []int, d time.Duration) (_ *NodeIngressLoad, err error) {
	if len(sandboxes) != len(nd.Hosts) || len(streams) != len(nd.Hosts) {
		return nil, fmt.Errorf("%d sandboxes and %d loads on a node of %d", len(sandboxes), len(streams), len(nd.Hosts))
	}
	l := &NodeIngressLoad{souts: make([]strings.Builder, len(nd.Hosts)), couts: make([]strings.Builder, len(nd.Hosts))}
	defer func() {
		if err != nil {
			l.Stop()
		}
	}()
	for i, n := range streams {
		if n == 0 {
			continue
		}
		if sandboxes[i] == nil {
			return nil, fmt.Errorf("load %d: %d streams and no sandbox", i+1, n)
		}
		c, kill, err := sandboxes[i].execKillable(&l.souts[i], "iperf", "-s", "-p", fmt.Sprint(nodeSinkPortRx))
		if err != nil {
			return nil, err
		}
		l.servers, l.kills = append(l.servers, c), append(l.kills, kill)
	}
	// ss in a sandbox's namespace cannot see the sandbox's sockets: the
	// peer connects to each server until it answers.
	for i, n := range streams {
		if n == 0 {
			continue
		}
		if err := dialUntil(nd.NSP, net.JoinHostPort(nd.Hosts[i].Addr, fmt.Sprint(nodeSinkPortRx)), 10*time.Second); err != nil {
			outMu.Lock()
			defer outMu.Unlock()
			return nil, fmt.Errorf("sandbox %d's iperf server: %v; it said: %s", i+1, err, l.souts[i].String())
		}
	}
	// The streams are killed by Stop: their time only bounds them should
	// a kill fail.
	secs := int(math.Ceil(d.Seconds())) + 2
	for i, n := range streams {
		if n == 0 {
			continue
		}
		c, err := nd.Start(nd.NSP, &l.couts[i], "iperf", "-c", nd.Hosts[i].Addr, "-p", fmt.Sprint(nodeSinkPortRx), "-P", fmt.Sprint(n), "-t", fmt.Sprint(secs))
		if err != nil {
			return nil, err
		}
		l.clients = append(l.clients, c)
	}
	return l, nil
}

// Said is what load i's iperf client at the peer and its server in the
// sandbox have printed so far.
func (l *NodeIngressLoad) Said(i int) string {
	outMu.Lock()
	defer outMu.Unlock()
	return fmt.Sprintf("at the peer: %s; in the sandbox: %s", l.couts[i].String(), l.souts[i].String())
}

// Stop kills each iperf server in its sandbox, whose sockets then close
// with data unread, so that the sandbox resets the streams (and answers
// what the peer still sends with resets), then the clients at the peer,
// and waits for all to end: a client's kernel would otherwise go on
// sending what its sockets hold, megabytes, into the next load.
func (l *NodeIngressLoad) Stop() {
	for _, kill := range l.kills {
		kill()
	}
	for _, c := range l.clients {
		c.Process.Kill()
	}
	waitEnded(append(append([]*exec.Cmd(nil), l.servers...), l.clients...), 10*time.Second)
}

// dialUntil connects to addr (host:port) from namespace ns, again every
// 50 ms until a connection is made, for at most d, and closes it.
func dialUntil(ns, addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := dialIn(ns, addr, time.Second)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dialIn connects to addr from namespace ns, once, and closes the
// connection.
func dialIn(ns, addr string, timeout time.Duration) error {
	c, err := connectIn(ns, addr, timeout)
	if err == nil {
		c.Close()
	}
	return err
}

// NodeIngressResult is a node run's window in the receive direction.
type NodeIngressResult struct {
	// NodeResult is what the wire carried: Bps[i] what the router sent
	// toward sandbox i (IngressCounters.Hosts), UplinkBps what the
	// router's uplink received (IngressCounters.Uplink).
	NodeResult
	// Acked is what each sandbox's TCP took from the peer, a second: the
	// payload bytes it acknowledged, as the peer's kernel counts them
	// (PeerAcked), whatever shapes the sandbox's receive path.
	//
	// The wire is not a class's rate in this direction: what arrives
	// waits in the sandbox's receive queue for the class's share, and
	// that queue holds up to a second of it and swings by hundreds of
	// packets as the peer's TCP windows open and close, so that over a
	// 5 s window the wire counts several per cent more or less than the
	// sandbox took (measured: a 10 Mbit/s class's queue went from 748 to
	// 177 packets over one window).
	Acked []float64
}

// PeerAcked reads, from the peer's kernel (`ss -tin` in the peer's
// namespace), the payload bytes each sandbox has acknowledged on its
// established TCP connections from the peer to port, host i's at i
// (tcp_info's bytes_acked, less the SYN's), and the time in the middle
// of the reading.
func (nd *Node) PeerAcked(port int) ([]uint64, time.Time, error) {
	out, at, err := nd.peerSS()
	if err != nil {
		return nil, at, err
	}
	acked, err := parseAcked(out, nd.Hosts, port)
	return acked, at, err
}

// bytesAcked finds tcp_info's bytes_acked in a line of `ss -i`.
var bytesAcked = regexp.MustCompile(`\bbytes_acked:(\d+)`)

// parseAcked sums `ss -Htin state established`'s bytes_acked by
// destination, for each host's address and port (sumSS), less the SYN's
// one on each connection.
func parseAcked(ss string, hosts []NodeHost, port int) ([]uint64, error) {
	return sumSS(ss, bytesAcked, ssPeer, hosts, func(h NodeHost) string { return h.Addr }, port, 1)
}

// peerSS runs `ss -Htin state established` in the peer's namespace and
// returns its output and the time in the middle of the reading.
func (nd *Node) peerSS() (string, time.Time, error) {
	t0 := time.Now()
	out, err := exec.Command("ip", "netns", "exec", nd.NSP, "ss", "-Htin", "state", "established").Output()
	at := t0.Add(time.Since(t0) / 2)
	if err != nil {
		return "", at, fmt.Errorf("ss in the peer's namespace: %v", err)
	}
	return string(out), at, nil
}

// The columns of an `ss -H` connection line ("Recv-Q Send-Q local peer")
// sumSS keys connections by.
const (
	ssLocal = 2
	ssPeer  = 3
)

// sumSS sums, in `ss -Htin state established`'s output, the tcp_info
// counter counter matches (less less on each connection), by the
// connection's address in column col, for each host's address addr(h)
// and port, host i's at i: each connection is a line "Recv-Q Send-Q
// local peer" and, indented below it, its tcp_info.
func sumSS(ss string, counter *regexp.Regexp, col int, hosts []NodeHost, addr func(NodeHost) string, port int, less uint64) ([]uint64, error) {
	sums := make([]uint64, len(hosts))
	host := -1
	for _, line := range strings.Split(ss, "\n") {
		if line == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			host = -1
			f := strings.Fields(line)
			if len(f) < 4 {
				return nil, fmt.Errorf("ss: %q", line)
			}
			for i, h := range hosts {
				if f[col] == net.JoinHostPort(addr(h), strconv.Itoa(port)) {
					host = i
				}
			}
			continue
		}
		if m := counter.FindStringSubmatch(line); host >= 0 && m != nil {
			n, err := strconv.ParseUint(m[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("ss: %q", line)
			}
			sums[host] += max(n, less) - less
		}
	}
	return sums, nil
}

// MeasureIngress runs a load from the peer (StartIngressLoad) and reads,
// over o.Window after o.Warmup, what the router sent toward each sandbox
// and what its uplink received (the NodeResult), and what each sandbox's
// TCP took (Acked), then stops the load.
func (nd *Node) MeasureIngress(sandboxes []*Sandbox, streams []int, o measure.Options) (NodeIngressResult, error) {
	var r NodeIngressResult
	if len(sandboxes) != len(nd.Hosts) || len(streams) != len(nd.Hosts) {
		return r, fmt.Errorf("%d sandboxes and %d loads on a node of %d", len(sandboxes), len(streams), len(nd.Hosts))
	}
	load, err := nd.StartIngressLoad(sandboxes, streams, o.Warmup+o.Window)
	if err != nil {
		return r, err
	}
	defer load.Stop()
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
	cpu0 := cpu()
	c0, err := nd.IngressCounters()
	if err != nil {
		return r, err
	}
	a0, at0, err := nd.PeerAcked(nodeSinkPortRx)
	if err != nil {
		return r, err
	}
	time.Sleep(o.Window)
	c1, err := nd.IngressCounters()
	if err != nil {
		return r, err
	}
	a1, at1, err := nd.PeerAcked(nodeSinkPortRx)
	if err != nil {
		return r, err
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
	r.Acked = make([]float64, len(nd.Hosts))
	for i := range c0.Hosts {
		r.Bps[i] = float64(c1.Hosts[i]-c0.Hosts[i]) / secsIn
		if a1[i] < a0[i] {
			return r, fmt.Errorf("sandbox %d's connections acknowledged %d bytes at the window's end, %d at its start: a stream ended in the window; iperf said %s", i+1, a1[i], a0[i], load.Said(i))
		}
		r.Acked[i] = float64(a1[i]-a0[i]) / at1.Sub(at0).Seconds()
	}
	// A busy sandbox's streams carry far more than a thousandth of the
	// uplink; below it, they did not run.
	for i, n := range streams {
		if n > 0 && r.Bps[i] <= r.UplinkBps/1000 {
			return r, fmt.Errorf("next to nothing reached sandbox %d (%s): %.0f bytes/s; iperf said %s", i+1, nd.Hosts[i].Addr, r.Bps[i], load.Said(i))
		}
	}
	return r, nil
}
