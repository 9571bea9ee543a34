package tbf_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

func TestNewRefusesInvalidConfig(t *testing.T) {
	gvisorGSO := func(l *qdisctest.Link) { l.GSO, l.GSOMax = stack.GVisorGSOSupported, 65536 }
	for _, tc := range []struct {
		name  string
		cfg   tbf.Config
		link  func(*qdisctest.Link)
		field string
		says  string
	}{
		{"rate 0", tbf.Config{Burst: 12500}, nil, "rate", "rate is 0"},
		{"burst 0", tbf.Config{Rate: mbit}, nil, "burst", "at least 1514"},
		{"burst below MTU plus header", tbf.Config{Rate: mbit, Burst: 1500}, nil, "burst", "raise burst to at least 1514"},
		{"peakrate equal to rate", tbf.Config{Rate: mbit, Burst: 12500, PeakRate: mbit, MTU: 1514}, nil, "peakrate", "must be above rate"},
		{"peakrate below rate", tbf.Config{Rate: 10 * mbit, Burst: 12500, PeakRate: mbit, MTU: 1514}, nil, "peakrate", "must be above rate 10Mbit"},
		{"peakrate without mtu", tbf.Config{Rate: mbit, Burst: 12500, PeakRate: 10 * mbit}, nil, "mtu", "peakrate needs mtu"},
		{"mtu below link packet", tbf.Config{Rate: mbit, Burst: 12500, PeakRate: 10 * mbit, MTU: 1000}, nil, "mtu", "raise mtu to at least 1514"},
		{"limit and latency", tbf.Config{Rate: mbit, Burst: 12500, Limit: 100000, Latency: time.Millisecond}, nil, "latency", "not both"},
		{"negative latency", tbf.Config{Rate: mbit, Burst: 12500, Latency: -time.Millisecond}, nil, "latency", "negative"},
		{"latency overflowing limit", tbf.Config{Rate: 100 * gbit, Burst: 12500, Latency: time.Hour}, nil, "latency", "lower latency"},
		{"burst lasting 0 ns", tbf.Config{Rate: 1 << 62, Burst: 1514}, nil, "burst", "less than 1 ns"},
		{"mtu lasting 0 ns", tbf.Config{Rate: mbit, Burst: 1 << 20, PeakRate: 1 << 62, MTU: 1514}, nil, "mtu", "less than 1 ns"},
		{"negative lanes", tbf.Config{Rate: mbit, Burst: 12500, Lanes: -1}, nil, "lanes", "out of range"},
		{"too many lanes", tbf.Config{Rate: mbit, Burst: 12500, Lanes: 5000}, nil, "lanes", "give 1 to 1024"},
		{"slack out of range", tbf.Config{Rate: mbit, Burst: 12500, Slack: 2 * time.Second}, nil, "slack", "out of range"},
		{"overhead out of range", tbf.Config{Rate: mbit, Burst: 12500, Overhead: 1 << 20}, nil, "overhead", "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := qdisctest.NewLink(nil)
			if tc.link != nil {
				tc.link(link)
			}
			d, err := tbf.New(link, faketime.NewManualClock(), tc.cfg)
			if err == nil {
				d.Close()
				t.Fatalf("New(%+v) = nil error; want one about %s", tc.cfg, tc.field)
			}
			var ce *tbf.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("New(%+v) = %v; want a ConfigError for %q", tc.cfg, err, tc.field)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
		})
	}
	t.Run("gVisor GSO segments above the qdisc", func(t *testing.T) {
		link := qdisctest.NewLink(nil)
		gvisorGSO(link)
		d, err := tbf.New(link, faketime.NewManualClock(), tbf.Config{Rate: mbit, Burst: 1514})
		if err != nil {
			t.Fatalf("New with gVisor GSO and burst 1514: %v", err)
		}
		d.Close()
	})
}

func TestLimitFromLatency(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tbf.Config
		want uint32
	}{
		// tc: limit = rate*latency + burst.
		{"rate", tbf.Config{Rate: 10 * mbit, Burst: 12500, Latency: 50 * time.Millisecond}, 62500 + 12500},
		// With a peak rate, the smaller of that and peakrate*latency + mtu.
		{"peak smaller", tbf.Config{Rate: 10 * mbit, Burst: 100000, PeakRate: 20 * mbit, MTU: 1514, Latency: 10 * time.Millisecond}, 25000 + 1514},
		{"rate smaller", tbf.Config{Rate: 10 * mbit, Burst: 12500, PeakRate: 100 * mbit, MTU: 1514, Latency: 10 * time.Millisecond}, 12500 + 12500},
		{"explicit limit", tbf.Config{Rate: 10 * mbit, Burst: 12500, Limit: 30000}, 30000},
		{"default: 1000 full-size packets", tbf.Config{Rate: 10 * mbit, Burst: 12500}, 1000 * 1514},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tbf.New(qdisctest.NewLink(nil), faketime.NewManualClock(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if got := d.Config().Limit; got != tc.want {
				t.Errorf("Limit = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestOversizePacketRefused(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	link.LinkMTU = 1000
	// The link could only send 1014-byte packets; a bigger one (as from a
	// misbehaving writer) is refused and counted.
	d, err := tbf.New(link, clock, tbf.Config{Rate: mbit, Burst: 1514, PeakRate: 2 * mbit, MTU: 1200})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pkt := qdisctest.MakePacket(1201, 0, 1)
	defer pkt.DecRef()
	if _, ok := d.WritePacket(pkt).(*tcpip.ErrMessageTooLong); !ok {
		t.Errorf("WritePacket(1201 bytes) with min(burst, mtu) = 1200 did not answer ErrMessageTooLong")
	}
	if refs := pkt.ReadRefs(); refs != 1 {
		t.Errorf("refused packet has %d references, want the caller's 1", refs)
	}
	ok := qdisctest.MakePacket(1200, 0, 2)
	defer ok.DecRef()
	if err := d.WritePacket(ok); err != nil {
		t.Errorf("WritePacket(1200 bytes): %v", err)
	}
	qdisctest.WaitQuiescent(t, d)
	if st := d.Stats(); st.Drops != 1 || st.Packets != 1 {
		t.Errorf("Stats %+v: want 1 drop and 1 packet sent", st)
	}
}

// TestStatsString is the example of `tc -s qdisc` output: five 1000-byte
// packets against a 3000-byte bucket.
func TestStatsString(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	link.LinkMTU = 986
	d, err := tbf.New(link, clock, tbf.Config{Rate: mbit, Burst: 3000, Limit: 100000, Slack: tbf.NoSlack})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := 0; i < 5; i++ {
		pkt := qdisctest.MakePacket(1000, 0, uint64(i))
		if err := d.WritePacket(pkt); err != nil {
			t.Fatal(err)
		}
		pkt.DecRef()
		qdisctest.WaitQuiescent(t, d)
	}
	want := "Sent 3000 bytes 3 pkt (dropped 0, overlimits 1 requeues 0)\n backlog 2000b 2p requeues 0"
	if got := d.Stats().String(); got != want {
		t.Errorf("Stats().String() =\n%s\nwant\n%s", got, want)
	}
	// 1000 bytes at 1 Mbit/s take 8 ms: one more packet leaves then.
	clock.Advance(8 * time.Millisecond)
	qdisctest.WaitQuiescent(t, d)
	if st := d.Stats(); st.Packets != 4 || st.BacklogPackets != 1 || st.Overlimits != 2 {
		t.Errorf("after 8ms: %+v; want 4 sent, 1 queued, 2 overlimits", st)
	}
	if got, want := d.String(), "tbf rate 1Mbit burst 3000b lat 776ms"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestBacklogFullDrops(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	d, err := tbf.New(link, clock, tbf.Config{Rate: mbit, Burst: 1514, Limit: 4 * 1514})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var errs []tcpip.Error
	for i := 0; i < 7; i++ {
		pkt := qdisctest.MakePacket(1514, 0, uint64(i))
		errs = append(errs, d.WritePacket(pkt))
		pkt.DecRef()
		qdisctest.WaitQuiescent(t, d)
	}
	// One leaves at once, four fill the limit, two are dropped.
	for i, err := range errs {
		_, nospace := err.(*tcpip.ErrNoBufferSpace)
		if full := i >= 5; full != nospace {
			t.Errorf("packet %d: %v", i, err)
		}
	}
	if st := d.Stats(); st.Drops != 2 || st.Packets != 1 || st.BacklogBytes != 4*1514 {
		t.Errorf("Stats %+v; want 2 drops, 1 sent, 6056 bytes queued", st)
	}
}

func TestCheckPrecision(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tbf.Config
		warn bool
	}{
		{"10 ms bucket", tbf.Config{Rate: 10 * mbit, Burst: 12500}, false},
		{"100mbit, two packets", tbf.Config{Rate: 100 * mbit, Burst: 3028}, true},
		{"10mbit, one packet", tbf.Config{Rate: 10 * mbit, Burst: 1514}, true},
		{"1mbit, one packet lasts 12 ms", tbf.Config{Rate: mbit, Burst: 1514}, false},
		{"no slack: 1 ms is enough", tbf.Config{Rate: 10 * mbit, Burst: 1250, Slack: tbf.NoSlack}, false},
		{"no slack: 0.5 ms is not", tbf.Config{Rate: 10 * mbit, Burst: 625, Slack: tbf.NoSlack}, true},
		{"6 ms bucket: not with the default slack", tbf.Config{Rate: 10 * mbit, Burst: 7500}, true},
		{"6 ms bucket: enough under fq_codel's 2.5 ms slack", tbf.Config{Rate: 10 * mbit, Burst: 7500, Child: fqChild(fqcodel.Config{})}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.CheckPrecision()
			if (err != nil) != tc.warn {
				t.Fatalf("CheckPrecision() = %v; want a warning: %v", err, tc.warn)
			}
			if err == nil {
				return
			}
			var pe *tbf.PrecisionError
			if !errors.As(err, &pe) {
				t.Fatalf("%T is not a *PrecisionError", err)
			}
			// The suggested burst passes the check.
			c := tc.cfg
			c.Burst = uint32(pe.Suggest)
			if err := c.CheckPrecision(); err != nil {
				t.Errorf("the suggested burst %d still warns: %v", pe.Suggest, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(pe.Suggest)) {
				t.Errorf("warning %q does not suggest a burst", err)
			}
		})
	}
}
