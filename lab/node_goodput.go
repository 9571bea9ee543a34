package lab

// This file holds what a node's test of a sandbox's own qdisc under its
// class reads beside Measure's window: the peer's pings of one
// sandbox, and a load whose streams' send buffers are capped (iperf -w)
// with what the peer's TCP received of it, its goodput.

import (
	"fmt"
	"regexp"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// PingSandbox pings place i's sandbox (from 0) from the peer count
// times, interval apart, and returns the answered RTTs and how many were
// sent. The echo replies leave through the sandbox's own qdisc and its
// class of the node.
func (nd *Node) PingSandbox(i, count int, interval time.Duration) ([]time.Duration, int, error) {
	if i < 0 || i >= len(nd.Hosts) {
		return nil, 0, fmt.Errorf("no sandbox place %d on a node of %d", i, len(nd.Hosts))
	}
	return ping(nd.NSP, nd.Hosts[i].Addr, count, interval)
}

// NodeGoodputResult is a window of MeasureGoodput: Measure's, without
// samples, pings or the sandboxes' CPU, and what the peer's TCP
// received.
type NodeGoodputResult struct {
	NodeResult
	// Goodput is what the peer's TCP received per second from each
	// place's streams, host i's at i (tcp_info's bytes_received at its
	// peer address): their payload, below Bps by the headers.
	Goodput []float64
}

// MeasureGoodput is Measure, each stream's send buffer o.SendBuffer
// bytes if set (iperf -w, which gVisor doubles, as Linux does), and
// reads the peer's goodput for each place over the window too. It takes
// no samples and sends no pings (o.Sample and o.PingInterval must be 0).
func (nd *Node) MeasureGoodput(sandboxes []*Sandbox, streams []int, o measure.Options) (NodeGoodputResult, error) {
	var r NodeGoodputResult
	if o.Sample > 0 || o.PingInterval > 0 {
		return r, fmt.Errorf("MeasureGoodput takes no samples and sends no pings: Measure does")
	}
	if err := nd.waitQuiet(); err != nil {
		return r, err
	}
	before, err := nd.Counters()
	if err != nil {
		return r, err
	}
	load, err := nd.startLoad(sandboxes, streams, o.SendBuffer, flowingTimeout+o.Warmup+o.Window)
	if err != nil {
		return r, err
	}
	defer load.Stop()
	if r.Flowing, err = nd.waitFlowing(streams, before, load); err != nil {
		return r, err
	}
	time.Sleep(o.Warmup)
	// The counters are read first, in well under a millisecond, then
	// ss, tens of milliseconds later: each over its own times.
	read := func() (NodeCounters, []uint64, time.Time, error) {
		c, err := nd.Counters()
		if err != nil {
			return c, nil, time.Time{}, err
		}
		g, at, err := nd.PeerReceived()
		return c, g, at, err
	}
	c0, g0, at0, err := read()
	if err != nil {
		return r, err
	}
	time.Sleep(o.Window)
	c1, g1, at1, err := read()
	if err != nil {
		return r, err
	}
	r.Elapsed = c1.At.Sub(c0.At)
	secs := r.Elapsed.Seconds()
	r.UplinkBps = float64(c1.Uplink-c0.Uplink) / secs
	r.Bps = make([]float64, len(nd.Hosts))
	r.Goodput = make([]float64, len(nd.Hosts))
	for i := range nd.Hosts {
		r.Bps[i] = float64(c1.Peer[i]-c0.Peer[i]) / secs
		if g1[i] < g0[i] {
			return r, fmt.Errorf("the peer received %d bytes from sandbox %d at the window's end, %d at its start: a stream ended in the window; iperf in it said: %s", g1[i], i+1, g0[i], load.Said(i))
		}
		r.Goodput[i] = float64(g1[i]-g0[i]) / at1.Sub(at0).Seconds()
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

// PeerReceived reads, from the peer's kernel (`ss -tin` in the peer's
// namespace), the payload bytes its TCP has received on the established
// connections at each place's peer address and the sink's port, host
// i's at i (tcp_info's bytes_received), and the time in the middle of
// the reading.
func (nd *Node) PeerReceived() ([]uint64, time.Time, error) {
	out, at, err := nd.peerSS()
	if err != nil {
		return nil, at, err
	}
	got, err := parseReceived(out, nd.Hosts, sinkPort)
	return got, at, err
}

// bytesReceived finds tcp_info's bytes_received in a line of `ss -i`.
var bytesReceived = regexp.MustCompile(`\bbytes_received:(\d+)`)

// parseReceived sums `ss -Htin state established`'s bytes_received by
// local address, for each host's peer address and port (sumSS).
func parseReceived(ss string, hosts []NodeHost, port int) ([]uint64, error) {
	return sumSS(ss, bytesReceived, ssLocal, hosts, func(h NodeHost) string { return h.PeerAddr }, port, 0)
}
