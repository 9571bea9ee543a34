package tbf_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/gso"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf/tbftest"
)

// gsoDeparture is what the link saw of one packet a GSO test wrote.
type gsoDeparture struct {
	wire    uint64 // gso.WireSize
	payload []byte
	tcpSeq  uint32
	at      int64
}

// gsoRun writes the host-GSO packets (payload bytes each, mss) at once into
// a tbf with cfg (no slack) on a host-GSO link, and runs the clock, in
// lockstep with Linux's model, until the model has sent everything; the
// model is fed each packet as the qdisc charges it (the pieces Split makes,
// each its WireSize). It returns what the link saw and the tbf's Stats.
func gsoRun(t *testing.T, cfg tbf.Config, mss int, payloads ...int) ([]gsoDeparture, *tbftest.Model, *tbf.Discipline) {
	t.Helper()
	cfg.Slack = tbf.NoSlack
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	link.GSO, link.GSOMax = stack.HostGSOSupported, 65536
	var mu sync.Mutex
	var got []gsoDeparture
	link.Inspect = func(pkt *stack.PacketBuffer) {
		p, seq := qdisctest.GSOPayload(pkt)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, gsoDeparture{gso.WireSize(pkt), append([]byte(nil), p...), seq, tbftest.NowNS(clock)})
	}
	d, err := tbf.New(link, clock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	start := tbftest.NowNS(clock)
	m := tbftest.NewModel(d.Config(), d.Config().Limit, start)
	tcpSeq, seq := uint32(1000), uint64(0)
	for i, n := range payloads {
		pkt := qdisctest.GSOPacket(n, mss, 0, uint64(i), tcpSeq)
		var pieces []*stack.PacketBuffer
		if max := bucketMax(cfg); gso.WireSize(pkt) > max {
			if pieces, err = gso.Split(pkt, max); err != nil {
				t.Fatal(err)
			}
		} else {
			pieces = []*stack.PacketBuffer{pkt.IncRef()}
		}
		if err := d.WritePacket(pkt); err != nil {
			t.Fatalf("packet %d (%d bytes of payload, %d on the wire): %v", i, n, gso.WireSize(pkt), err)
		}
		for _, p := range pieces {
			m.Enqueue(start, seq, uint32(gso.WireSize(p)))
			seq++
			p.DecRef()
		}
		pkt.DecRef()
		tcpSeq += uint32(n)
	}
	qdisctest.WaitQuiescent(t, d)
	m.Dequeue(start)
	for m.Watchdog >= 0 {
		clock.Advance(time.Duration(m.Watchdog - tbftest.NowNS(clock)))
		qdisctest.WaitQuiescent(t, d)
		m.Dequeue(m.Watchdog)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(m.Sent) {
		t.Fatalf("the tbf sent %d packets, Linux's model %d", len(got), len(m.Sent))
	}
	for k, g := range got {
		if w := m.Sent[k]; g.wire != uint64(w.Size) || g.at != w.At {
			t.Errorf("departure %d: %d wire bytes at %v; Linux's tbf sends %d at %v", k, g.wire, time.Duration(g.at-start), w.Size, time.Duration(w.At-start))
		}
	}
	return got, m, d
}

// bucketMax is the largest packet cfg's buckets pass: min(Burst, MTU).
func bucketMax(cfg tbf.Config) uint64 {
	if cfg.PeakRate != 0 {
		return uint64(min(cfg.Burst, cfg.MTU))
	}
	return uint64(cfg.Burst)
}

// TestGSOChargedAsSegments: a host-GSO packet is charged what it puts on
// the wire, as Linux's qdisc_pkt_len_init charges it: its segments, each
// with the headers again. Departures match Linux's model fed those sizes
// to the nanosecond, and tc -s counts them.
func TestGSOChargedAsSegments(t *testing.T) {
	const mss = 1448
	for _, tc := range []struct {
		name     string
		payloads []int
	}{
		{"one 64 KiB packet", []int{65536 - qdisctest.GSOHeaderLen}},
		{"exact multiples of the MSS", []int{mss * 2, mss * 10, mss * 45}},
		{"with remainders", []int{mss*3 + 1, mss*7 + 700, 40000}},
		{"a segment or less", []int{100, mss}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, m, d := gsoRun(t, tbf.Config{Rate: 1_250_000, Burst: 200_000}, mss, tc.payloads...)
			var want uint64
			for k, n := range tc.payloads {
				segs := uint64((n + mss - 1) / mss)
				w := uint64(n) + segs*qdisctest.GSOHeaderLen
				want += w
				if got[k].wire != w {
					t.Errorf("packet %d (%d bytes of payload): charged %d, want %d (%d segments of %d header bytes each)", k, n, got[k].wire, w, segs, qdisctest.GSOHeaderLen)
				}
			}
			if st := d.Stats(); st.Bytes != want || st.Packets != uint64(len(m.Sent)) || st.Drops != 0 {
				t.Errorf("Stats %+v; want %d bytes, %d packets, no drops", st, want, len(m.Sent))
			}
		})
	}
}

// TestGSOSplitsPacketsLargerThanTheBucket: with host GSO on, a bucket
// smaller than a GSO packet works: each packet larger than Burst (or MTU)
// is cut into pieces of whole segments that fit, as Linux's tbf_segment
// does, the pieces leave as Linux's model sends them, and they carry the
// packet's payload, in order, with their sequence numbers.
func TestGSOSplitsPacketsLargerThanTheBucket(t *testing.T) {
	const mss = 1448
	for _, tc := range []struct {
		name     string
		cfg      tbf.Config
		payloads []int
	}{
		{"16 KiB bucket", tbf.Config{Rate: 125_000, Burst: 16384}, []int{60000, 65536 - qdisctest.GSOHeaderLen, 3000}},
		{"one-packet bucket", tbf.Config{Rate: 12_500_000, Burst: 1514}, []int{20000, mss + 1}},
		{"peak bucket smaller than the rate's", tbf.Config{Rate: 125_000, Burst: 65550, PeakRate: 1_250_000, MTU: 9000}, []int{50000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, d := gsoRun(t, tc.cfg, mss, tc.payloads...)
			limit := bucketMax(tc.cfg)
			var stream []byte
			seq := uint32(1000)
			for k, g := range got {
				if g.wire > limit {
					t.Errorf("piece %d puts %d bytes on the wire, more than the bucket's %d", k, g.wire, limit)
				}
				if g.tcpSeq != seq {
					t.Errorf("piece %d has TCP sequence %d, want %d", k, g.tcpSeq, seq)
				}
				seq += uint32(len(g.payload))
				stream = append(stream, g.payload...)
			}
			var want []byte
			for i, n := range tc.payloads {
				pkt := qdisctest.GSOPacket(n, mss, 0, uint64(i), 0)
				p, _ := qdisctest.GSOPayload(pkt)
				want = append(want, p...)
				pkt.DecRef()
			}
			if !bytes.Equal(stream, want) {
				t.Errorf("the pieces carry %d bytes that differ from the packets' %d", len(stream), len(want))
			}
			if st := d.Stats(); st.Drops != 0 || st.Packets != uint64(len(got)) {
				t.Errorf("Stats %+v; want %d packets (the pieces), no drops", st, len(got))
			}
		})
	}
}

// TestGSOBurstBelowHostGSO: on a link with host GSO, New accepts a burst
// smaller than the GSO size (it cuts such packets), but the receive-path
// shaper (NewTo) still refuses it: a received packet cannot be cut. A
// packet Split cannot cut, for headers that lie, is refused as too long
// and counted, as any packet larger than the bucket.
func TestGSOBurstBelowHostGSO(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	link.GSO, link.GSOMax = stack.HostGSOSupported, 65536
	cfg := tbf.Config{Rate: 125_000, Burst: 12500}
	d, err := tbf.New(link, clock, cfg)
	if err != nil {
		t.Fatalf("New with a 12500-byte burst on a host-GSO link: %v", err)
	}
	defer d.Close()
	if _, err := tbf.NewTo(link, link, clock, cfg); err == nil || !strings.Contains(err.Error(), "at least 65550") {
		t.Errorf("NewTo with a 12500-byte burst on a host-GSO link: %v; want a refusal saying at least 65550", err)
	}
	bad := qdisctest.GSOPacket(20000, 1448, 0, 0, 0)
	defer bad.DecRef()
	bad.NetworkHeader().Slice()[0] = 0x46 // IHL 6 in a 20-byte header
	if err := d.WritePacket(bad); !errors.Is(asError(err), errTooLong) {
		t.Errorf("a GSO packet with a lying header: %v; want ErrMessageTooLong", err)
	}
	if st := d.Stats(); st.Drops != 1 || st.Packets != 0 {
		t.Errorf("Stats %+v; want the one drop", st)
	}
}

var errTooLong = errors.New("message too long")

// asError maps ErrMessageTooLong to errTooLong, for errors.Is.
func asError(err tcpip.Error) error {
	if _, ok := err.(*tcpip.ErrMessageTooLong); ok {
		return errTooLong
	}
	if err == nil {
		return nil
	}
	return errors.New(err.String())
}
