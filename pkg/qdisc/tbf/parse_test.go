package tbf_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestParse checks tc-tbf(8)'s words, as tc's tbf_parse_opt reads them.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		words string
		want  tbf.Config
	}{
		{"tbf rate 10mbit burst 10k latency 50ms", tbf.Config{Rate: 1_250_000, Burst: 10240, Latency: 50 * time.Millisecond}},
		{"root handle 1: tbf rate 8000000 buffer 12500 limit 1514000", tbf.Config{Rate: 1_000_000, Burst: 12500, Limit: 1514000}},
		{"rate 1mbit maxburst 10k/8 lat 1.5ms", tbf.Config{Rate: 125_000, Burst: 10240, Latency: 1500 * time.Microsecond}},
		{"rate 1mbit b 3000 l 100000", tbf.Config{Rate: 125_000, Burst: 3000, Limit: 100000}},
		{"rate 1mbit burst 10k latency 50ms mtu 2000", tbf.Config{Rate: 125_000, Burst: 10240, Latency: 50 * time.Millisecond, MTU: 2000}},
		{"rate 1mbit burst 10k latency 50 p 2mbit minburst 1600 mpu 64 o 14", tbf.Config{Rate: 125_000, Burst: 10240, Latency: 50 * time.Microsecond, PeakRate: 250_000, MTU: 1600, MPU: 64, Overhead: 14}},
		{"rate 1mbit burst 10k latency 1s linklayer atm", tbf.Config{Rate: 125_000, Burst: 10240, Latency: time.Second, ATM: true}},
		{"rate 1mbit burst 10k latency 1s linklayer adsl", tbf.Config{Rate: 125_000, Burst: 10240, Latency: time.Second, ATM: true}},
		{"rate 1mbit burst 10k latency 1s linklayer eth", tbf.Config{Rate: 125_000, Burst: 10240, Latency: time.Second}},
		{"rate 1mbit burst 10k", tbf.Config{Rate: 125_000, Burst: 10240}},
	} {
		got, err := tbf.Parse(tc.words)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.words, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tc.words, diff)
		}
		if err := got.Check(); err != nil {
			t.Errorf("Parse(%q) = %+v, which Check refuses: %v", tc.words, got, err)
		}
	}
}

// TestParseRefuses checks that each refusal names the word to fix.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ words, says string }{
		{"burst 10k latency 50ms", "rate is required"},
		{"rate 1mbit latency 50ms", "burst is required"},
		{"rate 1mbit burst 10k peakrate 2mbit", "peakrate needs mtu"},
		{"rate 1mbit burst 10k limit 10k latency 50ms", "give one of them"},
		{"rate 1mbit burst 10k burst 20k", "burst given twice"},
		{"rate 1mbit burst 10k buffer 20k", "burst given twice"},
		{"rate 10% burst 10k", "percentage"},
		{"rate 1mbit burst 10k/3", "power of 2"},
		{"rate 1mbit burst 10k overhead -4", "0 to 65535"},
		{"rate 1mbit burst 10k linklayer token-ring", "ethernet, atm or adsl"},
		{"rate 1mbit burst 10k latency 5 parsecs", "unknown word"},
		{"rate 1mbit burst 10k latency 5min", "want a time"},
		{"rate 1mbit burst 10k quantum 1514", `unknown word "quantum"`},
		{"rate 1mbit burst", `"burst" needs a value`},
		{"rate 0 burst 10k", "rate of 0"},
	} {
		_, err := tbf.Parse(tc.words)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", tc.words, err, tc.says)
		}
	}
}

// TestMTUWithoutPeakRate: tc takes mtu without a peak rate and it shapes
// nothing; so here: New takes it, and the buckets pass what they pass
// without it.
func TestMTUWithoutPeakRate(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	d, err := tbf.New(link, clock, tbf.Config{Rate: 125_000, Burst: 10240, MTU: 2000, Slack: tbf.NoSlack})
	if err != nil {
		t.Fatalf("New with mtu and no peakrate: %v", err)
	}
	defer d.Close()
	if got, want := d.MaxPacketBytes(), uint32(10240); got != want {
		t.Errorf("MaxPacketBytes() = %d, want the burst's %d: mtu bounds nothing without peakrate", got, want)
	}
}

// TestATMCells: with linklayer atm a packet costs the 53-byte cells that
// carry it. At 53000 bytes/s a cell takes 1 ms; a 49-byte packet is 2
// cells (2 ms; 0.92 ms unframed) and the 1060-byte bucket 23 cells
// (23 ms): 11 packets leave at once and one more every 2 ms, where
// without cells 21 would leave at once.
func TestATMCells(t *testing.T) {
	for _, tc := range []struct {
		atm        bool
		at0, at9ms uint64
	}{
		{atm: true, at0: 11, at9ms: 16},  // floor((23+t)/2)
		{atm: false, at0: 21, at9ms: 30}, // floor((20+t)/0.9245), 30 queued
	} {
		clock := faketime.NewManualClock()
		link := qdisctest.NewLink(clock)
		link.LinkMTU, link.HeaderLength = 49, 0
		d, err := tbf.New(link, clock, tbf.Config{Rate: 53000, Burst: 1060, Limit: 100000, ATM: tc.atm, Slack: tbf.NoSlack})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30; i++ {
			pkt := qdisctest.MakePacket(49, 0, uint64(i))
			if err := d.WritePacket(pkt); err != nil {
				t.Fatal(err)
			}
			pkt.DecRef()
		}
		qdisctest.WaitQuiescent(t, d)
		if got := d.Stats().Packets; got != tc.at0 {
			t.Errorf("atm %v: %d packets left at once, want %d", tc.atm, got, tc.at0)
		}
		clock.Advance(9 * time.Millisecond)
		qdisctest.WaitQuiescent(t, d)
		if got := d.Stats().Packets; got != tc.at9ms {
			t.Errorf("atm %v: %d packets left by 9 ms, want %d", tc.atm, got, tc.at9ms)
		}
		d.Close()
	}
}
