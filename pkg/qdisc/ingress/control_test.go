package ingress_test

import (
	"bytes"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// mutate returns b with f applied to a copy.
func mutate(b []byte, f func([]byte) []byte) []byte { return f(bytes.Clone(b)) }

// flood delivers n copies of b as protocol to a fresh 1 Mbit/s shaper with
// a one-packet bucket while the clock stands still, and returns how many
// went up at once and the shaper's counters.
func flood(t *testing.T, protocol tcpip.NetworkProtocolNumber, b []byte, n int) (up uint64, e *ingress.Endpoint, clock *faketime.ManualClock) {
	t.Helper()
	clock = faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	e, err := ingress.New(link, clock, tbf.Config{Rate: mbit, Burst: 1514, Limit: 10 * 1514})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	var d dispatcher
	e.Attach(&d)
	for range n {
		pkt := frame(bytes.Clone(b))
		e.DeliverNetworkPacket(protocol, pkt)
		pkt.DecRef()
	}
	qdisctest.WaitQuiescent(t, e)
	return uint64(len(d.delivered())), e, clock
}

// TestCraftedControlFramesAreShaped: frames that only look like ARP or
// neighbour discovery (the protocol and type bytes right, the rest not:
// full-size, wrong hop limit, code, version, length, an extension header)
// are shaped like any other frame. A flood of 1000 of them past a 1 Mbit/s
// shaper with a one-packet bucket sends one at once, queues what the limit
// holds, drops the rest, and counts every one.
func TestCraftedControlFramesAreShaped(t *testing.T) {
	ns := ndp(header.ICMPv6NeighborSolicit, header.ICMPv6NeighborSolicitMinimumSize)
	for _, tc := range []struct {
		name     string
		protocol tcpip.NetworkProtocolNumber
		b        []byte
	}{
		{"NDP type in a 1514-byte frame", header.IPv6ProtocolNumber, mutate(ndp(header.ICMPv6NeighborSolicit, 1514-header.IPv6MinimumSize), func(b []byte) []byte { b[7] = 64; return b })},
		{"NDP of 1281 bytes", header.IPv6ProtocolNumber, ndp(header.ICMPv6RedirectMsg, 1281-header.IPv6MinimumSize)},
		{"NDP with hop limit 254", header.IPv6ProtocolNumber, mutate(ns, func(b []byte) []byte { b[7] = 254; return b })},
		{"NDP with code 1", header.IPv6ProtocolNumber, mutate(ns, func(b []byte) []byte { b[41] = 1; return b })},
		{"NDP with version 4", header.IPv6ProtocolNumber, mutate(ns, func(b []byte) []byte { b[0] = 0x40; return b })},
		{"NDP with payload length short of the frame", header.IPv6ProtocolNumber, mutate(ns, func(b []byte) []byte { return append(b, make([]byte, 100)...) })},
		{"NDP behind a hop-by-hop header", header.IPv6ProtocolNumber, mutate(ns, func(b []byte) []byte { b[6] = 0; return b })},
		{"ARP in a 1514-byte frame", header.ARPProtocolNumber, append(arpRequest(), make([]byte, 1514-header.ARPSize)...)},
		{"ARP for another hardware", header.ARPProtocolNumber, mutate(arpRequest(), func(b []byte) []byte { b[1] = 6; return b })},
		{"ARP with op 3", header.ARPProtocolNumber, mutate(arpRequest(), func(b []byte) []byte { b[7] = 3; return b })},
		{"ARP cut short", header.ARPProtocolNumber, arpRequest()[:20]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 1000
			up, e, _ := flood(t, tc.protocol, tc.b, n)
			s := e.Stats()
			if c, _ := e.Control(); c != 0 {
				t.Errorf("%d frames passed as control traffic, want 0", c)
			}
			if want := uint64(1514 / len(tc.b)); up > want {
				t.Errorf("%d frames went up at once past a 1 Mbit/s shaper, want at most the bucket's %d", up, want)
			}
			if s.Packets != up || s.Packets+s.Drops+s.BacklogPackets != n {
				t.Errorf("stats %+v with %d delivered: want every one of %d counted", s, up, n)
			}
		})
	}
}

// TestControlAllowance: genuine neighbour discovery and ARP go up at once,
// counted as sent, up to ControlBurst at once and ControlRate a second;
// past that they are shaped, so a flood of them carries no more than the
// allowance past the ceiling.
func TestControlAllowance(t *testing.T) {
	for _, tc := range []struct {
		name     string
		protocol tcpip.NetworkProtocolNumber
		b        []byte
	}{
		{"neighbour solicitations", header.IPv6ProtocolNumber, ndp(header.ICMPv6NeighborSolicit, header.ICMPv6NeighborSolicitMinimumSize)},
		{"redirects of 1280 bytes", header.IPv6ProtocolNumber, ndp(header.ICMPv6RedirectMsg, 1280-header.IPv6MinimumSize)},
		{"ARP requests", header.ARPProtocolNumber, arpRequest()},
		{"ARP padded to Ethernet's minimum", header.ARPProtocolNumber, append(arpRequest(), make([]byte, 18)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 1000
			up, e, clock := flood(t, tc.protocol, tc.b, n)
			c, cb := e.Control()
			if c != ingress.ControlBurst || cb != ingress.ControlBurst*uint64(len(tc.b)) {
				t.Errorf("%d frames (%d bytes) passed as control traffic, want the burst's %d", c, cb, ingress.ControlBurst)
			}
			shaped := uint64(1514 / len(tc.b))
			if up != c+shaped {
				t.Errorf("%d frames went up at once, want %d control + %d the bucket holds", up, c, shaped)
			}
			if s := e.Stats(); s.Packets != up || s.Packets+s.Drops+s.BacklogPackets != n {
				t.Errorf("stats %+v with %d delivered: want every one of %d counted", s, up, n)
			}
			// A second later the allowance holds ControlRate frames again.
			clock.Advance(time.Second)
			pkt := frame(bytes.Clone(tc.b))
			defer pkt.DecRef()
			for range ingress.ControlRate + 5 {
				e.DeliverNetworkPacket(tc.protocol, pkt)
			}
			qdisctest.WaitQuiescent(t, e)
			if c2, _ := e.Control(); c2-c != ingress.ControlRate {
				t.Errorf("a second later, %d more frames passed as control traffic, want %d", c2-c, ingress.ControlRate)
			}
		})
	}
}

// controlSpec restates, from RFC 826 and RFC 4861, which frames (from the
// network header on) are control traffic: the classifier must agree.
func controlSpec(protocol tcpip.NetworkProtocolNumber, b []byte) bool {
	switch protocol {
	case header.ARPProtocolNumber:
		return len(b) >= 28 && len(b) <= 64 && b[0] == 0 && b[1] == 1 && b[2] == 8 && b[3] == 0 &&
			b[4] == 6 && b[5] == 4 && b[6] == 0 && (b[7] == 1 || b[7] == 2)
	case header.IPv6ProtocolNumber:
		return len(b) >= 48 && len(b) <= 1280 && b[0]>>4 == 6 && b[6] == 58 && b[7] == 255 &&
			int(b[4])<<8|int(b[5]) == len(b)-40 && b[40] >= 133 && b[40] <= 137 && b[41] == 0
	}
	return false
}

// FuzzIngressClassifier: the control-traffic classifier never panics, on
// any bytes in any layout, and exempts exactly the well-formed frames
// controlSpec describes, only as a link delivers them (nothing parsed).
func FuzzIngressClassifier(f *testing.F) {
	f.Add(uint8(0), uint8(0), arpRequest())
	f.Add(uint8(1), uint8(0), ndp(header.ICMPv6NeighborAdvert, header.ICMPv6NeighborAdvertMinimumSize))
	f.Add(uint8(1), uint8(40), ndp(header.ICMPv6RouterAdvert, 16))
	f.Add(uint8(1), uint8(0), mutate(ndp(header.ICMPv6NeighborSolicit, 1474), func(b []byte) []byte { b[7] = 64; return b }))
	f.Add(uint8(2), uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, which, parsed uint8, b []byte) {
		protocol := []tcpip.NetworkProtocolNumber{header.ARPProtocolNumber, header.IPv6ProtocolNumber, header.IPv4ProtocolNumber}[which%3]
		pkt := frame(bytes.Clone(b))
		defer pkt.DecRef()
		k := min(int(parsed), len(b))
		if k > 0 {
			pkt.NetworkHeader().Consume(k)
		}
		want := k == 0 && controlSpec(protocol, b)
		if got := ingress.IsControl(protocol, pkt); got != want {
			t.Fatalf("protocol %#x, %d bytes, %d parsed: control %v, want %v", protocol, len(b), k, got, want)
		}
	})
}
