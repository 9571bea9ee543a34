// Package tbf is a token bucket filter for gVisor's netstack, faithful to
// Linux's net/sched/sch_tbf.c: a rate bucket of Burst bytes, an optional
// peak-rate bucket of MTU bytes, and a backlog bounded in bytes by Limit or
// by Latency, as `tc qdisc add ... tbf` configures them (Parse reads
// tc-tbf(8)'s words, linklayer atm's cell framing included, and String
// prints `tc qdisc show`'s line), and optionally a
// packet bucket beside them (PacketRate, PacketBurst, as tc police's
// pkt_rate and pkt_burst), so that a flood of small packets is held to a
// packet rate whatever its bytes. It is a gate (the buckets) over a child
// queue (a byte FIFO, or fq_codel), drained by package dispatch, as Linux's
// tbf gates its child qdisc.
//
// Token accounting is tbf_dequeue's, in nanoseconds of credit. For the head
// packet of length L at time now:
//
//	toks  = min(now - t_c, buffer)            buffer = TimeNS(Burst)
//	ptoks = min(toks + ptokens, mtu) - TimeNS_peak(L)   (with a peak rate)
//	toks  = min(toks + tokens, buffer) - TimeNS(L)
//
// and the packet leaves when both are >= 0; otherwise the queue waits on
// the qdisc's one timer for the larger deficit and counts an overlimit.
// The largest packet the bucket can pass is min(Burst, MTU): a larger
// host-GSO packet is cut into pieces that fit (package gso), as Linux's
// tbf_segment does; any other is refused as too long and counted, and New
// refuses a configuration whose lower link could hand in such packets. A
// packet is charged what it puts on the wire (gso.WireSize, Linux's
// qdisc_pkt_len_init); on the receive path (NewTo) a GRO aggregate is
// charged as the segments it was (see receivedSize).
//
// Late wake-ups: a Go timer can fire a millisecond late, longer than a
// small bucket lasts, and in Linux's accounting the credit that accrues
// meanwhile is lost. Here each packet is booked at its ideal departure
// (when its tokens sufficed, not before it arrived), so a late pass sends
// what Linux's tbf, woken on time, would already have sent, and nothing
// earlier. That also makes wake-ups cheap to ration: the timer fires at
// most once per Slack (docs/results.md, Small bursts, has the figures).
//
// Many lanes: with Lanes > 1, packets are spread over that many queues by
// pkt.Hash, each with its own dispatcher, all drawing on one bucket (a
// single word moved by compare-and-swap without a peak rate, a short lock
// with one) and one byte limit (dispatch.Budget): the bytes queued in all
// the lanes never pass Limit, and one busy lane may fill it. While lanes
// contend at the limit, a lane refused in the last 100 ms is kept its
// share (Limit over the contending lanes, at least 64 KiB): another lane
// holding its own share is then refused with the backlog under Limit,
// where Linux's one queue would take the packet, so that no lane's
// dispatcher idles while its senders are refused.
//
// Changes in place: Change is Linux's tbf_change (`tc qdisc change`): the
// buckets and the limit change under the queue, which keeps what it holds,
// in order; a ceiling can be removed and set again. NewGate gives a
// running fifo or fq_codel a ceiling the same way (runsc qdisc change).
//
// Where this differs from gVisor's upstream tbf: the peak-rate bucket; a
// backlog bound in bytes or time, not packets; no division on the packet
// path (rate.Rate); one timer for the qdisc's life, rationed; `tc
// -s`-style statistics; Overhead and MPU; and every invalid Config an
// error that names the setting, never a panic.
package tbf

import (
	"fmt"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
	"github.com/netqdisc/netqdisc/pkg/qdisc/hrtimer"
)

// DefaultSlack is Slack's default: the qdisc's timer wakes at most 125
// times a second, a small fraction of a core whatever wakes the thread
// (docs/results.md, Small bursts, has the measured cost). A packet that
// waits leaves at most this (plus the timer's granularity) late, usually
// much less, since arriving packets send what is due; the rate holds
// because late departures are caught up. With the granularity it stays
// under 10 ms, so a bucket of 10 ms of rate (tc's usual advice) still
// bounds what leaves back to back. Set a smaller Slack, or NoSlack, for a
// smoother wire at more CPU.
const DefaultSlack = 8 * time.Millisecond

// NoSlack, as Config.Slack, fires every timer at the departure time, however
// often that is.
const NoSlack time.Duration = -1

// MaxLanes is the most lanes (dispatchers) one bucket may have.
const MaxLanes = 1024

// DefaultLimitPackets is the backlog, in full-size packets of the lower
// link, when neither Limit nor Latency is given: runsc's queue length.
const DefaultLimitPackets = 1000

// minPacketBytes is the smallest packet the ring is sized for: an IPv4
// header alone. The ring's packet bound is Limit/minPacketBytes+1, so for
// every packet a stack sends the byte limit is the one that binds, as in
// Linux's bfifo; the ring grows only as needed. Packets shorter than that
// (only a raw socket sends them, and Linux's bfifo takes any number of
// empty ones) may find the ring full before the limit: the bound keeps
// them from growing it without end.
const minPacketBytes = 20

// Config is a token bucket filter's settings, in the units of
// `tc qdisc add ... tbf`.
type Config struct {
	// Rate is the long-term rate in bytes per second. Required, unless a
	// PacketRate alone is the ceiling (then Rate and Burst are 0).
	Rate uint64
	// Burst is the rate bucket's depth in bytes: the most that may leave
	// at once after an idle spell. Required with Rate; at least the lower
	// link's largest packet.
	Burst uint32
	// PeakRate, if not 0, is a second bucket's rate in bytes per second,
	// above Rate, that bounds how fast the Burst may leave.
	PeakRate uint64
	// MTU is the peak bucket's depth in bytes; required with PeakRate.
	// Without one it shapes nothing, as tc's mtu then only sizes the rate
	// table's cells, which Linux ignores since 3.8.
	MTU uint32
	// PacketRate, if not 0, is a third bucket's rate in packets per
	// second, as tc police's pkt_rate: a packet leaves when every bucket
	// allows it, so a flood of small packets is held to it whatever its
	// bytes. PacketBurst is that bucket's depth in packets (pkt_burst),
	// required with it.
	PacketRate  uint64
	PacketBurst uint32
	// Limit is the most bytes that may wait in the queue.
	Limit uint32
	// Latency is the most time a packet may wait: Limit is computed from
	// it. Give Limit or Latency, not both; with neither the limit is
	// DefaultLimitPackets full-size packets.
	Latency time.Duration
	// Lanes is the number of lanes (a queue and its dispatcher each, as
	// package dispatch has them) that packets are spread over by pkt.Hash,
	// all drawing from the one bucket; 0 means 1. runsc-flags uses
	// GOMAXPROCS, as for fifo.
	Lanes int
	// Slack is the least time between two wake-ups of the qdisc's one
	// timer, which serves every lane. A lane that waits now and then is
	// woken at its head packet's departure time; lanes that wait for
	// packet after packet are woken at most once per Slack, and each
	// wake-up sends everything that came due since the last, so packets
	// may leave up to Slack late and back to back. Meanwhile a packet sent
	// on any lane sends what is due from its own goroutine, with no
	// wake-up (on the send path; the receive path's arrivals only queue). Nothing leaves
	// earlier than Linux's tbf would send it, and what is sent late is
	// caught up (see Late wake-ups). 0 means DefaultSlack, or with a
	// child that bounds it (a SlackBounder: fq_codel) the smaller of the
	// two; NoSlack wakes at every departure time, as Linux's watchdog
	// does, for the smoothest wire at the most CPU.
	Slack time.Duration
	// Overhead is added to every packet's length before it is charged, and
	// MPU is the least a packet is charged, as tc's "overhead" and "mpu".
	// Both are 0 to MaxOverhead (MaxMPU) bytes, as Linux's u16 fields are,
	// and smaller than Burst (and than MTU with a peak rate): see Check.
	Overhead int32
	MPU      uint32
	// ATM charges every packet, after Overhead and MPU, as the 53-byte ATM
	// cells that carry it 48 bytes a cell, as tc's "linklayer atm" (or
	// "adsl") does: for a link that is ATM further on (ADSL), so that the
	// rate is the line's.
	ATM bool
	// Child, if not nil, is the tbf's child qdisc in place of its byte
	// FIFO, as `tc qdisc add dev eth0 parent 1: fq_codel` grafts one under
	// a tbf: any qdisc.Queue (fq_codel's is fqcodel.NewQueue). The buckets
	// charge each packet when the child hands it over, and the child's own
	// limits bound the queue, so Limit and Latency must be 0 (but for a
	// ByteLimiter, which also takes Limit, given or by default) and there
	// is one queue. New takes the child over (Close purges it); Change keeps
	// it, so a Change's Child is nil or the one in force. A child that is
	// a fmt.Stringer is shown by String, and one that keeps counters of
	// its own (qdisc.XStatser) by TCStats.
	Child qdisc.Queue
}

// SlackBounder is a child queue that bounds the Slack of the timer above
// it: fq_codel, whose CoDel would drop a sparse flow's packet that waited
// a Slack past its target.
type SlackBounder interface {
	MaxSlack() time.Duration
}

// Discipline is a token bucket filter qdisc.
type Discipline struct {
	child qdisc.Queue
	lanes dispatch.Group
	// link and splitsGSO are what New was given, for Change.
	link      stack.LinkEndpoint
	splitsGSO bool
	// maxSize is the largest packet the buckets pass, for the receive
	// path's charge (receivedSize); Change moves it, under mu, and the
	// packet path reads it without.
	maxSize atomic.Uint32 // +checklocksignore

	mu sync.Mutex
	// cfg is the configuration in force: as given, with Limit and Slack
	// filled in.
	// +checklocks:mu
	cfg Config
}

var _ stack.QueueingDiscipline = (*Discipline)(nil)

// New returns a token bucket filter on lower, timed by clock, and starts its
// dispatcher. It returns a *ConfigError for every invalid cfg.
func New(lower stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	if lower == nil {
		return nil, fmt.Errorf("tbf: no lower link endpoint")
	}
	return newTo(lower, lower, clock, cfg, true)
}

// NewTo is New with the departures going to out rather than to a link's
// WritePackets: the receive-path shaper (package ingress) delivers them to
// the stack. Its passes run only on its own goroutines, its dispatchers'
// and its timer's, never on the goroutine that calls Enqueue (see
// dispatch.Config.QueueOnly). link is the link the packets cross, whose MTU, header and
// host-GSO size bound them (received packets cannot be cut into pieces),
// and whose MTU, as it is now, tells a received GRO/GSO aggregate's
// segments (see receivedSize).
func NewTo(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, cfg Config) (*Discipline, error) {
	return newTo(out, link, clock, cfg, false)
}

// newTo is NewTo; splitsGSO says that host-GSO packets larger than the
// bucket are cut into pieces, so that the link's GSO size does not bound
// the burst: the send path. Without it, packets are charged as received
// (receivedSize).
func newTo(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, cfg Config, splitsGSO bool) (*Discipline, error) {
	if out == nil || link == nil {
		return nil, fmt.Errorf("tbf: no link endpoint")
	}
	if clock == nil {
		return nil, fmt.Errorf("tbf: no clock")
	}
	cfg, maxSize, err := check(link, cfg, splitsGSO)
	if err != nil {
		return nil, err
	}
	d := &Discipline{link: link, splitsGSO: splitsGSO}
	d.maxSize.Store(maxSize)
	d.child = cfg.Child
	d.setChild(d.child, cfg) // not running yet: no lock
	slack := cfg.slackInForce()
	if cfg.Slack == 0 {
		cfg.Slack = slack // the Slack in force
	}
	d.mu.Lock()
	d.cfg = cfg
	d.mu.Unlock()
	lanes := dispatch.Config{
		Lower:          out,
		MaxPackets:     int(cfg.Limit/minPacketBytes) + 1,
		MaxPacketBytes: maxSize,
		Gate:           newGate(cfg),
		Clock:          clock,
		Slack:          slack,
	}
	if !splitsGSO { // the receive path
		lanes.Size = receivedSize(link.MTU(), &d.maxSize)
		lanes.QueueOnly = true
	}
	switch {
	case d.child != nil:
		lanes.Queue = d.child
		if _, ok := d.child.(qdisc.Shaper); ok {
			// A child that holds its packets back on its own (netem's
			// delay) is timed to the microsecond, as htb's such leaves.
			lanes.Clock = hrtimer.New(clock)
		}
	case cfg.Lanes > 1:
		lanes.Budget = dispatch.NewBudget(uint64(cfg.Limit)) // shared by the lanes
	default:
		lanes.MaxBytes = uint64(cfg.Limit) // the one lane's own: no atomic per packet
	}
	d.lanes.Init(cfg.Lanes, lanes)
	d.lanes.Start()
	return d, nil
}

// receivedSize returns what the receive path charges a packet, for a link
// of the given MTU and buckets that pass at most maxSize bytes: a GRO/GSO
// aggregate as the segments it stands for (gso.ReceivedWireSize), as
// Linux's tbf on ifb charges one, every other packet its size. An aggregate
// whose segments add up to more than maxSize, though it fits itself, is
// charged maxSize: Linux would cut it into its segments (tbf_segment), as
// package ingress cuts it before it gets here (gso.SplitReceived), and one
// that could not be cut is not dropped, for that would drop every large
// aggregate under a bucket that holds just the link's host-GSO maximum,
// which NewTo accepts (Kubernetes' 64 KiB + 14 burst).
func receivedSize(mtu uint32, maxSize *atomic.Uint32) func(*stack.PacketBuffer) uint64 {
	return func(pkt *stack.PacketBuffer) uint64 {
		bound := uint64(maxSize.Load())
		size := gso.ReceivedWireSize(pkt, mtu)
		if size > bound && uint64(pkt.Size()) <= bound {
			return bound
		}
		return size
	}
}

// slackInForce is the timer's Slack for c (see Config.Slack): as given,
// 0 for NoSlack, and for 0 DefaultSlack, or with a SlackBounder child at most
// half its target.
func (c Config) slackInForce() time.Duration {
	switch {
	case c.Slack < 0:
		return 0
	case c.Slack > 0:
		return c.Slack
	case c.Child != nil:
		if b, ok := c.Child.(SlackBounder); ok {
			return max(min(DefaultSlack, b.MaxSlack()), 0)
		}
	}
	return DefaultSlack
}

// WritePacket implements stack.QueueingDiscipline.WritePacket. It queues
// pkt, taking a reference of its own, or answers ErrClosedForSend after
// Close, ErrMessageTooLong for a packet larger than the buckets can pass,
// and ErrNoBufferSpace when the backlog is full; the last two count drops.
func (d *Discipline) WritePacket(pkt *stack.PacketBuffer) tcpip.Error {
	return d.Enqueue(pkt, pkt.Hash)
}

// Enqueue is WritePacket with the queue chosen by hash rather than by
// pkt.Hash (which only gVisor's TCP sets, on the send path).
func (d *Discipline) Enqueue(pkt *stack.PacketBuffer, hash uint32) tcpip.Error {
	return d.lanes.Lane(hash).Enqueue(pkt)
}

// Close implements stack.QueueingDiscipline.Close. Packets still queued
// are released and counted as drops; the dispatcher has exited when Close
// returns. Close is idempotent and safe against concurrent WritePacket.
func (d *Discipline) Close() { d.lanes.Close() }

// Lateness returns how late the queues' waits for tokens ended: the time
// from each booked departure to the pass that sent it (run by the timer,
// or by an arriving packet), one sample per wait.
func (d *Discipline) Lateness() qdisc.HistogramSnapshot { return d.lanes.Lateness() }

// Wakeups returns how many times the qdisc's one timer has fired. With
// the default Slack that is at most 125 a second, however many queues.
func (d *Discipline) Wakeups() uint64 { return d.lanes.Wakeups() }

// Quiescent reports whether every queue is idle or waiting for its
// departure: nothing runs until a timer fires or a packet arrives. Tests
// use it to step a clock.
func (d *Discipline) Quiescent() bool { return d.lanes.Quiescent() }

// Lanes returns the number of lanes.
func (d *Discipline) Lanes() int { return len(d.lanes.Lanes) }

// MaxPacketBytes returns the most the buckets pass in one packet: no
// packet is charged more (see receivedSize), and package ingress cuts a
// received aggregate that stands for more on the wire into pieces that
// fit.
func (d *Discipline) MaxPacketBytes() uint32 { return d.maxSize.Load() }

// Stats returns the qdisc's counters (with a child, its drops and backlog
// included).
func (d *Discipline) Stats() qdisc.Stats { return d.lanes.Stats() }

// TCStats is what `tc -s qdisc show` prints for the tbf: its counters
// and, with a child that keeps its own (qdisc.XStatser), those.
func (d *Discipline) TCStats() string {
	s := d.Stats().String()
	d.Child(func(c qdisc.Queue) {
		if x, ok := c.(qdisc.XStatser); ok {
			s += "\n" + x.TCXStats()
		}
	})
	return s
}

// Child calls f with the tbf's child (nil: its byte FIFO, which has no
// counters of its own) under the lock its lane guards it with, to read
// the child's own counters.
func (d *Discipline) Child(f func(child qdisc.Queue)) {
	if d.child == nil {
		f(nil)
		return
	}
	d.lanes.Lanes[0].Locked(func() { f(d.child) })
}

// Config returns the configuration in force, with Limit (and, when 0 was
// given, Slack) computed.
func (d *Discipline) Config() Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cfg
}

// String prints the configuration as `tc qdisc show` does (see
// Config.String): "tbf rate 10Mbit burst 12500b lat 50ms".
func (d *Discipline) String() string { return d.Config().String() }
