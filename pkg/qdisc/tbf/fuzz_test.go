package tbf_test

import (
	"runtime"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf/tbftest"
)

// fuzzOps bounds the operations one input runs, so that each runs fast.
const fuzzOps = 200

// FuzzTBF runs a tbf whose configuration the input chooses (rates, burst,
// peak rate, limit or latency, 1 to 4 queues, slack, overhead and MPU,
// perhaps a packet rate, perhaps an fq_codel child with small limits;
// configurations New refuses
// are skipped) through operations the input chooses on a step clock:
// writes of hostile packets (0 to 65535 bytes, any header), clock steps
// that fire no timer (late wake-ups), firing the timers that came due,
// and at the end a drain or a Close with a backlog. After every operation
// it checks what a user relies on:
//   - packets and bytes are conserved: sent + dropped + queued = written,
//     and what the link got is what Stats says was sent;
//   - the backlog stays within the limit (fq_codel's packet limit with a
//     child);
//   - from the start, the packets sent never cost more than the bucket
//     plus the time since (Burst + Rate*t, overhead and MPU included), nor
//     more than the peak bucket allows;
//   - after Close, nothing is queued, every reference is released and no
//     goroutine is left.
//
// With one queue and no child it also runs the same arrivals in lockstep
// with tbftest's model of Linux's tbf (timers on time, NoSlack): the same
// packets leave at the same instants, and the same are dropped.
func FuzzTBF(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		in := qdisctest.NewInput(data)
		linkMTU := [...]uint32{1500, 9000, 576, 65000}[in.IntN(4)]
		cfg, fq, closeEarly := fuzzConfig(in, linkMTU)
		if fq != nil {
			child, err := fqcodel.NewQueue(*fq, linkMTU+14, nil)
			if err != nil {
				t.Skip(err)
			}
			cfg.Child, fq = child, new(fqcodel.Config)
			*fq = child.Config()
		}
		before := runtime.NumGoroutine()
		clock := qdisctest.NewStepClock()
		link := qdisctest.NewLink(clock)
		link.LinkMTU = linkMTU
		start := nowNS(clock)
		d, err := tbf.New(link, clock, cfg)
		if err != nil {
			t.Skip(err)
		}
		t.Cleanup(d.Close) // on failure; Close is idempotent
		r := &fuzzTBF{t: t, cfg: d.Config(), fq: fq, d: d, clock: clock, link: link, start: start}
		r.rate = rate.New(cfg.Rate).WithOverhead(cfg.Overhead).WithMPU(cfg.MPU)
		r.buffer = int64(r.rate.TimeNS(cfg.Burst))
		if cfg.PeakRate != 0 {
			r.peak = rate.New(cfg.PeakRate).WithOverhead(cfg.Overhead).WithMPU(cfg.MPU)
			r.mtu = int64(r.peak.TimeNS(cfg.MTU))
		}
		var arrivals []tbftest.Arrival
		for op := 0; op < fuzzOps && in.Len() > 0; op++ {
			switch in.IntN(8) {
			case 0, 1, 2, 3:
				pkt := qdisctest.HostilePacket(in, qdisctest.HostileSize(in))
				arrivals = append(arrivals, tbftest.Arrival{At: nowNS(clock) - start, Size: uint32(pkt.Size())})
				r.o.Offer(t, pkt, d.WritePacket(pkt))
			case 4, 5:
				clock.Advance(time.Duration(in.IntN(1<<16)) << (8 * in.IntN(4)))
			case 6:
				clock.Fire()
			case 7:
				clock.Advance(time.Duration(in.IntN(1<<16)) << (8 * in.IntN(4)))
				clock.Fire()
			}
			qdisctest.WaitQuiescent(t, d)
			r.check()
		}
		if !closeEarly {
			r.drain()
		}
		d.Close()
		st := d.Stats()
		r.o.CheckConserved(t, st)
		if st.BacklogPackets != 0 || st.BacklogBytes != 0 {
			t.Fatalf("backlog after Close: %+v", st)
		}
		r.o.Release(t)
		qdisctest.WaitGoroutines(t, before)

		if cfg.Lanes <= 1 && cfg.Child == nil {
			fuzzConformance(t, cfg, linkMTU, arrivals)
		}
	})
}

// fuzzConformance is tbftest.RunConformance with each packet known by its
// hash (its sequence number), not by its payload, which packets of fewer
// than 8 bytes cannot carry: the tbf and the Linux model, in lockstep,
// send the same packets at the same instants, drop the same, and the
// departures keep the bucket's bounds over every window.
func fuzzConformance(t *testing.T, cfg tbf.Config, linkMTU uint32, arrivals []tbftest.Arrival) {
	ls := tbftest.NewLockstep(t, makeDiscipline, cfg, linkMTU, tbftest.WithRingBound(tbf.MinPacketBytes))
	ls.Run(t, arrivals, func(seq uint64) uint32 { return uint32(seq) }, func(next int64) {
		if got := ls.Link.NumRecords(); got != len(ls.M.Sent) {
			t.Fatalf("t=%dns: the tbf has sent %d packets, Linux's tbf_dequeue %d", next-ls.Start, got, len(ls.M.Sent))
		}
	})
	recs := ls.Link.Records()
	var bytes uint64
	for k, rec := range recs {
		want := ls.M.Sent[k]
		if at := int64(rec.At.Sub(tcpip.MonotonicTime{})); uint64(rec.Hash) != want.Seq || uint32(rec.Size) != want.Size || at != want.At {
			t.Fatalf("departure %d: the tbf sent packet %d (%d bytes) at %dns; Linux sends packet %d (%d bytes) at %dns",
				k, rec.Hash, rec.Size, at-ls.Start, want.Seq, want.Size, want.At-ls.Start)
		}
		bytes += uint64(rec.Size)
	}
	if st := ls.S.Stats(); st.Packets != uint64(len(recs)) || st.Bytes != bytes || st.Drops != uint64(ls.M.AllDrops()) || st.BacklogPackets != 0 {
		t.Fatalf("Stats %+v; Linux: %d packets, %d bytes, %d drops, no backlog", st, len(recs), bytes, ls.M.AllDrops())
	}
	tbftest.CheckBounds(t, cfg, recs)
}

// fuzzConfig draws a tbf configuration for a link of linkMTU (plus a
// 14-byte header) from in, mostly within the bounds New enforces (overhead
// below the burst, an MPU of at most the burst and 65535, an fq_codel
// quantum of at most 1 MiB), and whether to Close with a backlog.
func fuzzConfig(in *qdisctest.Input, linkMTU uint32) (cfg tbf.Config, fq *fqcodel.Config, closeEarly bool) {
	linkMax := linkMTU + 14
	cfg = tbf.Config{
		Rate:  uint64(1+in.IntN(1<<16)) << in.IntN(32),
		Burst: linkMax + uint32(in.IntN(1<<16))<<in.IntN(8),
		Lanes: 1 + in.IntN(4),
	}
	maxSize := cfg.Burst
	if in.IntN(4) == 0 {
		cfg.PeakRate = cfg.Rate + uint64(1+in.IntN(1<<16))<<in.IntN(32)
		cfg.MTU = linkMax + uint32(in.IntN(1<<16))
		maxSize = min(maxSize, cfg.MTU)
	}
	switch in.IntN(4) {
	case 1:
		cfg.Latency = time.Duration(1+in.IntN(1<<16)) * time.Microsecond
	case 2, 3:
		cfg.Limit = maxSize + uint32(in.IntN(1<<16))<<in.IntN(6)
	}
	switch in.IntN(4) {
	case 0:
		cfg.Slack = tbf.NoSlack
	case 2, 3:
		cfg.Slack = time.Duration(in.IntN(1<<16)) * time.Microsecond / 4
	}
	if in.IntN(4) == 0 {
		cfg.Overhead = int32(in.IntN(int(min(cfg.Burst, 1<<16))))
	} else {
		cfg.Overhead = int32(in.IntN(64))
	}
	if in.IntN(4) == 0 {
		cfg.MPU = uint32(in.IntN(int(min(cfg.Burst, 1<<16-1)) + 1))
	}
	if in.IntN(4) == 0 {
		c := &fqcodel.Config{
			Limit:       uint32(1 + in.IntN(32)),
			Flows:       uint32(1 + in.IntN(8)),
			MemoryLimit: uint32(1+in.IntN(256)) << in.IntN(16),
			DropBatch:   uint32(1 + in.IntN(8)),
			NoECN:       in.IntN(2) == 1,
			Quantum:     uint32(in.IntN(4096)),
			Interval:    time.Duration(1+in.IntN(1<<16)) << in.IntN(16),
		}
		c.Target = c.Interval * time.Duration(in.IntN(257)) / 256
		fq, cfg.Lanes, cfg.Limit, cfg.Latency = c, 1, 0, 0
	}
	if in.IntN(4) == 0 {
		cfg.PacketRate = uint64(1+in.IntN(1<<16)) << in.IntN(12)
		cfg.PacketBurst = uint32(1 + in.IntN(64))
	}
	return cfg, fq, in.IntN(4) == 0
}

// fuzzTBF is one input's tbf and what the test knows of it.
type fuzzTBF struct {
	t     *testing.T
	cfg   tbf.Config      // in force
	fq    *fqcodel.Config // the fq_codel child's, in force
	d     *tbf.Discipline
	clock *qdisctest.StepClock
	link  *qdisctest.Link
	start int64
	o     qdisctest.Offered

	// The buckets, in nanoseconds of credit: a packet costs rate.TimeNS
	// (peak.TimeNS) of them.
	rate, peak  rate.Rate
	buffer, mtu int64
	// checked departures cost cost (pcost) in all.
	checked      int
	cost, pcost  int64
	lastDeparted int64
}

// check asserts the invariants, the qdisc quiescent.
func (r *fuzzTBF) check() {
	t, st := r.t, r.d.Stats()
	r.o.CheckConserved(t, st)
	sent, bytes := r.link.Count()
	if sent != st.Packets || bytes != st.Bytes {
		t.Fatalf("the link has %d packets (%d bytes); Stats %+v", sent, bytes, st)
	}
	if x, ok := fqcodel.ChildXStats(r.d); ok {
		if st.Drops != uint64(r.o.Refused)+x.Drops() || st.BacklogPackets > uint64(r.fq.Limit) || st.Bytes+st.BacklogBytes > r.o.AcceptedBytes {
			t.Fatalf("%d packets (%d bytes) accepted, %d refused; Stats %+v; fq_codel (limit %d) %+v", r.o.Accepted, r.o.AcceptedBytes, r.o.Refused, st, r.fq.Limit, x)
		}
	} else if st.Bytes+st.BacklogBytes != r.o.AcceptedBytes || st.Drops != uint64(r.o.Refused) || st.BacklogBytes > uint64(r.cfg.Limit) {
		t.Fatalf("%d bytes accepted, %d packets refused, limit %d; Stats %+v", r.o.AcceptedBytes, r.o.Refused, r.cfg.Limit, st)
	}
	// The bucket's promise from the start: everything sent by a departure
	// costs at most the bucket plus the time since the start.
	recs := r.link.Records()
	for _, rec := range recs[r.checked:] {
		at := int64(rec.At.Sub(tcpip.MonotonicTime{}))
		r.cost += int64(r.rate.TimeNS(uint32(rec.Size)))
		if r.cost > r.buffer+at-r.start {
			t.Fatalf("by %v after the start, %d packets left costing %dns at the rate; the bucket holds %dns", time.Duration(at-r.start), r.checked+1, r.cost, r.buffer)
		}
		if r.cfg.PeakRate != 0 {
			r.pcost += int64(r.peak.TimeNS(uint32(rec.Size)))
			if r.pcost > r.mtu+at-r.start {
				t.Fatalf("by %v after the start, %d packets left costing %dns at the peak rate; the peak bucket holds %dns", time.Duration(at-r.start), r.checked+1, r.pcost, r.mtu)
			}
		}
		if at < r.lastDeparted {
			t.Fatalf("departure %d at %dns, before the one before it (%dns)", r.checked, at, r.lastDeparted)
		}
		r.lastDeparted = at
		r.checked++
	}
}

// drain steps the clock, farther each time, until nothing is queued, and
// checks that every packet accepted was sent or dropped.
func (r *fuzzTBF) drain() {
	step := time.Millisecond
	for i := 0; r.d.Stats().BacklogPackets > 0; i++ {
		if i == 100 {
			r.t.Fatalf("backlog left after draining: %+v", r.d.Stats())
		}
		r.clock.Advance(step)
		r.clock.Fire()
		qdisctest.WaitQuiescent(r.t, r.d)
		r.check()
		step = min(2*step, 24*time.Hour)
	}
}
