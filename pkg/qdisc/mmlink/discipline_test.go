package mmlink_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink"
	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink/mmlinktest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

// nowNS reads c in ns.
func nowNS(c tcpip.Clock) int64 { return int64(c.NowMonotonic().Sub(tcpip.MonotonicTime{})) }

// advanceTo moves clock to at (ns), firing the qdisc's timer at each
// departure on the way, and waits until the qdisc is asleep.
func advanceTo(t *testing.T, clock *faketime.ManualClock, d *mmlink.Discipline, at int64) {
	t.Helper()
	clock.Advance(time.Duration(at - nowNS(clock)))
	qdisctest.WaitQuiescent(t, d)
}

// TestDisciplineExact: as a NIC's qdisc on a manual clock, every packet
// reaches the link at the time mmlinktest's model of mahimahi says it
// leaves, to the ns, never before, never after; the packets refused are
// the model's, and counted, each reference left to the caller. Arrivals
// are random (seeded), in bursts past the link's rate and idle whiles,
// half of them at whole ms of the trace, where an opportunity may be at
// that very time.
func TestDisciplineExact(t *testing.T) {
	small, err := mmlink.NewTrace("small", []uint32{0, 0, 2, 3, 3, 3, 7})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		trace  string
		tr     *mmlink.Trace
		limit  uint32
		gap    int64 // mean ns between arrivals
		number int
	}{
		{"small", small, 8, 1_000_000, 400},
		{"lte", nil, 30, 500_000, 1000},
		{"3g", nil, 12, 5_000_000, 400},
	} {
		t.Run(tc.trace, func(t *testing.T) {
			tr := tc.tr
			if tr == nil {
				var err error
				if tr, _, err = mmlink.Builtin(tc.trace); err != nil {
					t.Fatal(err)
				}
			}
			clock := faketime.NewManualClock()
			clock.Advance(1_234_567) // the trace starts between ms
			base := nowNS(clock)
			link := qdisctest.NewLink(clock)
			d, err := mmlink.New(link, clock, mmlink.Config{Trace: tr, Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			m := mmlinktest.New(tr.Times(), base, tc.limit, 0)
			r := rand.New(rand.NewPCG(uint64(tc.number), 7))
			at := base
			refused := 0
			for id := uint64(1); id <= uint64(tc.number); {
				gap := r.Int64N(2 * tc.gap)
				if r.IntN(10) == 0 {
					gap *= 20 // an idle while, now and then
				}
				at += gap
				if r.IntN(2) == 0 {
					at = base + (at-base+999_999)/1_000_000*1_000_000 // a whole ms of the trace
				}
				advanceTo(t, clock, d, at)
				for range 1 + r.IntN(4) { // a burst at one time
					ip := 40 + r.IntN(1461)
					p := qdisctest.MakePacket(ip, 1, id)
					err := d.WritePacket(p)
					ref := p.ReadRefs()
					p.DecRef()
					if want := m.Enqueue(id, uint32(ip+4), at); (err == nil) != want {
						t.Fatalf("packet %d at %d: WritePacket %v, the model took it: %v", id, at, err, want)
					}
					if err != nil {
						refused++
						if ref != 1 {
							t.Errorf("refused packet %d holds %d references, want the caller's own 1", id, ref)
						}
					}
					id++
				}
				qdisctest.WaitQuiescent(t, d)
			}
			end := at + int64(10*time.Second)
			advanceTo(t, clock, d, end)
			left := map[uint64]int64{}
			for {
				p, ok := m.Dequeue(end)
				if !ok {
					break
				}
				left[p.ID] = p.Departed
			}
			recs := link.Records()
			if len(recs) != len(left) {
				t.Fatalf("%d packets on the link, the model sent %d", len(recs), len(left))
			}
			for _, rec := range recs {
				want, ok := left[rec.Seq]
				if got := int64(rec.At.Sub(tcpip.MonotonicTime{})); !ok || got != want {
					t.Errorf("packet %d reached the link at %d, the model's departure %d (%v)", rec.Seq, got, want, ok)
				}
			}
			if s := d.Stats(); s.Packets != uint64(len(recs)) || s.Drops != uint64(refused) || s.BacklogPackets != 0 {
				t.Errorf("stats %+v; want %d sent, %d dropped, nothing held", s, len(recs), refused)
			}
			if refused == 0 {
				t.Error("no packet refused: the run did not reach the limit")
			}
		})
	}
}

// TestDisciplineGSO: on the send path a host-GSO packet is cut into its
// segments, which leave one an opportunity, each at its own, as the
// separate packets they are on the wire.
func TestDisciplineGSO(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	tr, err := mmlink.NewTrace("1ms", []uint32{1})
	if err != nil {
		t.Fatal(err)
	}
	d, err := mmlink.New(link, clock, mmlink.Config{Trace: tr, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p := qdisctest.GSOPacket(3*1448, 1448, 1, 1, 1000)
	if err := d.WritePacket(p); err != nil {
		t.Fatal(err)
	}
	p.DecRef()
	qdisctest.WaitQuiescent(t, d)
	for step := int64(1); step <= 3; step++ {
		advanceTo(t, clock, d, step*1_000_000)
		if n := link.NumRecords(); n != int(step) {
			t.Fatalf("%d segments on the link at %d ms, want %d", n, step, step)
		}
	}
	for _, rec := range link.Records() {
		if rec.Size != 1448+qdisctest.GSOHeaderLen {
			t.Errorf("a piece of %d bytes, want one segment of %d", rec.Size, 1448+qdisctest.GSOHeaderLen)
		}
	}
}

// TestDisciplineClose: Close drops and counts what is held, releasing
// each reference once, and a write after it is refused taking none.
func TestDisciplineClose(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	tr, _, err := mmlink.Builtin("3g")
	if err != nil {
		t.Fatal(err)
	}
	d, err := mmlink.New(link, clock, mmlink.Config{Trace: tr, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	var pkts []*stack.PacketBuffer
	for i := range 8 {
		p := qdisctest.MakePacket(1000, 1, uint64(i))
		pkts = append(pkts, p)
		d.WritePacket(p)
	}
	qdisctest.WaitQuiescent(t, d)
	d.Close()
	d.Close()
	if err := d.WritePacket(pkts[0]); err == nil {
		t.Error("a write after Close was taken")
	}
	if s := d.Stats(); s.Packets+s.Drops != 8 || s.BacklogPackets != 0 {
		t.Errorf("stats %+v: want the 8 sent or dropped", s)
	}
	qdisctest.CheckReleased(t, pkts)
}

// TestCloseRace: writers racing Close; every packet is sent or dropped
// once, no goroutine is left (qdisctest.CloseRace).
func TestCloseRace(t *testing.T) {
	tr, err := mmlink.NewTrace("fast", []uint32{1, 1, 1, 1, 1, 1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	qdisctest.CloseRace(t, func() qdisctest.StatsQdisc {
		d, err := mmlink.New(qdisctest.NewLink(nil), tcpip.NewStdClock(), mmlink.Config{Trace: tr, Limit: 64})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}, 4, 200)
}

// TestAllocs: a packet's way through the link allocates nothing once the
// queue has grown.
func TestAllocs(t *testing.T) {
	d := fastLink(t)
	if n := qdisctest.AllocsPerPacket(t, d, d); n > 0.05 {
		t.Errorf("%.2f allocations a packet, want 0", n)
	}
}

// fastLink is an mmlink on a link that discards, over a trace of 50,000
// opportunities every ms (600 Gbit/s) behind a limit as large, on the
// system's clock: what limits it is its cost, not its rate (a trace's
// opportunities come in bursts, one a ms at most, so the queue must
// hold a ms of packets).
func fastLink(t testing.TB) *mmlink.Discipline {
	times := make([]uint32, 50_000)
	for i := range times {
		times[i] = 1
	}
	tr, err := mmlink.NewTrace("fast", times)
	if err != nil {
		t.Fatal(err)
	}
	link := qdisctest.NewLink(nil)
	link.Discard = true
	d, err := mmlink.New(link, tcpip.NewStdClock(), mmlink.Config{Trace: tr, Limit: 50_000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

var _ qdisc.Discipline = (*mmlink.Discipline)(nil)
