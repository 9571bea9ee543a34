package e2e

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// cakeRates are TestCakeUnderLoad's bandwidths: two in CI; the sweep in
// docs/cake.md is go test -run TestCakeUnderLoad ./e2e/ -args
// -cake.rates=1mbit,10mbit,100mbit,1gbit.
var cakeRates = flag.String("cake.rates", "10mbit,100mbit", "cake bandwidths TestCakeUnderLoad measures, comma-separated")

// cakeOptions are the cake cases' windows: short, a case is about 6 s.
var cakeOptions = measure.Options{Warmup: time.Second, Window: 4 * time.Second}

// cakeQDisc is the MakeQDisc of cake configured by words.
func cakeQDisc(t *testing.T, words string) lab.MakeQDisc {
	t.Helper()
	mk, err := lab.CakeQDisc(words)
	if err != nil {
		t.Fatal(err)
	}
	return mk
}

// TestCakeHostFairness: the sandbox (the netstack) serves two clients at
// once, A with 1 TCP stream and B with 10, through 100 Mbit/s. With
// cake's dual-dsthost each client gets half: A's share of the goodput
// within [0.45, 0.55] (issue 29; seed 003's server measured ~50/50).
// With triple-isolate, cake's default, sch_cake.c divides each flow's
// quantum by the larger of its source's and its destination's bulk flow
// counts, and on one sender every flow's source has 11: each flow gets a
// share, A about 1/11 (asserted below 0.2, as TestServerFairness holds
// the core and caketest's model to it), as netqdisc's tbf with an
// fq_codel child gives (per flow, not per host).
func TestCakeHostFairness(t *testing.T) {
	if raceDetector {
		t.Skip("shares need the netstack at 100 Mbit/s: measured without -race (.ci/run runs go test ./e2e/ too)")
	}
	l := newLab(t)
	loads := lab.HostLoads(1, 10)
	for _, tc := range []struct {
		name   string
		mk     func(t *testing.T) lab.MakeQDisc
		lo, hi float64
	}{
		{"cake dual-dsthost", func(t *testing.T) lab.MakeQDisc { return cakeQDisc(t, "bandwidth 100mbit dual-dsthost") }, 0.45, 0.55},
		{"cake triple-isolate", func(t *testing.T) lab.MakeQDisc { return cakeQDisc(t, "bandwidth 100mbit triple-isolate") }, 0, 0.2},
		{"tbf + fq_codel", func(t *testing.T) lab.MakeQDisc {
			mk, _ := qdiscFrom(t, []string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=125000", "--qdisc-tbf-child=fq_codel"}, nil)
			return mk
		}, 0, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := l.MeasureNetstackHosts(tc.mk(t), loads, cakeOptions)
			if err != nil {
				t.Fatal(err)
			}
			s := lab.Shares(r)
			t.Logf("%s: A (1 stream) %.2f Mbit/s, B (10 streams) %.2f Mbit/s: A's share %.3f; on the wire %.2f Mbit/s",
				tc.name, r.Classes[0].Goodput*8/1e6, r.Classes[1].Goodput*8/1e6, s[0], r.PeerBps*8/1e6)
			if s[0] < tc.lo || s[0] > tc.hi {
				t.Errorf("A's share %.3f, want within [%.2f, %.2f]\n%s", s[0], tc.lo, tc.hi, r.TC)
			}
		})
	}
}

// TestCakeUnderLoad: 4 bulk TCP streams from the netstack through cake
// at 10 and 100 Mbit/s (no overhead keyword: cake charges each frame's
// length, what the peer's veth counts), the peer pinging the netstack
// meanwhile: on the wire within [0.99, 1.005] of the bandwidth (no token
// bucket: no burst above it), and the pings, a sparse flow, within 5 ms
// (p99) of the idle RTT, none lost.
func TestCakeUnderLoad(t *testing.T) {
	if raceDetector {
		t.Skip("rates and latency under load are timing-sensitive: measured without -race (.ci/run runs go test ./e2e/ too)")
	}
	l := newLab(t)
	for _, bw := range strings.Split(*cakeRates, ",") {
		words := "bandwidth " + bw
		t.Run(words, func(t *testing.T) {
			cfg, err := cake.ParseQdisc(words)
			if err != nil {
				t.Fatal(err)
			}
			rate := float64(cfg.Bandwidth)
			o := measure.Options{Streams: 4, Warmup: time.Second, Window: 4 * time.Second, PingInterval: 50 * time.Millisecond}
			r, err := l.MeasureNetstack(cakeQDisc(t, words), o)
			if err != nil {
				t.Fatal(err)
			}
			ratio := r.WireBps / rate
			p50, p99 := r.RTT(0.5)-r.IdleRTT, r.RTT(0.99)-r.IdleRTT
			t.Logf("cake %s: on the wire %.2f Mbit/s, %.4f of the bandwidth; ping RTT idle %v, under load %v (p50) %v (p99) above idle; %d/%d answered",
				words, r.WireBps*8/1e6, ratio, r.IdleRTT, p50, p99, len(r.RTTs), r.PingsSent)
			checkRate(t, "on the wire, of the bandwidth", ratio, 0.99, 1.005)
			if p99 > 5*time.Millisecond {
				t.Errorf("ping RTT p99 %v above idle under load; want at most 5 ms", p99)
			}
			if r.PingsSent == 0 || r.PingsLost() != 0 {
				t.Errorf("%d of %d pings lost", r.PingsLost(), r.PingsSent)
			}
		})
	}
}

// TestCakeDiffserv4: 4 bulk TCP streams (unmarked: best effort) from the
// netstack through cake bandwidth 100mbit diffserv4, the peer pinging
// with two probes at once, one marked EF (TOS 0xb8: diffserv4's voice
// tin) and one unmarked; the netstack's echo reply keeps the request's
// TOS, so each reply crosses cake in its probe's tin. Asserted, not
// timed: cake's voice tin (the last of diffserv4's four) counted at least
// the EF replies that came back. The two probes' RTTs are logged (the
// issue gives no bound; on this shared 2-core VM their tails move
// together with the machine's load: docs/cake-results.md).
func TestCakeDiffserv4(t *testing.T) {
	if raceDetector {
		t.Skip("latency under load is timing-sensitive: measured without -race (.ci/run runs go test ./e2e/ too)")
	}
	l := newLab(t)
	const ef, none = 0xb8, 0
	o := measure.Options{Warmup: time.Second, Window: 3 * time.Second, PingInterval: 20 * time.Millisecond}
	r, err := l.MeasureNetstackMarked(cakeQDisc(t, "bandwidth 100mbit diffserv4"), 4, []uint8{ef, none}, o)
	if err != nil {
		t.Fatal(err)
	}
	voice, be := r.Probes[0], r.Probes[1]
	t.Logf("cake 100mbit diffserv4, 4 bulk streams: goodput %.2f Mbit/s; EF ping idle %v, p50 %v, p99 %v (%d/%d); unmarked ping idle %v, p50 %v, p99 %v (%d/%d)",
		r.Goodput*8/1e6, voice.IdleRTT, voice.RTT(0.5), voice.RTT(0.99), len(voice.RTTs), voice.PingsSent,
		be.IdleRTT, be.RTT(0.5), be.RTT(0.99), len(be.RTTs), be.PingsSent)
	if len(voice.RTTs) == 0 || len(be.RTTs) == 0 {
		t.Fatalf("no ping answered under load: EF %d/%d, unmarked %d/%d", len(voice.RTTs), voice.PingsSent, len(be.RTTs), be.PingsSent)
	}
	if len(r.Tins) != 4 {
		t.Fatalf("cake diffserv4 has %d tins; want 4", len(r.Tins))
	}
	if got, want := r.Tins[3].SentPackets, uint32(len(voice.RTTs)); got < want {
		t.Errorf("cake's voice tin sent %d packets; want at least the %d EF echo replies answered", got, want)
	}
}

// TestCakeAckFilter: the peer sends the netstack 4 TCP streams through
// the kernel's tbf at 100 Mbit/s, and the netstack's ACKs leave through
// cake at 300 kbit/s (1:333, where the ACKs, not the download, fill the
// uplink). With ack-filter cake drops the ACKs a later one makes
// redundant: asserted that it dropped some, and that the download then
// reaches 0.95 of its 100 Mbit/s; without the filter the download is
// logged beside it (20-60 Mbit/s here: its ACKs queue behind each other).
func TestCakeAckFilter(t *testing.T) {
	if raceDetector {
		t.Skip("the download's rate is timing-sensitive: measured without -race (.ci/run runs go test ./e2e/ too)")
	}
	l := newLab(t)
	const down = 100 * 125_000
	o := cakeOptions
	o.Streams = 4
	var without float64
	for _, words := range []string{"bandwidth 300kbit", "bandwidth 300kbit ack-filter"} {
		r, err := l.MeasureNetstackDownload(cakeQDisc(t, words), down, o)
		if err != nil {
			t.Fatal(err)
		}
		secs := r.Elapsed.Seconds()
		t.Logf("cake %s: download %.2f Mbit/s at the netstack's NIC; cake sent %.0f packets/s, its ACK filter dropped %.0f/s",
			words, r.RxWireBps*8/1e6, float64(r.EgressPackets)/secs, float64(r.AckDrops)/secs)
		if !strings.Contains(words, "ack-filter") {
			without = r.RxWireBps
			continue
		}
		if r.AckDrops == 0 {
			t.Errorf("cake %s dropped no ACK under a download whose ACKs fill the uplink", words)
		}
		checkRate(t, "the download with the ACK filter, of 100 Mbit/s", r.RxWireBps/down, 0.95, 1.01)
		t.Logf("the ACK filter took the download from %.2f to %.2f Mbit/s", without*8/1e6, r.RxWireBps*8/1e6)
	}
}
