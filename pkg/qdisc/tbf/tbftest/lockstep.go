package tbftest

import (
	"math"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// Shaper is a tbf on some path, as the harness drives it.
type Shaper interface {
	// Write offers a packet as it arrives and reports whether the shaper
	// queued it; the caller keeps its reference.
	Write(pkt *stack.PacketBuffer) bool
	// Quiescent reports whether nothing runs until a timer fires or a
	// packet arrives.
	Quiescent() bool
	Stats() qdisc.Stats
	// Limit is the backlog bound in force, in bytes.
	Limit() uint32
}

// Make builds the shaper under test: configured as cfg, timed by clock,
// across link (whose MTU bounds its packets), its departures recorded by
// link. It closes the shaper when t ends.
type Make func(t *testing.T, cfg tbf.Config, clock tcpip.Clock, link *qdisctest.Link) Shaper

// Lockstep drives a shaper and the Linux model with the same arrivals on a
// faketime.ManualClock, stepping the clock from event to event (an
// arrival, or the model's watchdog) with the shaper's timers firing at the
// departures, as Linux's watchdog does (NoSlack).
type Lockstep struct {
	Clock *faketime.ManualClock
	Link  *qdisctest.Link
	S     Shaper
	M     *Model
	Start int64
	// Changes are done at their times (after the departures due then,
	// before the arrivals), in order: a test changes the shaper and the
	// model there (tbf_change).
	Changes []Change
}

// Change is something done to the shaper and the model at At (ns after
// Start), given the time.
type Change struct {
	At int64
	Do func(now int64)
}

// NowNS reads c in nanoseconds.
func NowNS(c tcpip.Clock) int64 { return int64(c.NowMonotonic().Sub(tcpip.MonotonicTime{})) }

// Option changes a Lockstep's model.
type Option func(*Model)

// WithChildModel gives the model's tbf the child model (see
// Model.WithChild), for a shaper whose tbf has a child.
func WithChildModel(child ChildModel) Option { return func(m *Model) { m.WithChild(child) } }

// WithRingBound bounds the model's queue at limit/minPacket+1 packets
// besides its limit in bytes, as netqdisc's tbf bounds its ring, so that
// packets shorter than minPacket bytes (an IPv4 header: only a raw socket
// sends them) cannot grow it without end. Linux's bfifo counts bytes
// alone; the lockstep of hostile packets, which may be that short, needs
// it.
func WithRingBound(minPacket uint32) Option {
	return func(m *Model) { m.minPacket = uint64(minPacket) }
}

// NewLockstep makes the shaper mk builds with cfg (NoSlack) on a link of
// linkMTU, and its model.
func NewLockstep(t *testing.T, mk Make, cfg tbf.Config, linkMTU uint32, opts ...Option) *Lockstep {
	t.Helper()
	cfg.Slack = tbf.NoSlack
	ls := &Lockstep{Clock: faketime.NewManualClock()}
	ls.Link = qdisctest.NewLink(ls.Clock)
	ls.Link.LinkMTU = linkMTU
	ls.S = mk(t, cfg, ls.Clock, ls.Link)
	ls.Start = NowNS(ls.Clock)
	ls.M = NewModel(cfg, ls.S.Limit(), ls.Start)
	for _, o := range opts {
		o(ls.M)
	}
	return ls
}

// Run writes the arrivals at their times, each packet with hash(seq), and
// after every step, the shaper quiescent, calls check. The shaper must
// queue and drop the same packets as the model.
func (ls *Lockstep) Run(t *testing.T, arrivals []Arrival, hash func(seq uint64) uint32, check func(next int64)) {
	t.Helper()
	i, c := 0, 0
	for seq := uint64(0); ; {
		next := int64(math.MaxInt64)
		if i < len(arrivals) {
			next = ls.Start + arrivals[i].At
		}
		if ls.M.Watchdog >= 0 && ls.M.Watchdog < next {
			next = ls.M.Watchdog
		}
		if c < len(ls.Changes) && ls.Start+ls.Changes[c].At < next {
			next = ls.Start + ls.Changes[c].At
		}
		if next == math.MaxInt64 {
			return
		}
		ls.Clock.Advance(time.Duration(next - NowNS(ls.Clock)))
		qdisctest.WaitQuiescent(t, ls.S)
		if ls.M.Watchdog == next {
			ls.M.Dequeue(next)
		}
		for ; c < len(ls.Changes) && ls.Start+ls.Changes[c].At == next; c++ {
			ls.Changes[c].Do(next)
			qdisctest.WaitQuiescent(t, ls.S)
		}
		for ; i < len(arrivals) && ls.Start+arrivals[i].At == next; i++ {
			pkt := qdisctest.MakePacket(int(arrivals[i].Size), hash(seq), seq)
			queued := ls.S.Write(pkt)
			pkt.DecRef()
			if ok := ls.M.Enqueue(next, seq, arrivals[i].Size); ok != queued {
				t.Fatalf("t=%dns packet %d (%d bytes): shaper queued=%v, Linux model queued=%v", next-ls.Start, seq, arrivals[i].Size, queued, ok)
			}
			seq++
			qdisctest.WaitQuiescent(t, ls.S)
		}
		check(next)
	}
}

// RunConformance runs the arrivals in lockstep with the Linux model and
// checks after every step that the shaper has sent exactly the packets the
// model has, and at the end that it sent each at exactly the same instant,
// its statistics, and the bucket's bounds.
func RunConformance(t *testing.T, mk Make, cfg tbf.Config, linkMTU uint32, arrivals []Arrival, opts ...Option) []qdisctest.Record {
	t.Helper()
	ls := NewLockstep(t, mk, cfg, linkMTU, opts...)
	recs := ls.Conform(t, arrivals)
	CheckBounds(t, cfg, recs)
	return recs
}

// Conform runs the arrivals (and ls.Changes) in lockstep with the model
// and checks that the shaper sent exactly the packets the model did, at
// the same instants, and its statistics; it returns the departures.
func (ls *Lockstep) Conform(t *testing.T, arrivals []Arrival) []qdisctest.Record {
	t.Helper()
	link, s, m, start := ls.Link, ls.S, ls.M, ls.Start
	ls.Run(t, arrivals, func(uint64) uint32 { return 0 }, func(next int64) {
		if got := len(link.Records()); got != len(m.Sent) {
			t.Fatalf("t=%dns: shaper has sent %d packets, Linux's tbf_dequeue %d", next-start, got, len(m.Sent))
		}
	})
	recs := link.Records()
	for k, r := range recs {
		want := m.Sent[k]
		if r.Seq != want.Seq || uint32(r.Size) != want.Size || int64(r.At.Sub(tcpip.MonotonicTime{})) != want.At {
			t.Fatalf("departure %d: shaper sent packet %d (%d bytes) at %dns; Linux sends packet %d (%d bytes) at %dns",
				k, r.Seq, r.Size, int64(r.At.Sub(tcpip.MonotonicTime{}))-start, want.Seq, want.Size, want.At-start)
		}
	}
	if err := link.Err(); err != nil {
		t.Fatalf("content: %v", err)
	}
	st := s.Stats()
	var bytes uint64
	for _, p := range m.Sent {
		bytes += uint64(p.Size)
	}
	if st.Packets != uint64(len(m.Sent)) || st.Bytes != bytes || st.Drops != uint64(m.AllDrops()) || st.BacklogPackets != 0 || st.BacklogBytes != 0 {
		t.Errorf("Stats %+v; want %d packets, %d bytes, %d drops, no backlog", st, len(m.Sent), bytes, m.AllDrops())
	}
	return recs
}

// CheckBounds asserts the token bucket's promise over every window of
// departures [a, b]: the time the packets cost at the rate is at most the
// bucket plus the window (so bytes never exceed Burst + Rate*window, and
// from the start never Burst + Rate*t), and likewise for the peak bucket
// and, in packets, the packet bucket.
func CheckBounds(t *testing.T, cfg tbf.Config, recs []qdisctest.Record) {
	t.Helper()
	type bound struct {
		name  string
		r     rate.Rate
		depth uint32
	}
	bounds := []bound{{"rate", rate.New(cfg.Rate).WithOverhead(cfg.Overhead).WithMPU(cfg.MPU), cfg.Burst}}
	if cfg.PeakRate != 0 {
		bounds = append(bounds, bound{"peakrate", rate.New(cfg.PeakRate).WithOverhead(cfg.Overhead).WithMPU(cfg.MPU), cfg.MTU})
	}
	if cfg.PacketRate != 0 {
		checkPacketBound(t, cfg, recs)
	}
	for _, b := range bounds {
		depth := int64(b.r.TimeNS(b.depth))
		for a := range recs {
			var cost int64
			var bytes uint64
			ta := int64(recs[a].At.Sub(tcpip.MonotonicTime{}))
			for k := a; k < len(recs); k++ {
				cost += int64(b.r.TimeNS(uint32(recs[k].Size)))
				bytes += uint64(recs[k].Size)
				window := int64(recs[k].At.Sub(tcpip.MonotonicTime{})) - ta
				if cost > depth+window {
					t.Fatalf("%s bucket: departures %d..%d cost %dns in a %dns window; bucket holds %dns", b.name, a, k, cost, window, depth)
				}
				// In bytes, allowing TimeNS's rounding down (under 1 ns a packet).
				limit := float64(b.r.Len(b.depth)) + float64(b.r.BytesPerSecond())*float64(window+int64(k-a+1))/1e9
				if float64(bytes)+float64(k-a+1)*float64(b.r.Overhead()) > limit+1 {
					t.Fatalf("%s bucket: departures %d..%d carried %d bytes in %dns; at most %.0f", b.name, a, k, bytes, window, limit)
				}
			}
		}
	}
}

// checkPacketBound asserts the packet bucket's promise: over every window
// of departures, the packets cost at most its depth plus the window (at
// most PacketBurst + PacketRate*window packets).
func checkPacketBound(t *testing.T, cfg tbf.Config, recs []qdisctest.Record) {
	t.Helper()
	cost := int64(rate.New(cfg.PacketRate).TimeNS(1))
	depth := cost * int64(cfg.PacketBurst)
	for a := range recs {
		ta := int64(recs[a].At.Sub(tcpip.MonotonicTime{}))
		for k := a; k < len(recs); k++ {
			window := int64(recs[k].At.Sub(tcpip.MonotonicTime{})) - ta
			if int64(k-a+1)*cost > depth+window {
				t.Fatalf("packet bucket: departures %d..%d, %d packets in a %dns window; at most %d + %d/s", a, k, k-a+1, window, cfg.PacketBurst, cfg.PacketRate)
			}
		}
	}
}

// Case is one conformance case: a configuration, the link's MTU and the
// arrivals.
type Case struct {
	Name     string
	Cfg      tbf.Config
	LinkMTU  uint32
	Arrivals []Arrival
}

// Cases are the conformance cases every tbf path is held to.
func Cases() []Case {
	return []Case{
		{"1mbit backlog full-size", tbf.Config{Rate: 1 * Mbit, Burst: 10 << 10, Limit: 1 << 20}, 1500, Backlog(0, 120, Fixed(1514))},
		{"10mbit backlog odd sizes", tbf.Config{Rate: 10 * Mbit, Burst: 12500, Limit: 1 << 20}, 1500, Backlog(0, 400, Odd(1))},
		{"100mbit two-packet burst", tbf.Config{Rate: 100 * Mbit, Burst: 3028, Limit: 1 << 20}, 1500, Backlog(0, 300, Odd(2))},
		// ~1 packet per 0.8 µs: ~1 Gbit/s offered.
		{"1gbit random arrivals above the rate", tbf.Config{Rate: 1 * Gbit, Burst: 64 << 10, Limit: 256 << 10}, 1500, Poisson(3, 0, 600, 800, Odd(3))},
		{"10gbit backlog odd sizes", tbf.Config{Rate: 10 * Gbit, Burst: 128 << 10, Limit: 1 << 20}, 1500, Concat(Backlog(0, 300, Odd(4)), Backlog(50_000, 300, Odd(5)))},
		{"bucket refills only to its depth after idle", tbf.Config{Rate: 10 * Mbit, Burst: 6056, Limit: 1 << 20}, 1500,
			Concat(Backlog(0, 20, Fixed(1514)), Backlog(int64(time.Second), 20, Fixed(1514)), Backlog(int64(3*time.Second), 3, Fixed(1514)), Backlog(int64(3*time.Second+time.Millisecond), 20, Fixed(1514)))},
		{"peak rate bounds the burst", tbf.Config{Rate: 10 * Mbit, Burst: 64 << 10, PeakRate: 100 * Mbit, MTU: 1514, Limit: 1 << 20}, 1500,
			Concat(Backlog(0, 150, Odd(6)), Backlog(int64(500*time.Millisecond), 60, Fixed(1514)))},
		{"peak bucket deeper than the rate bucket", tbf.Config{Rate: 1 * Mbit, Burst: 3000, PeakRate: 2 * Mbit, MTU: 9000, Limit: 1 << 20}, 1486,
			Concat(Backlog(0, 30, Odd(7)), Poisson(8, int64(time.Second), 60, 5e6, Odd(9)))},
		{"limit drops what does not fit", tbf.Config{Rate: 10 * Mbit, Burst: 3028, Limit: 10_000}, 1500, Concat(Backlog(0, 40, Odd(10)), Poisson(11, 0, 200, 500_000, Odd(12)))},
		// 20 Mbit/s offered.
		{"latency bound", tbf.Config{Rate: 10 * Mbit, Burst: 12500, Latency: 5 * time.Millisecond}, 1500, Poisson(13, 0, 300, 600_000, Fixed(1514))},
		{"overhead and mpu", tbf.Config{Rate: 10 * Mbit, Burst: 12500, Limit: 1 << 20, Overhead: 24, MPU: 84}, 1500, Backlog(0, 200, Odd(14))},
	}
}
