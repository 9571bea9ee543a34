package cake

import (
	"runtime"
	"sync/atomic"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// never is cake shaping at 10 Tbit/s: a ceiling far away, as tbf's
// benchmark has (cake's shaper still books every packet).
func never() Config {
	c := DefaultConfig()
	c.Bandwidth = 10_000 * 125_000_000
	return c
}

// TestNoAllocationPerPacket: once warm, cake allocates nothing per packet,
// unlimited or shaping, from WritePacket to the lower link.
func TestNoAllocationPerPacket(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"unlimited", DefaultConfig()},
		{"never limiting", never()},
		{"shaping at 10 Gbit/s, ack-filter, diffserv4", func() Config {
			c := DefaultConfig()
			c.Bandwidth, c.AckFilter, c.Diffserv = 1_250_000_000, AckFilterOn, Diffserv4
			return c
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			d, err := New(link, tcpip.NewStdClock(), tc.cfg)
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

// BenchmarkWritePacket is cake's cost per packet when it never limits,
// from WritePacket to the lower link, on the harness fq_codel's, tbf's and
// fifo's use (1500-byte packets, one hash per producer): cake's default
// (unlimited, diffserv3, triple-isolate) and shaping at 10 Tbit/s.
// BenchmarkFQCoDelWritePacket is fq_codel on the same harness, for the
// ratio from one run.
func BenchmarkWritePacket(b *testing.B) { benchCake(b, qdisctest.BenchWritePacket) }

func BenchmarkFQCoDelWritePacket(b *testing.B) { benchFQCoDel(b, qdisctest.BenchWritePacket) }

// BenchmarkWritePacketPaced and BenchmarkFQCoDelWritePacketPaced are
// the two on BenchWritePacketPaced: the producers yield every 64 packets,
// so that both measure the path to the lower link rather than their
// overflow drops (BenchWritePacket's producers outrun the dispatcher of a
// qdisc that takes every packet: drops/op).
func BenchmarkWritePacketPaced(b *testing.B) { benchCake(b, qdisctest.BenchWritePacketPaced) }

func BenchmarkFQCoDelWritePacketPaced(b *testing.B) {
	benchFQCoDel(b, qdisctest.BenchWritePacketPaced)
}

// benchCake runs write (a qdisctest harness) on cake unlimited and at 10
// Tbit/s, on a lower link that discards, reporting drops/op.
func benchCake(b *testing.B, write func(*testing.B, stack.QueueingDiscipline)) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{{"unlimited", DefaultConfig()}, {"10Tbit", never()}} {
		b.Run(tc.name, func(b *testing.B) {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			d, err := New(link, tcpip.NewStdClock(), tc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			write(b, d)
			qdisctest.WaitQuiescent(b, d)
			qdisctest.ReportDrops(b, d)
		})
	}
}

// benchFQCoDel is benchCake for fq_codel with its defaults.
func benchFQCoDel(b *testing.B, write func(*testing.B, stack.QueueingDiscipline)) {
	link := qdisctest.NewLink(nil)
	link.Discard = true
	d, err := fqcodel.New(link, tcpip.NewStdClock(), fqcodel.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	write(b, d)
	qdisctest.WaitQuiescent(b, d)
	qdisctest.ReportDrops(b, d)
}

// BenchmarkSpoofedFlood is a flood of 64-byte UDP packets from 1000
// spoofed source hosts into cake (triple-isolate, shaping at 1 Mbit/s,
// memlimit 64Kb) at far above its rate: past the first few hundred
// packets every one costs the hash (a host table slot and a flow way),
// an overflow drop from the fattest flow, and now and then a departure.
// It reports the most memory cake held, which must stay within the
// limit.
func BenchmarkSpoofedFlood(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Bandwidth, cfg.Memlimit = 125_000, MinMemlimit
	s := testSched(b, cfg)
	pkts := make([]*stack.PacketBuffer, 1000)
	for i := range pkts {
		pkts[i] = pk{src: uint16(i), dst: 1, proto: 17, sport: uint16(i), dport: 53, payload: 64 - 28}.build()
		defer pkts[i].DecRef()
	}
	b.ReportAllocs()
	b.ResetTimer()
	now := int64(0)
	for i := 0; i < b.N; i++ {
		pkt := pkts[i%len(pkts)]
		s.Enqueue(pkt.IncRef(), uint32(pkt.Size()), now)
		if p, _, ok := s.Dequeue(now); ok {
			p.DecRef()
		}
		now += 100
	}
	b.StopTimer()
	if s.bufferMaxUsed > uint64(cfg.Memlimit)+uint64(pkts[0].MemSize()) {
		b.Fatalf("cake held %d bytes, above its limit %d and one packet", s.bufferMaxUsed, cfg.Memlimit)
	}
	b.ReportMetric(float64(s.bufferMaxUsed), "maxmem-bytes")
	b.ReportMetric(float64(s.drops)/float64(b.N), "drops/op")
}

// BenchmarkWritePacketIPv4 is BenchmarkWritePacketPaced with 1500-byte
// IPv4 TCP packets, each producer a host of its own: cake (triple-isolate)
// reads every packet's addresses for its hosts, which fq_codel, using
// pkt.Hash, never reads.
func BenchmarkWritePacketIPv4(b *testing.B) {
	for _, tc := range []struct {
		name string
		mk   func(link *qdisctest.Link) (stack.QueueingDiscipline, qdisctest.Quiescer, func())
	}{
		{"cake", func(link *qdisctest.Link) (stack.QueueingDiscipline, qdisctest.Quiescer, func()) {
			d, err := New(link, tcpip.NewStdClock(), DefaultConfig())
			if err != nil {
				b.Fatal(err)
			}
			return d, d, d.Close
		}},
		{"fq_codel", func(link *qdisctest.Link) (stack.QueueingDiscipline, qdisctest.Quiescer, func()) {
			d, err := fqcodel.New(link, tcpip.NewStdClock(), fqcodel.Config{})
			if err != nil {
				b.Fatal(err)
			}
			return d, d, d.Close
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			q, quiet, closeQ := tc.mk(link)
			defer closeQ()
			var host atomic.Uint32
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				h := host.Add(1)
				pkt := pk{src: uint16(h), dst: 1, sport: uint16(h), dport: 80, payload: 1460, hash: h}.build()
				defer pkt.DecRef()
				for i := 1; pb.Next(); i++ {
					qdisctest.Feed(q, pkt, 1)
					if i%qdisctest.YieldEvery == 0 {
						runtime.Gosched() // paced, as BenchWritePacketPaced
					}
				}
			})
			qdisctest.WaitQuiescent(b, quiet)
			qdisctest.ReportDrops(b, q.(interface{ Stats() qdisc.Stats }))
		})
	}
}
