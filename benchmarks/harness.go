// Package benchmarks measures qdiscs the way a sandbox uses them: two gVisor
// netstacks joined by an in-memory link, the qdisc under test on the
// sender's NIC, N bulk TCP streams and a small request/response probe
// through it. It reports, as a measure.Result (the lab's real-peer runs
// report one too), goodput, the bytes the qdisc handed the link per second
// against the configured rate, probe RTT idle and under load, drops, the
// qdisc's statistics and process CPU per GB. Every stream's content is
// checked byte by byte at the receiver.
//
// The link is gVisor's pipe behind Ethernet framing, so a full-size packet
// is 1514 bytes as on a veth, and the bytes counted under the qdisc are L2
// bytes, as a peer's rx_bytes would count them.
//
// With a qdisc, packets reach the receiving stack on the qdisc's dispatcher
// goroutine, in batches; without one, on the sender's goroutine. The
// receiver dominates CPU, so ratios against "none" at 1-2 streams measure
// that difference as much as the qdisc: compare qdiscs with each other.
package benchmarks

import (
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/lab/measure"
)

// Run measures candidate c under o: it sets the two stacks up, measures,
// and tears everything down, on every path.
func Run(c Candidate, o measure.Options) (measure.Result, error) {
	o.Streams = max(o.Streams, 1)
	if o.PingInterval == 0 {
		o.PingInterval = 10 * time.Millisecond
	}
	if o.Sample == 0 {
		o.Sample = 100 * time.Millisecond
	}
	h := &harness{c: c, o: o, streamBytes: make([]atomic.Uint64, o.Streams+1)}
	defer h.tearDown()
	if err := h.setUp(); err != nil {
		return measure.Result{Rate: c.Rate, Streams: o.Streams, Pace: o.Pace}, err
	}
	res := h.measure()
	h.tearDown() // stops the receivers, whose count and checks end here
	res.Received = h.received.Load()
	if p := h.contentErr.Load(); p != nil {
		return res, fmt.Errorf("%s: stream content: %w", c.Name(), *p)
	}
	return res, nil
}

// harness is one run: a sender stack A with the qdisc under test, a
// receiver stack B, the bulk streams, the RTT probe and the goroutines
// that serve them.
type harness struct {
	c Candidate
	o measure.Options

	// One field a line: checklocks maps annotations to fields by their
	// declarations' order.
	sa   *stack.Stack
	sb   *stack.Stack
	wire *tap
	back *valve
	q    stack.QueueingDiscipline
	// attached says a NIC owns q (and closes it with its stack).
	attached bool

	probe net.Conn
	rt    rtts
	// queue is the qdisc's backlog as a delay, sampled as each probe is
	// sent.
	queue rtts
	// The UDP probe's answered echoes (urt) and every echo whose fate is
	// known (udpSent: its RTT, 0 when lost), and the bytes each stream
	// delivered (index: the stream's id).
	urt         rtts
	udpSent     rtts
	streamBytes []atomic.Uint64
	idleRTT     time.Duration
	start       time.Time
	received    atomic.Uint64
	// contentErr is the first stream corruption a receiver found.
	contentErr atomic.Pointer[error]

	stopping atomic.Bool
	wg       sync.WaitGroup
	closeMu  sync.Mutex
	// +checklocks:closeMu
	closers []io.Closer
	// +checklocks:closeMu
	tornDown bool
}

// setUpFault, when set (by tests), is called after each set-up step and
// fails it by returning an error.
var setUpFault func(step string) error

// setUp builds the stacks and the qdisc, then starts the receivers and the
// echo server on B, the probe and the bulk senders on A. On error, what
// it started is left for tearDown.
func (h *harness) setUp() error {
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"stacks", h.setUpStacks},
		{"servers", h.startServers},
		{"probe", h.startProbe},
		{"udp probe", h.startSparse},
		{"senders", h.startSenders},
	} {
		if err := step.run(); err != nil {
			return err
		}
		if setUpFault != nil {
			if err := setUpFault(step.name); err != nil {
				return err
			}
		}
	}
	return nil
}

// track registers what tearDown must close; after tearDown it closes c at
// once.
func (h *harness) track(c io.Closer) {
	h.closeMu.Lock()
	defer h.closeMu.Unlock()
	if h.tornDown {
		c.Close()
		return
	}
	h.closers = append(h.closers, c)
}

// tearDown stops the streams and the probe, waits for every goroutine of
// the run, and destroys both stacks (and with A, the qdisc; a qdisc no
// NIC took is closed here). It is safe on a partial set-up and more than
// once.
func (h *harness) tearDown() {
	h.closeMu.Lock()
	if h.tornDown {
		h.closeMu.Unlock()
		return
	}
	h.tornDown = true
	closers := h.closers
	h.closeMu.Unlock()
	h.stopping.Store(true)
	for _, c := range closers {
		c.Close()
	}
	h.wg.Wait()
	if h.back != nil {
		h.back.closed.Store(true) // nothing re-enters the sender now (see valve)
	}
	if h.sb != nil {
		h.sb.Destroy()
	}
	if h.sa != nil {
		h.sa.Destroy()
	}
	if h.q != nil && !h.attached {
		h.q.Close()
	}
}
