package netem_test

import (
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/netem"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestCeiling: under a ceiling of 1 Mbit/s with a one-packet bucket,
// netem's 100 ms of delay then the ceiling's rate: 10 packets of 1250
// bytes, written at once, leave the first at 100 ms and each next 10 ms
// after the last, none sooner (netem with a tbf child, the netem seed's
// third case); lifted, the rest leave at their delay.
func TestCeiling(t *testing.T) {
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	link.SetMTU(1250 - uint32(link.MaxHeaderLength()))
	c, err := netem.Parse("delay 100ms")
	if err != nil {
		t.Fatal(err)
	}
	d, err := netem.New(link, clock, c)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	gate, maxSize, err := tbf.NewGate(link, tbf.Config{Rate: 125_000, Burst: 1250}, false)
	if err != nil {
		t.Fatal(err)
	}
	d.SetCeiling(gate, maxSize)
	for seq := range uint64(10) {
		p := qdisctest.MakePacket(1250, 1, seq)
		if err := d.WritePacket(p); err != nil {
			t.Fatal(err)
		}
		p.DecRef()
	}
	var now time.Duration
	step := func(to time.Duration) int {
		for ; now < to; now += time.Millisecond {
			clock.Advance(time.Millisecond)
			clock.Fire()
			qdisctest.WaitQuiescent(t, d)
		}
		return link.NumRecords()
	}
	for i, want := range []struct {
		at   time.Duration
		sent int
	}{{99 * time.Millisecond, 0}, {100 * time.Millisecond, 1}, {109 * time.Millisecond, 1}, {110 * time.Millisecond, 2}, {149 * time.Millisecond, 5}, {150 * time.Millisecond, 6}} {
		if got := step(want.at); got != want.sent {
			t.Fatalf("step %d: %d packets on the link at %v, want %d", i, got, want.at, want.sent)
		}
	}
	d.SetCeiling(nil, 0)
	if got := step(151 * time.Millisecond); got != 10 {
		t.Errorf("ceiling lifted: %d packets on the link, want all 10, their delay long past", got)
	}
}
