package ingress_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// fromAddr returns a 1000-byte IPv4 packet from src, as the link hands it
// up.
func fromAddr(src [4]byte) []byte {
	b := make([]byte, 1000)
	header.IPv4(b).Encode(&header.IPv4Fields{
		TotalLength: 1000, TTL: 64, Protocol: uint8(header.UDPProtocolNumber),
		SrcAddr: tcpip.AddrFrom4(src), DstAddr: tcpip.AddrFrom4([4]byte{10, 0, 0, 2}),
	})
	return b
}

// TestClassesByRemote: with htb classes on the receive path, a download
// from the cluster (source 10.0.0.0/8) goes up at once while one from the
// internet is held to its class's 1 Mbit/s: the rule's dst matches the
// remote end, the packet's source.
func TestClassesByRemote(t *testing.T) {
	const mbit = 125_000
	rule, err := classify.ParseRule("dst 10.0.0.0/8 classid 1:10")
	if err != nil {
		t.Fatal(err)
	}
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	e, err := newClasses(link, clock, htb.Config{Default: 0x10020, Rules: []classify.Rule{rule}, Classes: []htb.ClassConfig{
		{ID: 0x10010, Rate: 1000 * mbit, Burst: 64 << 10, CBurst: 64 << 10},
		{ID: 0x10020, Rate: 1 * mbit},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.Attach(link)
	defer e.Close()
	deliver := func(src [4]byte) {
		t.Helper()
		pkt := frame(fromAddr(src))
		defer pkt.DecRef()
		if err := e.Deliver(header.IPv4ProtocolNumber, pkt); err != nil {
			t.Fatalf("Deliver: %v", err)
		}
		qdisctest.WaitQuiescent(t, e)
	}
	for range 4 {
		deliver([4]byte{8, 8, 8, 8})
	}
	for range 4 {
		deliver([4]byte{10, 1, 2, 3})
	}
	// The internet's class: its 1600-byte burst passes one packet of
	// 1000 bytes charged at once (1000 <= 1600, then 600 - 1000 < 0), the
	// second after its debt; the cluster's four go up at once.
	if n := len(link.Records()); n != 6 {
		t.Fatalf("%d packets went up at once, want the cluster's 4 and the internet's first 2\n%s", n, e.Whole().(*htb.Discipline).TCStats())
	}
	clock.Advance(time.Second)
	qdisctest.WaitQuiescent(t, e)
	if n := len(link.Records()); n != 8 {
		t.Fatalf("%d packets went up after a second, want all 8", n)
	}
	cls := e.Whole().(*htb.Discipline).Classes()
	if cls[0].Packets != 4 || cls[1].Packets != 4 {
		t.Errorf("classes counted %d and %d packets, want 4 and 4", cls[0].Packets, cls[1].Packets)
	}
	if err := e.Change(tbf.Config{Rate: mbit, Burst: 1514}); err == nil {
		t.Error("Change swapped the classes for a tbf")
	}
}

// newClasses is an Endpoint shaped by htb classes matching the remote
// end, as runscflags builds one.
func newClasses(child stack.LinkEndpoint, clock tcpip.Clock, cfg htb.Config) (*ingress.Endpoint, error) {
	cfg.Direction = classify.Ingress
	return ingress.NewWhole(child, clock, func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock) (ingress.Whole, error) {
		d, err := htb.NewTo(out, link, clock, cfg)
		if err != nil {
			return nil, err
		}
		return d, nil
	})
}
