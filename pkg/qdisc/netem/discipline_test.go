package netem_test

import (
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/netem"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestDisciplineDelays: netem as a NIC's qdisc hands each packet to the
// link its delay after it came, not before, on the lane's clock; Close
// drops and counts what it still holds.
func TestDisciplineDelays(t *testing.T) {
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	c, err := netem.Parse("delay 100ms seed 3")
	if err != nil {
		t.Fatal(err)
	}
	d, err := netem.New(link, clock, c)
	if err != nil {
		t.Fatal(err)
	}
	for seq := range uint64(3) {
		p := qdisctest.MakePacket(1000, 1, seq)
		if err := d.WritePacket(p); err != nil {
			t.Fatal(err)
		}
		p.DecRef()
	}
	qdisctest.WaitQuiescent(t, d)
	clock.Advance(99 * time.Millisecond)
	clock.Fire()
	qdisctest.WaitQuiescent(t, d)
	if n := link.NumRecords(); n != 0 {
		t.Fatalf("%d packets on the link after 99 ms of a 100 ms delay", n)
	}
	clock.Advance(time.Millisecond)
	clock.Fire()
	qdisctest.WaitQuiescent(t, d)
	if n := link.NumRecords(); n != 3 {
		t.Fatalf("%d of 3 packets on the link after 100 ms", n)
	}
	p := qdisctest.MakePacket(1000, 1, 9)
	d.WritePacket(p)
	p.DecRef()
	qdisctest.WaitQuiescent(t, d)
	d.Close()
	if s := d.Stats(); s.Packets != 3 || s.Drops != 1 {
		t.Errorf("stats %+v: want 3 sent and the one held at Close dropped", s)
	}
}

// TestKindRoundTrip: netem is registered, and its words as a runtime
// holds them read back to the same configuration.
func TestKindRoundTrip(t *testing.T) {
	k, ok := qdisc.Lookup("netem")
	if !ok {
		t.Fatal("netem is not registered")
	}
	for _, words := range []string{
		"delay 100ms 10ms 25% distribution normal loss 1% 30% duplicate 2% 5% seed 9",
		"limit 50 delay 10ms reorder 25% 50% gap 5 rate 512kbit 20 48 5 ecn loss gemodel 1% 10% 70% 0.1%",
		"loss state 1% 10% 20% 30% 40% slot 5ms 10ms packets 3 bytes 9000",
		"delay 20ms slot distribution pareto 10ms 2ms",
		"corrupt 0.1% 30% delay 1ms",
	} {
		o, err := k.Parse(words)
		if err != nil {
			t.Fatalf("%q: %v", words, err)
		}
		again, err := k.Parse(o.String())
		if err != nil {
			t.Fatalf("%q read back from %q: %v", o.String(), words, err)
		}
		if again.String() != o.String() {
			t.Errorf("%q: words %q read back as %q", words, o.String(), again.String())
		}
	}
}
