// Package measure is what every measurement here shares, on a lab's real
// veth (package lab: a netstack, the kernel's tbf, a runsc sandbox against
// a kernel peer) or between two netstacks in one process
// (benchmarks.Run): how a run is shaped (Options), what it measured
// (Result), and the one Quantile and the one Median its figures are read
// with. It is a package of its own so that the lab, the in-process
// harness, the e2e tests and qdiscbench read their figures alike, without
// the benchmarks importing the lab's namespaces and sandboxes or the lab
// importing the benchmarks.
package measure

import "time"

// Options shape one run. Streams, Warmup and Window mean the same to every
// run; PingInterval's 0 differs (see it); the fields after it are read by
// one kind of run only, as each says.
type Options struct {
	// Streams is the number of bulk TCP streams (at least 1).
	Streams int
	// Warmup runs before the window: it excludes TCP's start and the
	// first burst.
	Warmup time.Duration
	// Window is how long is measured.
	Window time.Duration
	// PingInterval is the pause between RTT probes. On a lab's veth the
	// peer pings the sender that often during the window (ping -i), and 0
	// sends no pings; in process a TCP request/response probe runs that
	// often from the start, and 0 means every 10 ms.
	PingInterval time.Duration

	// SendBuffer (lab runs), if not 0, caps each netstack stream's TCP
	// send buffer in bytes; iperf senders (the kernel's, a sandbox's) get
	// it as -w, which Linux and gVisor double. The kernel's TCP stops
	// filling a qdisc on its own (TCP small queues, NET_XMIT_CN); gVisor's
	// does not, and keeps a short queue at its limit, where tail drops
	// also take pings. A capped send buffer gives gVisor's streams the
	// same restraint.
	SendBuffer int

	// Pace (in-process runs), if not 0, is the total bytes/s the streams
	// offer, split evenly; 0 sends as fast as TCP allows.
	Pace uint64
	// Sample (in-process runs, and a node's: lab.Node.Measure) is the
	// period of the timeline (in process, default
	// 100 ms).
	Sample time.Duration
	// Progress (in-process runs), if set, is called once a second with
	// the last second.
	Progress func(Progress)
	// RR (runsc runs) adds a sparse TCP flow: every PingInterval (10 ms
	// if 0) the peer writes 64 bytes to an echo server in the sandbox and
	// reads them back, one connection for the run (Result.RRs).
	RR bool
	// Sparse (in-process runs) adds a ping-like UDP echo probe and counts
	// each stream's goodput, for the bufferbloat suite.
	Sparse bool
}

// Progress is one second of an in-process run, for a live line.
type Progress struct {
	Elapsed time.Duration
	WireBps float64
	RTT     time.Duration // median probe RTT in the second (0: none)
	Drops   uint64        // so far
	Warmup  bool
}
