package tbf_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	upstreamtbf "gvisor.dev/gvisor/pkg/tcpip/link/qdisc/tbf"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// never is a ceiling far away: 10 Tbit/s. (The gVisor pull request's
// 100 Gbit/s is not far enough for a micro-benchmark: one core writes
// 1500-byte packets at about 45 GB/s into a qdisc whose lower link
// discards them, so 100 Gbit/s shapes it, at 120 ns a packet.) Its bucket
// and queue are 1000 full-size packets a lane, as fifo's queues, so that
// the two hold the same backlog (a queue must hold the bucket's largest packet: a
// 128 MiB bucket would make it 89,000 packets, far out of cache).
var never = tbf.Config{Rate: 10_000 * gbit, Burst: 1000 * 1514}

func TestNoAllocationPerPacket(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tbf.Config
	}{
		{"never limiting", never},
		{"never limiting, 4 queues", tbf.Config{Rate: never.Rate, Burst: never.Burst, Lanes: 4}},
		// Shaping at 10 Gbit/s: the dispatcher sleeps and its one timer is
		// re-armed; still no allocation.
		{"shaping", tbf.Config{Rate: 10 * gbit, Burst: 3028, Limit: 1 << 20}},
		{"shaping, 4 queues", tbf.Config{Rate: 10 * gbit, Burst: 3028, Limit: 1 << 20, Lanes: 4}},
		{"shaping with a peak rate", tbf.Config{Rate: 10 * gbit, Burst: 64 << 10, PeakRate: 20 * gbit, MTU: 3028, Limit: 1 << 20, Lanes: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			d, err := tbf.New(link, tcpip.NewStdClock(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if a := qdisctest.AllocsPerPacket(t, d, d); a != 0 {
				t.Errorf("%.3f allocations per packet, want 0", a)
			}
		})
	}
}

// BenchmarkWritePacket is the per-packet cost of a tbf that never limits,
// from WritePacket to the lower link, with 1 and 2 queues and the
// producers given by -cpu (fifo's benchmark has the same names, for a
// ratio between the two); BenchmarkUpstreamWritePacket is gVisor's own tbf
// on the same setting (it has one queue), for a ratio from one run.
func BenchmarkWritePacket(b *testing.B) {
	benchQueues(b, qdisctest.BenchWritePacket)
}

// BenchmarkWritePacketMixed is BenchmarkWritePacket with packets of
// qdisctest.MixedLengths in turn (htb's benchmark of the same name gives
// the ratio).
func BenchmarkWritePacketMixed(b *testing.B) {
	benchQueues(b, qdisctest.BenchWritePacketMixed)
}

// benchQueues runs bench on a tbf that never limits, with 1 and 2 queues.
func benchQueues(b *testing.B, bench func(*testing.B, stack.QueueingDiscipline)) {
	for _, queues := range []int{1, 2} {
		b.Run(map[int]string{1: "1queue", 2: "2queues"}[queues], func(b *testing.B) {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			cfg := never
			cfg.Lanes = queues
			// One limit for all the lanes, as Linux's tbf has: 1000
			// full-size packets a lane, the backlog fifo's lanes hold.
			cfg.Limit = uint32(queues) * 1000 * 1514
			d, err := tbf.New(link, tcpip.NewStdClock(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			bench(b, d)
			qdisctest.WaitQuiescent(b, d)
		})
	}
}

func BenchmarkUpstreamWritePacket(b *testing.B) {
	link := qdisctest.NewLink(nil)
	link.Discard = true
	d, err := upstreamtbf.New(link, tcpip.NewStdClock(), never.Rate, never.Burst, 1000)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	qdisctest.BenchWritePacket(b, d)
}
