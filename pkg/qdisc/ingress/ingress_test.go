package ingress_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf/tbftest"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

const mbit = tbftest.Mbit

// shaper is an Endpoint as the lockstep harness drives it: packets arrive
// as the link delivers IPv4 to it.
type shaper struct{ *ingress.Endpoint }

func (s shaper) Write(pkt *stack.PacketBuffer) bool {
	return s.Deliver(header.IPv4ProtocolNumber, pkt) == nil
}
func (s shaper) Limit() uint32 { return s.Config().Limit }

// WritePacket makes it a qdisc for qdisctest's close and allocation checks.
func (s shaper) WritePacket(pkt *stack.PacketBuffer) tcpip.Error {
	return s.Deliver(header.IPv4ProtocolNumber, pkt)
}

// newShaper shapes what link delivers, as cfg says, and delivers it to
// link's records.
func newShaper(t *testing.T, cfg tbf.Config, clock tcpip.Clock, link *qdisctest.Link) shaper {
	t.Helper()
	e, err := ingress.New(link, clock, cfg)
	if err != nil {
		t.Fatalf("ingress.New(%+v): %v", cfg, err)
	}
	e.Attach(link)
	t.Cleanup(e.Close)
	return shaper{e}
}

// TestConformance holds the receive path to Linux's tbf, on the cases the
// send path is held to: the same packets reach the stack or drop, at the
// same instants.
func TestConformance(t *testing.T) {
	mk := func(t *testing.T, cfg tbf.Config, clock tcpip.Clock, link *qdisctest.Link) tbftest.Shaper {
		return newShaper(t, cfg, clock, link)
	}
	for _, tc := range tbftest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			if recs := tbftest.RunConformance(t, mk, tc.Cfg, tc.LinkMTU, tc.Arrivals); len(recs) == 0 {
				t.Fatal("nothing was delivered")
			}
		})
	}
}

// ipv6ICMP returns an IPv6 packet carrying an ICMPv6 message of type typ,
// as neighbour discovery sends it (hop limit 255, code 0).
func ipv6ICMP(typ header.ICMPv6Type) *stack.PacketBuffer {
	return frame(ndp(typ, header.ICMPv6NeighborSolicitMinimumSize))
}

// ndp returns the bytes of a well-formed neighbour discovery message of
// type typ with an ICMPv6 part of icmpLen bytes.
func ndp(typ header.ICMPv6Type, icmpLen int) []byte {
	b := make([]byte, header.IPv6MinimumSize+icmpLen)
	header.IPv6(b).Encode(&header.IPv6Fields{
		PayloadLength:     uint16(icmpLen),
		TransportProtocol: header.ICMPv6ProtocolNumber,
		HopLimit:          header.NDPHopLimit,
		SrcAddr:           tcpip.AddrFrom16([16]byte{0xfe, 0x80, 15: 1}),
		DstAddr:           tcpip.AddrFrom16([16]byte{0xff, 0x02, 15: 1}),
	})
	b[header.IPv6MinimumSize] = byte(typ)
	return b
}

// arpRequest returns the bytes of a well-formed Ethernet/IPv4 ARP request.
func arpRequest() []byte {
	b := make([]byte, header.ARPSize)
	a := header.ARP(b)
	a.SetIPv4OverEthernet()
	a.SetOp(header.ARPRequest)
	return b
}

// frame returns a packet of bytes b as a link delivers it.
func frame(b []byte) *stack.PacketBuffer {
	return stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
}

// dispatcher records the protocols delivered to it, in order.
type dispatcher struct {
	mu sync.Mutex
	// +checklocks:mu
	got []tcpip.NetworkProtocolNumber
}

func (d *dispatcher) DeliverNetworkPacket(p tcpip.NetworkProtocolNumber, _ *stack.PacketBuffer) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, p)
}

func (d *dispatcher) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

func (d *dispatcher) delivered() []tcpip.NetworkProtocolNumber {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.got)
}

// TestControlTrafficIsNotShaped: while data waits for the bucket, ARP and
// neighbour discovery go up at once, counted as sent; other ICMPv6 waits
// in line.
func TestControlTrafficIsNotShaped(t *testing.T) {
	clock := faketime.NewManualClock()
	e, err := ingress.New(qdisctest.NewLink(clock), clock, tbf.Config{Rate: mbit, Burst: 1514})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var d dispatcher
	e.Attach(&d)
	deliver := func(p tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
		t.Helper()
		defer pkt.DecRef()
		if err := e.Deliver(p, pkt); err != nil {
			t.Fatalf("Deliver: %v", err)
		}
		qdisctest.WaitQuiescent(t, e)
	}
	const v4, v6, arp = header.IPv4ProtocolNumber, header.IPv6ProtocolNumber, header.ARPProtocolNumber
	deliver(v4, qdisctest.MakePacket(1514, 0, 1)) // the bucket's one packet: up at once
	deliver(v4, qdisctest.MakePacket(1514, 0, 2)) // waits 12 ms
	for _, typ := range []header.ICMPv6Type{header.ICMPv6RouterSolicit, header.ICMPv6RouterAdvert, header.ICMPv6NeighborSolicit, header.ICMPv6NeighborAdvert, header.ICMPv6RedirectMsg} {
		deliver(v6, ipv6ICMP(typ))
	}
	deliver(arp, frame(arpRequest()))
	deliver(v6, ipv6ICMP(header.ICMPv6EchoRequest)) // waits behind packet 2
	want := []tcpip.NetworkProtocolNumber{v4, v6, v6, v6, v6, v6, arp}
	if got := d.delivered(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v before the bucket refilled, want %v", got, want)
	}
	if s := e.Stats(); s.Packets != 7 || s.BacklogPackets != 2 {
		t.Errorf("stats %+v, want 7 packets sent (1 shaped, 6 control), 2 waiting", s)
	}
	clock.Advance(time.Second)
	qdisctest.WaitQuiescent(t, e)
	if got := d.delivered(); !slices.Equal(got, append(want, v4, v6)) {
		t.Errorf("delivered %v after a second, want the waiting IPv4 and ICMPv6 echo last", got)
	}
}

// TestLargerThanBucketIsDropped: a packet the bucket can never pass is
// dropped and counted, not let through in debt: the next packet still
// finds the bucket full and goes up at once.
func TestLargerThanBucketIsDropped(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	s := newShaper(t, tbf.Config{Rate: mbit, Burst: 3028}, clock, link)
	big := qdisctest.MakePacket(4000, 0, 1) // larger than the bucket (GRO, or a jumbo frame)
	defer big.DecRef()
	if _, ok := s.Deliver(header.IPv4ProtocolNumber, big).(*tcpip.ErrMessageTooLong); !ok {
		t.Fatalf("a packet larger than the bucket was not refused as too long")
	}
	for seq := uint64(2); seq <= 3; seq++ {
		pkt := qdisctest.MakePacket(1514, 0, seq)
		if !s.Write(pkt) {
			t.Fatalf("packet %d refused", seq)
		}
		pkt.DecRef()
	}
	qdisctest.WaitQuiescent(t, s)
	var got []uint64
	for _, r := range link.Records() {
		got = append(got, r.Seq)
	}
	if !slices.Equal(got, []uint64{2, 3}) {
		t.Errorf("delivered %v at once, want the two packets the full bucket holds, [2 3]", got)
	}
	if st := s.Stats(); st.Drops != 1 || st.Packets != 2 {
		t.Errorf("stats %+v, want 1 drop and 2 packets", st)
	}
}

// udp returns an IPv4 UDP packet of flow (its source port) carrying seq.
func udp(flow uint16, seq uint64) *stack.PacketBuffer {
	b := make([]byte, header.IPv4MinimumSize+header.UDPMinimumSize+8)
	header.IPv4(b).Encode(&header.IPv4Fields{
		TotalLength: uint16(len(b)),
		TTL:         64,
		Protocol:    uint8(header.UDPProtocolNumber),
		SrcAddr:     tcpip.AddrFrom4([4]byte{10, 0, 0, 2}),
		DstAddr:     tcpip.AddrFrom4([4]byte{10, 0, 0, 1}),
	})
	header.UDP(b[header.IPv4MinimumSize:]).Encode(&header.UDPFields{SrcPort: flow, DstPort: 9, Length: header.UDPMinimumSize + 8})
	binary.BigEndian.PutUint64(b[header.IPv4MinimumSize+header.UDPMinimumSize:], seq)
	return stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
}

// flowRecorder records (flow, seq) of the UDP packets delivered to it.
type flowRecorder struct {
	mu sync.Mutex
	// +checklocks:mu
	got [][2]uint64
}

func (r *flowRecorder) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	b := pkt.Data().AsRange().ToSlice()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, [2]uint64{uint64(header.UDP(b[header.IPv4MinimumSize:]).SourcePort()), binary.BigEndian.Uint64(b[header.IPv4MinimumSize+header.UDPMinimumSize:])})
}

func (*flowRecorder) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// TestFlowsOverQueues: with several queues, packets are spread by their
// own headers (pkt.Hash is 0); every packet goes up once, each flow's in
// order, and the shared limit drops the same number as one queue would.
func TestFlowsOverQueues(t *testing.T) {
	for _, queues := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d queues", queues), func(t *testing.T) {
			clock := faketime.NewManualClock()
			e, err := ingress.New(qdisctest.NewLink(clock), clock, tbf.Config{Rate: mbit, Burst: 1514, Limit: 5600, Lanes: queues})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var r flowRecorder
			e.Attach(&r)
			const flows, each = 16, 20
			for seq := uint64(0); seq < each; seq++ {
				for f := uint16(0); f < flows; f++ {
					pkt := udp(1000+f, seq)
					e.DeliverNetworkPacket(header.IPv4ProtocolNumber, pkt)
					pkt.DecRef()
					qdisctest.WaitQuiescent(t, e)
				}
			}
			for e.Stats().BacklogPackets > 0 {
				clock.Advance(time.Second)
				qdisctest.WaitQuiescent(t, e)
			}
			r.mu.Lock()
			got := r.got
			r.mu.Unlock()
			last := map[uint64]int64{}
			for _, g := range got {
				if prev, ok := last[g[0]]; ok && int64(g[1]) <= prev {
					t.Fatalf("flow %d: packet %d after %d", g[0], g[1], prev)
				}
				last[g[0]] = int64(g[1])
			}
			// The clock stands still while the packets arrive: the bucket
			// passes 1514/size of them at once and the queue holds
			// 5600/size, wherever they are queued.
			s, size := e.Stats(), uint64(header.IPv4MinimumSize+header.UDPMinimumSize+8)
			want := 1514/size + 5600/size
			if s.Packets != uint64(len(got)) || s.Packets+s.Drops != flows*each || s.Packets != want {
				t.Errorf("%d delivered, stats %+v; want %d delivered, the rest of %d dropped", len(got), s, want, flows*each)
			}
		})
	}
}

func TestCloseRace(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tbf.Config
	}{
		{"shaping", tbf.Config{Rate: 10 * mbit, Burst: 3028, Latency: 20 * time.Millisecond}},
		{"unlimited", tbf.Config{Rate: 100_000 * mbit, Burst: 128 << 20}},
	} {
		for _, queues := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/%d queues", tc.name, queues), func(t *testing.T) {
				for range 3 {
					qdisctest.CloseRace(t, func() qdisctest.StatsQdisc {
						link := qdisctest.NewLink(nil)
						link.Discard = true
						cfg := tc.cfg
						cfg.Lanes = queues
						e, err := ingress.New(link, tcpip.NewStdClock(), cfg)
						if err != nil {
							t.Fatal(err)
						}
						e.Attach(link)
						return shaper{e}
					}, 8, 400)
				}
			})
		}
	}
}

func TestNoAllocationPerPacket(t *testing.T) {
	link := qdisctest.NewLink(nil)
	link.Discard = true
	e, err := ingress.New(link, tcpip.NewStdClock(), tbf.Config{Rate: 100_000 * mbit, Burst: 1000 * 1514, Lanes: 2})
	if err != nil {
		t.Fatal(err)
	}
	e.Attach(link)
	defer e.Close()
	if a := qdisctest.AllocsPerPacket(t, shaper{e}, e); a != 0 {
		t.Errorf("%.3f allocations per packet", a)
	}
}

func TestConfigErrors(t *testing.T) {
	_, err := ingress.New(qdisctest.NewLink(nil), tcpip.NewStdClock(), tbf.Config{Rate: mbit, Burst: 1000})
	if ce, ok := err.(*tbf.ConfigError); !ok || ce.Field != "burst" {
		t.Errorf("a burst below the link's packet: %v, want a tbf.ConfigError naming burst", err)
	}
	if _, err := ingress.New(nil, tcpip.NewStdClock(), tbf.Config{Rate: mbit, Burst: 1514}); err == nil {
		t.Errorf("no child: no error")
	}
}
