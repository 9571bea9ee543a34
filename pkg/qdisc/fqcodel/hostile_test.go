package fqcodel_test

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestHostilePackets writes packets a sandbox could write (0 to 65535
// bytes, any header bytes and layout) to fq_codel alone with small limits.
// Its lower link is plugged while the step clock moves on, so that a
// standing queue builds: past the packet and memory limits (drops from the
// fattest flow, empty packets included) and past CoDel's target (drops,
// and ECN marks that read and rewrite the headers). Every packet is sent
// or dropped and counted exactly once, in Stats and XStats alike, and
// after Close no packet is referenced and no goroutine is left.
func TestHostilePackets(t *testing.T) {
	const packets = 3000
	cfg := fqcodel.Config{Limit: 32, MemoryLimit: 192 << 10, Flows: 16, DropBatch: 4, Target: time.Millisecond, Interval: 10 * time.Millisecond}
	before := runtime.NumGoroutine()
	clock := qdisctest.NewStepClock()
	var plug qdisctest.Plug
	link := qdisctest.NewLink(clock)
	link.Discard = true
	link.OnWrite = plug.Wait
	d, err := fqcodel.New(link, clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close) // on failure; Close is idempotent
	rng := rand.New(rand.NewPCG(7, 19))
	var o qdisctest.Offered
	write := func() {
		pkt := qdisctest.HostilePacket(rng, qdisctest.HostileSize(rng))
		o.Offer(t, pkt, d.WritePacket(pkt))
	}
	for len(o.Pkts) < packets {
		// A round: hold the dispatcher in the link with one packet, queue
		// more while the clock moves on, then let it drain at the time
		// the round ends.
		plug.While(func() {
			write()
			plug.WaitStuck(t, 1)
			for range rng.IntN(100) {
				write()
				clock.Advance(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
			}
		})
		qdisctest.WaitQuiescent(t, d)
		st, x := d.Stats(), d.XStats()
		o.CheckConserved(t, st)
		sent, bytes := link.Count()
		if st.Drops != x.Drops() || st.BacklogPackets != 0 || sent != st.Packets || bytes != st.Bytes || x.MemoryUsage != 0 {
			t.Fatalf("the link has %d packets (%d bytes); Stats %+v; XStats %+v", sent, bytes, st, x)
		}
		if o.Refused != 0 {
			t.Fatalf("fq_codel refused %d packets; it makes room by dropping, and refuses nothing", o.Refused)
		}
	}
	// A last standing queue, dropped by Close.
	for range 50 {
		write()
	}
	d.Close()
	st, x := d.Stats(), d.XStats()
	o.CheckConserved(t, st)
	if st.BacklogPackets != 0 || x.MemoryUsage != 0 || st.Drops < x.Drops() {
		t.Errorf("after Close: Stats %+v, XStats %+v", st, x)
	}
	if x.DropOverlimit == 0 || x.DropOvermemory == 0 || x.CoDelDrops == 0 || x.ECNMark == 0 {
		t.Errorf("XStats %+v: the run did not reach both limits, CoDel's drops and its marks", x)
	}
	t.Logf("%d packets: %v\n%+v", len(o.Pkts), st, x)
	o.Release(t)
	qdisctest.WaitGoroutines(t, before)
}
