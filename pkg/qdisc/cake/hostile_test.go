package cake

import (
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// withNH returns a packet whose pushed network header is exactly nh.
func withNH(proto uint16, nh []byte) *stack.PacketBuffer {
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: len(nh), Payload: buffer.MakeWithData(make([]byte, 8))})
	copy(pkt.NetworkHeader().Push(len(nh)), nh)
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	if proto == 6 {
		pkt.NetworkProtocolNumber = header.IPv6ProtocolNumber
	}
	return pkt
}

// TestHostileHeaders: a header cut short or lying is read only where it
// is there: its DSCP is what its bytes say (Linux reads the two bytes it
// needs) or 0; wash and CE marking write only a whole header of its
// version, and leave anything else as it came.
func TestHostileHeaders(t *testing.T) {
	ef := byte(46<<2 | 2)
	for _, tc := range []struct {
		name  string
		proto uint16
		nh    []byte
		dscp  uint8
		wash  bool // the header is whole: wash and marking write it
	}{
		{"one byte", 4, []byte{0x45}, 0, false},
		{"two bytes", 4, []byte{0x45, ef}, 46, false},
		{"IHL 4", 4, append([]byte{0x44, ef}, make([]byte, 18)...), 46, false},
		{"IHL 15 in 20 bytes", 4, append([]byte{0x4f, ef}, make([]byte, 18)...), 46, false},
		{"version 6 as IPv4", 4, append([]byte{0x65, ef}, make([]byte, 18)...), 46, false},
		{"whole IPv4", 4, append([]byte{0x45, ef}, make([]byte, 18)...), 46, true},
		{"IPv6 cut short", 6, []byte{0x6b, 0x8a, 0, 0}, 46, false},
		{"whole IPv6", 6, append([]byte{0x6b, 0xa0}, make([]byte, 38)...), 46, true},
	} {
		pkt := withNH(tc.proto, tc.nh)
		nh := pkt.NetworkHeader().Slice()
		before := string(nh)
		if got := dscp(pkt, nh, false); got != tc.dscp {
			t.Errorf("%s: DSCP %d, want %d", tc.name, got, tc.dscp)
		}
		dscp(pkt, nh, true)
		if washed := string(nh) != before; washed != tc.wash {
			t.Errorf("%s: washed %v, want %v", tc.name, washed, tc.wash)
		}
		if marked := markCE(pkt); marked != tc.wash {
			t.Errorf("%s: marked %v, want %v", tc.name, marked, tc.wash)
		}
		pkt.DecRef()
	}
}

// TestSplitGSORefused: a GSO packet split-gso cannot cut (its headers
// disagree with it) is refused, counted as a drop, and left to the
// caller, as Linux's qdisc_drop.
func TestSplitGSORefused(t *testing.T) {
	s := testSched(t, DefaultConfig())
	pkt := qdisctest.GSOPacket(3000, 1000, 0, 1, 1)
	defer pkt.DecRef()
	pkt.GSOOptions.Type = stack.GSOTCPv6 // an IPv4 packet
	if s.Enqueue(pkt.IncRef(), uint32(pkt.Size()), 0) {
		t.Fatal("a packet split-gso cannot cut was taken")
	}
	pkt.DecRef() // the reference Enqueue did not take
	if s.Drops() != 1 || s.qlen != 0 {
		t.Errorf("drops %d, queued %d; want 1, 0", s.Drops(), s.qlen)
	}
	if n := pkt.ReadRefs(); n != 1 {
		t.Errorf("%d references left, want the test's 1", n)
	}
}

// TestTinThresholds: shaped, a tin over its threshold gives way: voice
// (diffserv3's tin 2, a quarter of the rate) and best effort, both
// saturating, share 1/4 and 3/4; bulk (1/16) under best effort's flood
// gets its 1/16.
func TestTinThresholds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hi    uint8 // DS field of the first flow
		share float64
	}{
		{"voice", 46 << 2, 0.25},
		{"bulk", 8 << 2, 1.0 / 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Bandwidth = 1_250_000
			s := testSched(t, cfg)
			flows := []pk{{src: 1, sport: 1, payload: 1000, tos: tc.hi}, {src: 2, sport: 2, payload: 1000}}
			sent := saturate(t, s, flows, 4000, 0)
			share := float64(sent[0]) / float64(sent[0]+sent[1])
			if share < tc.share-0.02 || share > tc.share+0.02 {
				t.Errorf("the %s flow sent %.3f of the bytes, want %.3f", tc.name, share, tc.share)
			}
		})
	}
}
