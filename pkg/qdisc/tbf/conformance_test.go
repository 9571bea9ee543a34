package tbf_test

import (
	"math"
	"math/rand"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

const (
	mbit = 125_000 // bytes per second in 1 Mbit/s
	gbit = 1000 * mbit
)

type arrival struct {
	at   int64 // ns after the qdisc was made
	size uint32
}

func nowNS(c tcpip.Clock) int64 { return int64(c.NowMonotonic().Sub(tcpip.MonotonicTime{})) }

// backlog is n packets that all arrive at at.
func backlog(at int64, n int, size func(int) uint32) []arrival {
	a := make([]arrival, n)
	for i := range a {
		a[i] = arrival{at, size(i)}
	}
	return a
}

// poisson is n packets arriving at random, on average every gap ns.
func poisson(seed int64, start int64, n int, gap float64, size func(int) uint32) []arrival {
	rng := rand.New(rand.NewSource(seed))
	a := make([]arrival, n)
	t := float64(start)
	for i := range a {
		t += rng.ExpFloat64() * gap
		a[i] = arrival{int64(t), size(i)}
	}
	return a
}

func fixed(n uint32) func(int) uint32 { return func(int) uint32 { return n } }

// odd sizes: 61..1513, odd, from a seeded generator.
func odd(seed int64) func(int) uint32 {
	rng := rand.New(rand.NewSource(seed))
	return func(int) uint32 { return uint32(61 + 2*rng.Intn(727)) }
}

func concat(parts ...[]arrival) []arrival {
	var a []arrival
	for _, p := range parts {
		a = append(a, p...)
	}
	return a
}

// lockstep drives a tbf and the Linux model with the same arrivals on a
// faketime.ManualClock, stepping the clock from event to event (an
// arrival, or the model's watchdog) with the qdisc's timers firing at the
// departures, as Linux's watchdog does (NoSlack).
type lockstep struct {
	clock *faketime.ManualClock
	link  *qdisctest.Link
	d     *tbf.Discipline
	m     *linuxTBF
	start int64
}

func newLockstep(t *testing.T, cfg tbf.Config, linkMTU uint32) *lockstep {
	t.Helper()
	cfg.Slack = tbf.NoSlack
	ls := &lockstep{clock: faketime.NewManualClock()}
	ls.link = qdisctest.NewLink(ls.clock)
	ls.link.LinkMTU = linkMTU
	d, err := tbf.New(ls.link, ls.clock, cfg)
	if err != nil {
		t.Fatalf("tbf.New(%+v): %v", cfg, err)
	}
	t.Cleanup(d.Close)
	ls.d = d
	ls.start = nowNS(ls.clock)
	ls.m = newLinuxTBF(cfg, d.Config().Limit, ls.start)
	return ls
}

// run writes the arrivals at their times, each packet with hash(seq), and
// after every step, the qdisc quiescent, calls check. The qdisc must accept
// and drop the same packets as the model.
func (ls *lockstep) run(t *testing.T, arrivals []arrival, hash func(seq uint64) uint32, check func(next int64)) {
	t.Helper()
	i := 0
	for seq := uint64(0); ; {
		next := int64(math.MaxInt64)
		if i < len(arrivals) {
			next = ls.start + arrivals[i].at
		}
		if ls.m.watchdog >= 0 && ls.m.watchdog < next {
			next = ls.m.watchdog
		}
		if next == math.MaxInt64 {
			return
		}
		ls.clock.Advance(time.Duration(next - nowNS(ls.clock)))
		qdisctest.WaitQuiescent(t, ls.d)
		if ls.m.watchdog == next {
			ls.m.dequeue(next)
		}
		for ; i < len(arrivals) && ls.start+arrivals[i].at == next; i++ {
			pkt := qdisctest.MakePacket(int(arrivals[i].size), hash(seq), seq)
			werr := ls.d.WritePacket(pkt)
			pkt.DecRef()
			if ok := ls.m.enqueue(next, seq, arrivals[i].size); ok != (werr == nil) {
				t.Fatalf("t=%dns packet %d (%d bytes): qdisc said %v, Linux model accepted=%v", next-ls.start, seq, arrivals[i].size, werr, ok)
			}
			seq++
			qdisctest.WaitQuiescent(t, ls.d)
		}
		check(next)
	}
}

// runConformance runs the arrivals in lockstep with the Linux model and
// checks after every step that the qdisc has sent exactly the packets the
// model has, and at the end that it sent each at exactly the same instant.
func runConformance(t *testing.T, cfg tbf.Config, linkMTU uint32, arrivals []arrival) []qdisctest.Record {
	t.Helper()
	ls := newLockstep(t, cfg, linkMTU)
	link, d, m, start := ls.link, ls.d, ls.m, ls.start
	ls.run(t, arrivals, func(uint64) uint32 { return 0 }, func(next int64) {
		if got := len(link.Records()); got != len(m.sent) {
			t.Fatalf("t=%dns: qdisc has sent %d packets, Linux's tbf_dequeue %d", next-start, got, len(m.sent))
		}
	})
	recs := link.Records()
	for k, r := range recs {
		want := m.sent[k]
		if r.Seq != want.seq || uint32(r.Size) != want.size || int64(r.At.Sub(tcpip.MonotonicTime{})) != want.at {
			t.Fatalf("departure %d: qdisc sent packet %d (%d bytes) at %dns; Linux sends packet %d (%d bytes) at %dns",
				k, r.Seq, r.Size, int64(r.At.Sub(tcpip.MonotonicTime{}))-start, want.seq, want.size, want.at-start)
		}
	}
	if err := link.Err(); err != nil {
		t.Fatalf("content: %v", err)
	}
	st := d.Stats()
	var bytes uint64
	for _, p := range m.sent {
		bytes += uint64(p.size)
	}
	if st.Packets != uint64(len(m.sent)) || st.Bytes != bytes || st.Drops != uint64(m.drops) || st.BacklogPackets != 0 || st.BacklogBytes != 0 {
		t.Errorf("Stats %+v; want %d packets, %d bytes, %d drops, no backlog", st, len(m.sent), bytes, m.drops)
	}
	checkBounds(t, cfg, recs)
	return recs
}

// checkBounds asserts the token bucket's promise over every window of
// departures [a, b]: the time the packets cost at the rate is at most the
// bucket plus the window (so bytes never exceed Burst + Rate*window, and
// from the start never Burst + Rate*t), and likewise for the peak bucket.
func checkBounds(t *testing.T, cfg tbf.Config, recs []qdisctest.Record) {
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

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      tbf.Config
		linkMTU  uint32
		arrivals []arrival
	}{
		{
			name:     "1mbit backlog full-size",
			cfg:      tbf.Config{Rate: 1 * mbit, Burst: 10 << 10, Limit: 1 << 20},
			linkMTU:  1500,
			arrivals: backlog(0, 120, fixed(1514)),
		},
		{
			name:     "10mbit backlog odd sizes",
			cfg:      tbf.Config{Rate: 10 * mbit, Burst: 12500, Limit: 1 << 20},
			linkMTU:  1500,
			arrivals: backlog(0, 400, odd(1)),
		},
		{
			name:     "100mbit two-packet burst",
			cfg:      tbf.Config{Rate: 100 * mbit, Burst: 3028, Limit: 1 << 20},
			linkMTU:  1500,
			arrivals: backlog(0, 300, odd(2)),
		},
		{
			name:     "1gbit random arrivals above the rate",
			cfg:      tbf.Config{Rate: 1 * gbit, Burst: 64 << 10, Limit: 256 << 10},
			linkMTU:  1500,
			arrivals: poisson(3, 0, 600, 800, odd(3)), // ~1 packet per 0.8 µs: ~1 Gbit/s offered
		},
		{
			name:     "10gbit backlog odd sizes",
			cfg:      tbf.Config{Rate: 10 * gbit, Burst: 128 << 10, Limit: 1 << 20},
			linkMTU:  1500,
			arrivals: concat(backlog(0, 300, odd(4)), backlog(50_000, 300, odd(5))),
		},
		{
			name:     "bucket refills only to its depth after idle",
			cfg:      tbf.Config{Rate: 10 * mbit, Burst: 6056, Limit: 1 << 20},
			linkMTU:  1500,
			arrivals: concat(backlog(0, 20, fixed(1514)), backlog(int64(time.Second), 20, fixed(1514)), backlog(int64(3*time.Second), 3, fixed(1514)), backlog(int64(3*time.Second+time.Millisecond), 20, fixed(1514))),
		},
		{
			name:     "peak rate bounds the burst",
			cfg:      tbf.Config{Rate: 10 * mbit, Burst: 64 << 10, PeakRate: 100 * mbit, MTU: 1514, Limit: 1 << 20},
			linkMTU:  1500,
			arrivals: concat(backlog(0, 150, odd(6)), backlog(int64(500*time.Millisecond), 60, fixed(1514))),
		},
		{
			name:     "peak bucket deeper than the rate bucket",
			cfg:      tbf.Config{Rate: 1 * mbit, Burst: 3000, PeakRate: 2 * mbit, MTU: 9000, Limit: 1 << 20},
			linkMTU:  1486,
			arrivals: concat(backlog(0, 30, odd(7)), poisson(8, int64(time.Second), 60, 5e6, odd(9))),
		},
		{
			name:     "limit drops what does not fit",
			cfg:      tbf.Config{Rate: 10 * mbit, Burst: 3028, Limit: 10_000},
			linkMTU:  1500,
			arrivals: concat(backlog(0, 40, odd(10)), poisson(11, 0, 200, 500_000, odd(12))),
		},
		{
			name:     "latency bound",
			cfg:      tbf.Config{Rate: 10 * mbit, Burst: 12500, Latency: 5 * time.Millisecond},
			linkMTU:  1500,
			arrivals: poisson(13, 0, 300, 600_000, fixed(1514)), // 20 Mbit/s offered
		},
		{
			name:     "overhead and mpu",
			cfg:      tbf.Config{Rate: 10 * mbit, Burst: 12500, Limit: 1 << 20, Overhead: 24, MPU: 84},
			linkMTU:  1500,
			arrivals: backlog(0, 200, odd(14)),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := runConformance(t, tc.cfg, tc.linkMTU, tc.arrivals)
			if len(recs) == 0 {
				t.Fatal("nothing was sent")
			}
		})
	}
}
