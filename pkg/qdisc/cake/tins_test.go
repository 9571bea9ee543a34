package cake

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// TestTinSelection: each mode sends a DSCP to Linux's tin, which tc -s
// shows in tin order (diffserv3: Bulk, Best Effort, Voice; diffserv4:
// Bulk, Best Effort, Video, Voice).
func TestTinSelection(t *testing.T) {
	const (
		cs1  = 8 << 2
		le   = 1 << 2
		ef   = 46 << 2
		cs6  = 48 << 2
		cs7  = 56 << 2
		af41 = 34 << 2
		af11 = 10 << 2
		cs5  = 40 << 2
		af21 = 18 << 2
	)
	for _, tc := range []struct {
		mode Diffserv
		p    pk
		col  int // column in tc's order
	}{
		{Diffserv3, pk{}, 1},
		{Diffserv3, pk{tos: cs1}, 0},
		{Diffserv3, pk{tos: le}, 0},
		{Diffserv3, pk{tos: ef}, 2},
		{Diffserv3, pk{tos: cs7 | 1}, 2}, // ECN bits are not the DSCP
		{Diffserv3, pk{tos: af41}, 1},
		{Diffserv3, pk{arp: true}, 2}, // ARP is network control
		{Diffserv3, pk{v6: true, tos: ef}, 2},
		{Diffserv3, pk{v6: true, tos: cs1, notParsed: true}, 0},
		{Diffserv4, pk{tos: af41}, 2},
		{Diffserv4, pk{tos: cs5}, 3},
		{Diffserv4, pk{tos: af11}, 1},
		{Diffserv4, pk{tos: cs1}, 0},
		{Diffserv8, pk{tos: le}, 0},
		{Diffserv8, pk{tos: af11}, 1},
		{Diffserv8, pk{}, 2},
		{Diffserv8, pk{tos: af41}, 3},
		{Diffserv8, pk{tos: af21}, 4},
		{Diffserv8, pk{tos: 16 << 2}, 5}, // CS2
		{Diffserv8, pk{tos: ef}, 6},
		{Diffserv8, pk{tos: cs6}, 7},
		{Precedence, pk{tos: af41}, 4},
		{Precedence, pk{tos: cs7}, 7},
		{BestEffort, pk{tos: ef}, 0},
	} {
		cfg := DefaultConfig()
		cfg.Diffserv = tc.mode
		s := testSched(t, cfg)
		enqueue(t, s, tc.p, 0)
		x := s.XStats()
		for col, ts := range x.Tins {
			want := uint32(0)
			if col == tc.col {
				want = 1
			}
			if ts.SentPackets != want {
				t.Errorf("%v, DS field %#x (arp %v, v6 %v): tin column %d has %d packets, want %d", tc.mode, tc.p.tos, tc.p.arp, tc.p.v6, col, ts.SentPackets, want)
			}
		}
	}
}

// TestWash: wash clears a packet's DSCP (its ECN bits and a valid IPv4
// checksum kept) after cake has picked its tin by it.
func TestWash(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Wash = true
		s := testSched(t, cfg)
		enqueue(t, s, pk{v6: v6, tos: 46<<2 | 2}, 0)
		if got := s.XStats().Tins[2].SentPackets; got != 1 {
			t.Fatalf("v6 %v: EF packet not in Voice", v6)
		}
		pkt, _, ok := s.Dequeue(0)
		if !ok {
			t.Fatal("nothing dequeued")
		}
		nh := pkt.NetworkHeader().Slice()
		var tos uint8
		if v6 {
			tos, _ = header.IPv6(nh).TOS()
		} else {
			ip := header.IPv4(nh)
			tos, _ = ip.TOS()
			if !ip.IsChecksumValid() {
				t.Errorf("IPv4 checksum invalid after wash")
			}
		}
		if tos != 2 {
			t.Errorf("v6 %v: DS field %#x after wash, want 0x2 (ECT(0) kept)", v6, tos)
		}
		pkt.DecRef()
	}
}
