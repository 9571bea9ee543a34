package measure

import (
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Result is what one run measured over its window. The figures every run
// has come first; those only an in-process run can read (the qdisc's own
// counters, the stream contents, the UDP echo) follow, and stay zero on a
// lab's veth.
type Result struct {
	// Streams and Pace are the run's (its Options'); Rate is the rate its
	// qdisc was configured to, in bytes/s (0: none, or not known).
	Streams int
	Pace    uint64
	Rate    uint64
	// Elapsed is the window's length as measured.
	Elapsed time.Duration
	// WireBps is the L2 bytes per second counted in the window, and
	// WireBytes their count. In process: what the qdisc handed the link.
	// On a lab's veth, in the send direction what the peer's veth
	// received (its rx_bytes, host-GSO packets as their segments), in the
	// receive direction what the shaper let through to the receiver (the
	// netstack's NIC counters, the ifb device's tx_bytes, for a sandbox
	// what the peer's TCP had delivered, each segment with its headers).
	WireBps   float64
	WireBytes uint64
	// IdleRTT is the median RTT before the load: of 5 pings on a lab's
	// veth, of 20 probes in process.
	IdleRTT time.Duration
	// RTTs are the RTTs sampled during the window (pings answered, or
	// probes), in no particular order; PingsSent is how many pings were
	// sent (lab runs).
	RTTs      []time.Duration
	PingsSent int
	// QueueDelays (in process) are the qdisc's backlog over its rate,
	// sampled as each probe was sent in the window, sorted: the bulk
	// flows' standing queue. Empty for a qdisc without Stats or a rate.
	QueueDelays []time.Duration
	// CPU is the CPU time spent in the window: in process, the process's;
	// on a lab's veth a sandbox's (its cgroup), or in the receive
	// direction the whole machine's.
	CPU time.Duration
	// SentBytes is what the netstack's senders wrote (lab netstack runs).
	SentBytes uint64
	// ShaperBytes is what the shaper counted as sent in the window, its
	// tc -s Sent bytes: what it charged; ShaperPeerBytes is WireBytes
	// over the span between its two readings (a sandbox's ingress runs).
	ShaperBytes     uint64
	ShaperPeerBytes uint64

	// GoodputBps is the stream bytes received per second (in process).
	GoodputBps float64
	// Received is the stream bytes received and checked over the whole
	// run (in process).
	Received uint64
	// Timeline is the on-wire rate over the whole run, a point a
	// Options.Sample; ProbeRTTs are the probe's samples over the whole
	// run, in time order (in process).
	Timeline  []Point
	ProbeRTTs []RTTPoint

	// The qdisc's own report (in process). Drops counts packets the qdisc
	// refused or dropped in the window (the NIC's count of
	// ErrNoBufferSpace for qdiscs without Stats).
	Drops uint64
	// Retransmits counts the TCP segments the sending netstack resent in
	// the window (in process): beyond the drops, spurious.
	Retransmits uint64
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
	// Wakeups is how many times the qdisc's timer fired in the window,
	// when it counts that (netqdisc's tbf).
	Wakeups uint64
	// ECNMarks is the packets fq_codel marked CE instead of dropping, over
	// the whole run (netqdisc's fq_codel, alone or as a tbf's child).
	ECNMarks uint64

	// With Options.Sparse (in process): the UDP echo's RTTs answered in
	// the window, how many echoes it sent and lost there, and each bulk
	// stream's goodput in bytes/s.
	UDPRTTs   []time.Duration
	UDPSent   int
	UDPLost   int
	StreamBps []float64

	// With Options.RR (runsc runs): a 64-byte TCP request/response's
	// round trips in the window, from the peer to an echo server in the
	// sandbox, and its median before the load.
	RRs    []time.Duration
	IdleRR time.Duration
}

// Point is one timeline sample.
type Point struct {
	At      time.Duration // since the streams started
	WireBps float64
}

// RTTPoint is one probe sample: when, since the streams started, and its
// RTT.
type RTTPoint struct {
	At, RTT time.Duration
}

// RTT returns the q-quantile of the RTTs sampled in the window (0 without
// any): RTT(0.5) is the median, RTT(1) the largest.
func (r Result) RTT(q float64) time.Duration { return Quantile(r.RTTs, q) }

// UDPRTT returns the q-quantile of the UDP echo's RTTs (0 without any).
func (r Result) UDPRTT(q float64) time.Duration { return Quantile(r.UDPRTTs, q) }

// PingsLost is how many pings in the window got no answer.
func (r Result) PingsLost() int { return r.PingsSent - len(r.RTTs) }

// Ratio is WireBps over the configured rate (0 without one).
func (r Result) Ratio() float64 {
	if r.Rate == 0 {
		return 0
	}
	return r.WireBps / float64(r.Rate)
}

// CPUPerGB is CPU seconds per 10^9 bytes on the wire (0 when none went).
func (r Result) CPUPerGB() float64 {
	if r.WireBytes == 0 {
		return 0
	}
	return r.CPU.Seconds() / (float64(r.WireBytes) / 1e9)
}

// CPUPerPacket is CPU time per full-size (1514-byte) packet on the wire.
func (r Result) CPUPerPacket() time.Duration {
	return time.Duration(r.CPUPerGB() * 1514)
}

// CPUPercent is CPU time over the window, in percent of one core.
func (r Result) CPUPercent() float64 { return 100 * r.CPU.Seconds() / r.Elapsed.Seconds() }
