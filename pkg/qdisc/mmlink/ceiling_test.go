package mmlink_test

import (
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestCeiling: under a ceiling of 1 Mbit/s with a one-packet bucket, put
// in place by the kind's Ceiling, the trace's link lets 10 packets of
// 1250 bytes go at its first ms (10 opportunities then), and the ceiling
// then paces them: the first at 1 ms, each next 10 ms after the last,
// none sooner, the lane waiting once for each; `tc -s` shows the
// ceiling's tbf over the link. Lifted, the rest leave at once, their
// opportunities long past.
func TestCeiling(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	link.SetMTU(1250 - uint32(link.MaxHeaderLength()))
	k, _ := qdisc.Lookup("mmlink")
	o, err := k.Parse("trace " + writeTrace(t, strings.Repeat("1\n", 10)))
	if err != nil {
		t.Fatal(err)
	}
	d, err := k.New(link, clock, o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	gate, maxSize, err := tbf.NewGate(link, tbf.Config{Rate: 125_000, Burst: 1250}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Ceiling(d, gate, maxSize); err != nil {
		t.Fatal(err)
	}
	for seq := range uint64(10) {
		p := qdisctest.MakePacket(1250, 1, seq)
		if err := d.Enqueue(p, 0); err != nil {
			t.Fatal(err)
		}
		p.DecRef()
	}
	qdisctest.WaitQuiescent(t, d)
	for i, want := range []struct {
		at   time.Duration
		sent int
	}{{time.Millisecond - 1, 0}, {time.Millisecond, 1}, {11*time.Millisecond - 1, 1}, {11 * time.Millisecond, 2}, {50 * time.Millisecond, 5}, {51 * time.Millisecond, 6}} {
		clock.Advance(want.at - time.Duration(nowNS(clock)))
		qdisctest.WaitQuiescent(t, d)
		if got := link.NumRecords(); got != want.sent {
			t.Fatalf("step %d: %d packets on the link at %v, want %d", i, got, want.at, want.sent)
		}
	}
	if s := d.Show(); s.Kind != "tbf" || len(s.Children) != 1 || s.Children[0].Kind != "mmlink" {
		t.Errorf("shown as %s over %v; want the ceiling's tbf over mmlink", s.Kind, s.Children)
	}
	// The lane waited for the link's first ms once, then for the
	// ceiling's tokens once a packet: it did not spin on the link's
	// next opportunity, which a lane with a ceiling asks by Peek.
	if n := d.Stats().Overlimits; n > 8 {
		t.Errorf("%d waits for 6 departures; want one each, and one for the first ms", n)
	}
	if err := k.Ceiling(d, nil, 0); err != nil {
		t.Fatal(err)
	}
	qdisctest.WaitQuiescent(t, d)
	clock.Advance(0)
	qdisctest.WaitQuiescent(t, d)
	if got := link.NumRecords(); got != 10 {
		t.Errorf("ceiling lifted: %d packets on the link, want all 10", got)
	}
	if s := d.Show(); s.Kind != "mmlink" {
		t.Errorf("lifted, shown as %s; want mmlink alone", s.Kind)
	}
}
