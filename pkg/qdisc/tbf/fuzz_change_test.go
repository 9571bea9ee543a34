package tbf_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// FuzzChange runs a tbf that the input configures and then changes, as
// `runsc qdisc change` does, among writes of hostile packets and clock
// steps: new rates, bursts, peak and packet rates, limits (lower than the
// backlog, too), the ceiling removed and set again, and changes Change
// must refuse (other queues, another child). After every operation: every
// packet is accounted once (sent, dropped or queued); a refused change
// leaves the configuration in force as it was; an accepted one is the
// configuration in force. After Close: nothing queued, every reference
// released, no goroutine left.
func FuzzChange(f *testing.F) {
	f.Fuzz(fuzzChange)
}

// fuzzChange is FuzzChange's run of one input.
func fuzzChange(t *testing.T, data []byte) {
	in := qdisctest.NewInput(data)
	linkMTU := [...]uint32{1500, 9000, 576}[in.IntN(3)]
	cfg, fq, _ := fuzzConfig(in, linkMTU)
	if fq != nil {
		child, err := fqcodel.NewQueue(*fq, linkMTU+14, nil)
		if err != nil {
			t.Skip(err)
		}
		cfg.Child = child
	}
	before := runtime.NumGoroutine()
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	link.LinkMTU = linkMTU
	d, err := tbf.New(link, clock, cfg)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(d.Close) // on failure; Close is idempotent
	var o qdisctest.Offered
	for op := 0; op < fuzzOps && in.Len() > 0; op++ {
		switch in.IntN(8) {
		case 0, 1, 2:
			pkt := qdisctest.HostilePacket(in, qdisctest.HostileSize(in))
			o.Offer(t, pkt, d.WritePacket(pkt))
		case 3:
			clock.Advance(time.Duration(in.IntN(1<<16)) << (8 * in.IntN(4)))
		case 4:
			clock.Advance(time.Duration(in.IntN(1<<16)) << (8 * in.IntN(4)))
			clock.Fire()
		case 5, 6, 7:
			fuzzChangeOnce(t, d, in, linkMTU)
		}
		qdisctest.WaitQuiescent(t, d)
		o.CheckConserved(t, d.Stats())
	}
	d.Close()
	st := d.Stats()
	o.CheckConserved(t, st)
	if st.BacklogPackets != 0 || st.BacklogBytes != 0 {
		t.Fatalf("backlog after Close: %+v", st)
	}
	o.Release(t)
	qdisctest.WaitGoroutines(t, before)
}

// fuzzChangeOnce changes d to a configuration the input draws: mostly one
// Change may accept (the same queues, slack and child), sometimes one
// without a ceiling, sometimes one it must refuse.
func fuzzChangeOnce(t *testing.T, d *tbf.Discipline, in *qdisctest.Input, linkMTU uint32) {
	cur := d.Config()
	next, fq, _ := fuzzConfig(in, linkMTU)
	if fq != nil { // a new child: Change must refuse it
		if child, err := fqcodel.NewQueue(*fq, linkMTU+14, nil); err == nil {
			next.Child = child
		}
	}
	switch in.IntN(4) {
	case 0: // no ceiling
		next = tbf.Config{Limit: next.Limit}
		if in.IntN(2) == 0 {
			next.Limit = 0
		}
	case 1: // what Change must refuse, or may not
	default: // what New would accept, with what cannot change kept
	}
	if in.IntN(4) != 1 {
		next.Lanes, next.Slack = cur.Lanes, cur.Slack
		next.Child = cur.Child
		if cur.Child != nil {
			next.Limit, next.Latency = 0, 0
		}
	}
	checked := d.CheckChange(next)
	err := d.Change(next)
	if (checked == nil) != (err == nil) {
		t.Fatalf("CheckChange(%+v) = %v, but Change = %v", next, checked, err)
	}
	after := d.Config()
	if err != nil {
		if after != cur {
			t.Fatalf("Change(%+v) refused (%v) but the config in force changed: %+v, was %+v", next, err, after, cur)
		}
		return
	}
	if after.Rate != next.Rate || after.Burst != next.Burst || after.PeakRate != next.PeakRate || after.PacketRate != next.PacketRate || after.PacketBurst != next.PacketBurst {
		t.Fatalf("Change(%+v) accepted, but the config in force is %+v", next, after)
	}
}
