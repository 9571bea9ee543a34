package qdisctest_test

import (
	"math/rand/v2"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

// TestHostilePacket: a hostile packet has exactly the size asked for,
// whatever its layout, and over many draws the maker produces what the
// hostile tests rely on meeting: every layout, empty and 64 KiB packets,
// and network headers shorter than the IPv4 IHL their bytes claim, some
// ending where their storage ends.
func TestHostilePacket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var unparsed, pushed, consumed, empty, largest, lying, tight int
	for i := 0; i < 5000; i++ {
		size := qdisctest.HostileSize(rng)
		if size < 0 || size > 65535 {
			t.Fatalf("HostileSize drew %d", size)
		}
		pkt := qdisctest.HostilePacket(rng, size)
		if got := pkt.Size(); got != size {
			t.Fatalf("packet %d: Size() %d, want %d", i, got, size)
		}
		nh := pkt.NetworkHeader().Slice()
		switch {
		case len(nh) > header.IPv4MaximumHeaderSize:
			t.Fatalf("packet %d: %d-byte network header", i, len(nh))
		case pkt.HeaderSize() == 0:
			unparsed++
		case pkt.AvailableHeaderBytes() >= 0 && pkt.ReservedHeaderBytes() > 0:
			pushed++
		default:
			consumed++
		}
		if len(nh) >= header.IPv4MinimumSize && nh[0]>>4 == 4 && int(nh[0]&0xf)*4 > len(nh) {
			lying++
			if cap(nh) < int(nh[0]&0xf)*4 {
				tight++
			}
		}
		switch size {
		case 0:
			empty++
		case 65535:
			largest++
		}
		pkt.DecRef()
	}
	for _, c := range []struct {
		what string
		n    int
	}{
		{"unparsed", unparsed}, {"pushed", pushed}, {"consumed", consumed},
		{"empty", empty}, {"65535-byte", largest},
		{"IPv4 headers shorter than their IHL", lying}, {"of them ending with their storage", tight},
	} {
		if c.n == 0 {
			t.Errorf("no %s packets in 5000", c.what)
		}
	}
	t.Logf("%d unparsed, %d pushed, %d consumed; %d empty, %d of 65535 bytes; %d IPv4 headers shorter than their IHL, %d ending with their storage",
		unparsed, pushed, consumed, empty, largest, lying, tight)
}

// TestInput: a fuzzer's input steers each choice with as few bytes as its
// range needs, and a used-up input answers 0.
func TestInput(t *testing.T) {
	in := qdisctest.NewInput([]byte{7, 0x01, 0x02, 200})
	if got := in.IntN(10); got != 7 {
		t.Errorf("IntN(10) = %d, want 7 (one byte)", got)
	}
	if got := in.IntN(1 << 16); got != 0x0102 {
		t.Errorf("IntN(65536) = %#x, want 0x102 (two bytes)", got)
	}
	if got := in.IntN(100); got != 0 {
		t.Errorf("IntN(100) = %d, want 200 mod 100 = 0", got)
	}
	if in.Len() != 0 || in.IntN(1<<32) != 0 {
		t.Errorf("a used-up input: %d bytes left, or a choice not 0", in.Len())
	}
}
