package ingress_test

import (
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestCakeOnReceive: cake on the receive path (NewWhole, as runscflags
// builds it, with CAKE's ingress keyword) sends what the link delivers up
// at its bandwidth, packet by packet with no burst (the first at once,
// then one each 8 ms for 1000-byte packets at 1 Mbit/s); cake's Change
// on the Endpoint's Whole changes the bandwidth in place (the next
// departure already booked keeps its time, the ones after it go at the
// new rate), and a tbf's Change is refused, naming cake.
func TestCakeOnReceive(t *testing.T) {
	cfg, err := cake.ParseQdisc("bandwidth 1mbit besteffort flowblind rtt 1s") // no CoDel drop in 80 ms
	if err != nil {
		t.Fatal(err)
	}
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	cfg.Ingress = true
	e, err := newCake(link, clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Attach(link)
	defer e.Close()
	c, ok := e.Whole().(*cake.Discipline)
	if !ok || !c.Config().Ingress {
		t.Fatalf("cake on the receive path: %v; want it with the ingress keyword", e)
	}
	for range 10 {
		pkt := frame(fromAddr([4]byte{8, 8, 8, 8}))
		if err := e.Deliver(header.IPv4ProtocolNumber, pkt); err != nil {
			t.Fatalf("Deliver: %v", err)
		}
		pkt.DecRef()
	}
	up := func(after time.Duration, want int) {
		t.Helper()
		clock.Advance(after)
		qdisctest.WaitQuiescent(t, e)
		if n := len(link.Records()); n != want {
			t.Fatalf("%d packets went up, want %d\n%s", n, want, c.TCStats())
		}
	}
	up(0, 1)
	up(8*time.Millisecond-1, 1)
	up(1, 2)
	faster := cfg
	faster.Bandwidth *= 2
	if err := c.Change(faster); err != nil {
		t.Fatal(err)
	}
	if c := c.Config(); c.Bandwidth != faster.Bandwidth || !c.Ingress {
		t.Errorf("after the change: %v; want bandwidth %d with ingress", c, faster.Bandwidth)
	}
	up(8*time.Millisecond, 3)
	up(4*time.Millisecond, 4)
	up(24*time.Millisecond, 10)
	if s := e.Stats(); s.Packets != 10 || s.Bytes != 10*1000 {
		t.Errorf("Stats: %d packets, %d bytes; want 10 and 10000", s.Packets, s.Bytes)
	}
	if err := e.Change(tbf.Config{Rate: 125_000, Burst: 1514}); err == nil || !strings.Contains(err.Error(), "cake") {
		t.Errorf("Change to a tbf: %v; want a refusal naming cake", err)
	}
}

// newCake is an Endpoint shaped by cake, as runscflags builds one.
func newCake(child stack.LinkEndpoint, clock tcpip.Clock, cfg cake.Config) (*ingress.Endpoint, error) {
	return ingress.NewWhole(child, clock, func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock) (ingress.Whole, error) {
		d, err := cake.NewTo(out, link, clock, cfg)
		if err != nil {
			return nil, err
		}
		return d, nil
	})
}
