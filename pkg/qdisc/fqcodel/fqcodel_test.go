package fqcodel_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// ipv4Packet returns an IPv4 UDP packet with the given ECN codepoint, its
// network header parsed as on the send path.
func ipv4Packet(ecn uint8, srcPort uint16) *stack.PacketBuffer {
	payload := make([]byte, 100)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: header.IPv4MinimumSize + header.UDPMinimumSize, Payload: buffer.MakeWithData(payload)})
	u := header.UDP(pkt.TransportHeader().Push(header.UDPMinimumSize))
	u.Encode(&header.UDPFields{SrcPort: srcPort, DstPort: 9, Length: uint16(header.UDPMinimumSize + len(payload))})
	ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize))
	ip.Encode(&header.IPv4Fields{
		TOS:         ecn,
		TotalLength: uint16(pkt.Size()),
		TTL:         64,
		Protocol:    uint8(header.UDPProtocolNumber),
		SrcAddr:     tcpip.AddrFrom4([4]byte{10, 0, 0, 1}),
		DstAddr:     tcpip.AddrFrom4([4]byte{10, 0, 0, 2}),
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	return pkt
}

// TestECN: where CoDel would drop an ECN-capable packet it marks it CE
// (its IPv4 checksum still valid) and sends it; a Not-ECT packet it drops;
// with NoECN it drops both.
func TestECN(t *testing.T) {
	for _, tc := range []struct {
		name       string
		noECN      bool
		ecn        uint8
		wantMarked bool
	}{
		{"ECT(0) marked", false, 0x2, true},
		{"ECT(1) marked", false, 0x1, true},
		{"Not-ECT dropped", false, 0x0, false},
		{"ECT(0) dropped with noecn", true, 0x2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := fqcodel.NewScheduler(fqcodel.Config{NoECN: tc.noECN}, 1514)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Purge()
			// A standing queue of 200 ms: past target for an interval.
			now := int64(time.Second)
			for i := 0; i < 50; i++ {
				q.Enqueue(ipv4Packet(tc.ecn, 1000), 128, 7, now)
			}
			now += int64(200 * time.Millisecond)
			var marked, sent int
			for i := 0; i < 30; i++ {
				pkt, _, ok := q.Dequeue(now)
				if !ok {
					break
				}
				sent++
				ip := header.IPv4(pkt.NetworkHeader().Slice())
				if tos, _ := ip.TOS(); tos&0x3 == 0x3 {
					marked++
					if !ip.IsChecksumValid() {
						t.Errorf("a marked packet's IPv4 checksum is wrong")
					}
				}
				pkt.DecRef()
				now += int64(10 * time.Millisecond)
			}
			x := q.XStats()
			if tc.wantMarked && (marked == 0 || x.ECNMark == 0 || x.CoDelDrops != 0) {
				t.Errorf("%d of %d sent packets marked, xstats %+v; want marks instead of drops", marked, sent, x)
			}
			if !tc.wantMarked && (marked != 0 || x.CoDelDrops == 0 || x.ECNMark != 0) {
				t.Errorf("%d marked, xstats %+v; want drops, no marks", marked, x)
			}
		})
	}
}

// TestDisciplineSendsAll: fq_codel alone, far from any limit, sends every
// packet once, each flow in order; its description is tc's.
func TestDisciplineSendsAll(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	d, err := fqcodel.New(link, clock, fqcodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for seq := uint64(1); seq <= 300; seq++ {
		pkt := qdisctest.MakePacket(1000, uint32(1+seq%3), seq)
		if err := d.WritePacket(pkt); err != nil {
			t.Fatal(err)
		}
		pkt.DecRef()
	}
	qdisctest.WaitQuiescent(t, d)
	last := map[uint32]uint64{}
	for _, r := range link.Records() {
		if r.Seq <= last[r.Hash] {
			t.Fatalf("flow %d: packet %d after %d", r.Hash, r.Seq, last[r.Hash])
		}
		last[r.Hash] = r.Seq
	}
	if s := d.Stats(); s.Packets != 300 || s.Drops != 0 || s.BacklogPackets != 0 {
		t.Errorf("stats %+v, want 300 sent, none dropped", s)
	}
	if got, want := d.String(), "fq_codel limit 10240p flows 1024 quantum 1514 target 5ms interval 100ms memory_limit 32Mb ecn drop_batch 64"; got != want {
		t.Errorf("described as %q, want %q", got, want)
	}
	if x := d.XStats(); x.NewFlowCount == 0 || x.MaxPacket != 0 {
		// maxpacket is CoDel's, recorded as packets are dequeued
		t.Logf("xstats %+v", x)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg   fqcodel.Config
		field string
	}{
		{fqcodel.Config{Flows: 70000}, "flows"},
		{fqcodel.Config{Target: 200 * time.Millisecond}, "target"},
		{fqcodel.Config{Target: -time.Millisecond}, "target"},
		{fqcodel.Config{Interval: 2 * time.Hour, Target: time.Millisecond}, "interval"},
	} {
		_, err := fqcodel.NewScheduler(tc.cfg, 1514)
		if ce, ok := err.(*fqcodel.ConfigError); !ok || ce.Field != tc.field {
			t.Errorf("%+v: %v, want a ConfigError naming %s", tc.cfg, err, tc.field)
		}
	}
	_, err := newTBF(qdisctest.NewLink(nil), tcpip.NewStdClock(), tbf.Config{Rate: 125000, Burst: 3028, Latency: time.Millisecond}, &fqcodel.Config{})
	if ce, ok := err.(*tbf.ConfigError); !ok || ce.Field != "limit" {
		t.Errorf("tbf with a child and a latency: %v, want a ConfigError naming limit", err)
	}
}

func TestCloseRace(t *testing.T) {
	for _, tc := range []struct {
		name string
		mk   func(link *qdisctest.Link) (qdisctest.StatsQdisc, error)
	}{
		{"alone", func(link *qdisctest.Link) (qdisctest.StatsQdisc, error) {
			return fqcodel.New(link, tcpip.NewStdClock(), fqcodel.Config{Limit: 100})
		}},
		{"under tbf", func(link *qdisctest.Link) (qdisctest.StatsQdisc, error) {
			return newTBF(link, tcpip.NewStdClock(), tbf.Config{Rate: 1_250_000, Burst: 3028}, &fqcodel.Config{Limit: 100})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 3 {
				qdisctest.CloseRace(t, func() qdisctest.StatsQdisc {
					link := qdisctest.NewLink(nil)
					link.Discard = true
					q, err := tc.mk(link)
					if err != nil {
						t.Fatal(err)
					}
					return q
				}, 8, 400)
			}
		})
	}
}

func TestNoAllocationPerPacket(t *testing.T) {
	for _, tc := range []struct {
		name string
		mk   func(link *qdisctest.Link) (qdisctest.StatsQdisc, error)
	}{
		{"alone", func(link *qdisctest.Link) (qdisctest.StatsQdisc, error) {
			return fqcodel.New(link, tcpip.NewStdClock(), fqcodel.Config{})
		}},
		{"under tbf", func(link *qdisctest.Link) (qdisctest.StatsQdisc, error) {
			return newTBF(link, tcpip.NewStdClock(), tbf.Config{Rate: 10_000 * 125_000_000, Burst: 1000 * 1514}, &fqcodel.Config{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			q, err := tc.mk(link)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			if a := qdisctest.AllocsPerPacket(t, q, q.(qdisctest.Quiescer)); a != 0 {
				t.Errorf("%.3f allocations per packet", a)
			}
		})
	}
}

// TestTBFSlackUnderTarget: under a tbf, a sparse flow's packet may wait
// for the tbf's rationed timer; the default Slack is then at most half
// fq_codel's target, so that such a wait alone never puts it over target.
func TestTBFSlackUnderTarget(t *testing.T) {
	for _, tc := range []struct {
		child *fqcodel.Config
		slack time.Duration
		want  time.Duration
	}{
		{nil, 0, tbf.DefaultSlack},
		{&fqcodel.Config{}, 0, fqcodel.DefaultTarget / 2},
		{&fqcodel.Config{Target: 30 * time.Millisecond, Interval: 300 * time.Millisecond}, 0, tbf.DefaultSlack},
		{&fqcodel.Config{}, 4 * time.Millisecond, 4 * time.Millisecond}, // as given
	} {
		d, err := newTBF(qdisctest.NewLink(nil), tcpip.NewStdClock(), tbf.Config{Rate: 1_250_000, Burst: 12500, Slack: tc.slack}, tc.child)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Config().Slack; got != tc.want {
			t.Errorf("child %+v, slack %v: Slack in force %v, want %v", tc.child, tc.slack, got, tc.want)
		}
		d.Close()
	}
}
