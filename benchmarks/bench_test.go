package benchmarks

import (
	"flag"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

var (
	benchDuration = flag.Duration("harness.duration", time.Second, "full-stack benchmarks: how long each run measures")
	benchWarmup   = flag.Duration("harness.warmup", 300*time.Millisecond, "full-stack benchmarks: warm-up before measuring")
)

func benchOptions(streams int) measure.Options {
	return measure.Options{Streams: streams, Warmup: *benchWarmup, Window: *benchDuration}
}

// report runs c once per iteration and reports its figures.
func report(b *testing.B, c Candidate, o measure.Options) {
	for b.Loop() {
		r, err := Run(c, o)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.GoodputBps*8/1e6, "goodput-Mbit/s")
		b.ReportMetric(r.WireBps*8/1e6, "wire-Mbit/s")
		if c.Rate != 0 {
			b.ReportMetric(r.Ratio(), "wire/rate")
		}
		b.ReportMetric(float64(r.RTT(0.5))/1e6, "rtt-p50-ms")
		b.ReportMetric(r.CPUPercent(), "cpu-%")
		b.ReportMetric(r.CPUPerGB(), "cpu-s/GB")
		b.ReportMetric(float64(r.Drops), "drops")
		b.ReportMetric(float64(r.CPUPerPacket())/1e3, "cpu-µs/pkt")
		if r.HasLateness && r.Lateness.Count() > 0 {
			b.ReportMetric(float64(r.Lateness.Quantile(0.5))/1e3, "wake-late-p50-µs")
			b.ReportMetric(float64(r.Lateness.Quantile(0.99))/1e3, "wake-late-p99-µs")
		}
	}
}

func slug(s string) string {
	out := []byte(s)
	for i, c := range out {
		if c == ' ' {
			out[i] = '-'
		}
	}
	return string(out)
}

// BenchmarkThroughput is the gVisor pull request's first table: goodput of
// every candidate at a 100 Gbit/s ceiling with a 128 MiB bucket, at 1 to 32
// streams. Run with -benchtime=1x.
func BenchmarkThroughput(b *testing.B) {
	for _, streams := range []int{1, 2, 4, 8, 16, 32} {
		for _, c := range SideBySide(FarRate, FarBurst) {
			b.Run(fmt.Sprintf("%s/streams=%d", slug(c.Name()), streams), func(b *testing.B) {
				report(b, c, benchOptions(streams))
			})
		}
	}
}

// BenchmarkAccuracy is on-wire bytes over the configured rate, for
// netqdisc's and upstream's tbf (burst 10 ms of rate, at least two
// packets) and netqdisc's cake (AccuracySuite), at 1, 10, 100 and 1000
// Mbit/s, 4 streams.
func BenchmarkAccuracy(b *testing.B) {
	for _, r := range []uint64{1 * Mbit, 10 * Mbit, 100 * Mbit, 1000 * Mbit} {
		for _, c := range AccuracySuite([]uint64{r}, measure.Options{}).Settings[0].Candidates {
			b.Run(fmt.Sprintf("%s/rate=%s", slug(c.Name()), rate.FormatRate(r)), func(b *testing.B) {
				o := benchOptions(4)
				o.Window *= 2
				report(b, c, o)
			})
		}
	}
}

// BenchmarkPacedCPU is the pull request's third table: CPU with 4 streams
// paced to 10, 100, 250 and 500 Mbit/s in all, every candidate at a far
// ceiling.
func BenchmarkPacedCPU(b *testing.B) {
	for _, target := range []uint64{10 * Mbit, 100 * Mbit, 250 * Mbit, 500 * Mbit} {
		for _, c := range SideBySide(FarRate, FarBurst) {
			b.Run(fmt.Sprintf("%s/target=%s", slug(c.Name()), rate.FormatRate(target)), func(b *testing.B) {
				o := benchOptions(4)
				o.Pace = target
				report(b, c, o)
			})
		}
	}
}

// BenchmarkPerPacket is each candidate's cost per packet with nothing but
// the qdisc: a lower link that discards, 1500-byte packets, one producer
// per P (-cpu), tbf at 10 Tbit/s so that it never limits.
func BenchmarkPerPacket(b *testing.B) {
	for _, c := range SideBySide(10_000_000*Mbit, FarBurst) {
		b.Run(slug(c.Name()), func(b *testing.B) {
			link := qdisctest.NewLink(nil)
			link.Discard = true
			q, err := c.Make(link, tcpip.NewStdClock())
			if err != nil {
				b.Fatal(err)
			}
			var w func(*stack.PacketBuffer) tcpip.Error
			if q == nil {
				w = func(pkt *stack.PacketBuffer) tcpip.Error {
					var l stack.PacketBufferList
					l.PushBack(pkt)
					_, err := link.WritePackets(l)
					return err
				}
			} else {
				defer q.Close()
				w = q.WritePacket
			}
			b.ReportAllocs()
			var hash atomic.Uint32
			b.RunParallel(func(pb *testing.PB) {
				pkt := qdisctest.MakePacket(1500, hash.Add(1), 0)
				defer pkt.DecRef()
				for pb.Next() {
					for w(pkt) != nil {
						runtime.Gosched() // a full queue: let the dispatcher drain it
					}
				}
			})
		})
	}
}

// BenchmarkSmallBurst is on-wire bytes over the rate with a bucket of one
// or two packets, at 10 and 100 Mbit/s, netqdisc's tbf beside upstream's,
// with the dispatcher's wake-up lateness (p50, p99).
func BenchmarkSmallBurst(b *testing.B) {
	for _, set := range SmallBurstSuite([]uint64{10 * Mbit, 100 * Mbit}, []uint64{1514, 3028}, benchOptions(4)).Settings {
		for _, c := range set.Candidates {
			b.Run(slug(c.Name()+" "+set.Label), func(b *testing.B) {
				o := set.Options
				o.Window *= 2
				report(b, c, o)
			})
		}
	}
}

// BenchmarkShapedCPU is CPU per packet with the streams paced to the tbf's
// rate (burst 1514 B), beside fifo carrying the same load.
func BenchmarkShapedCPU(b *testing.B) {
	for _, set := range ShapedCPUSuite([]uint64{10 * Mbit, 100 * Mbit}, 1514, benchOptions(4)).Settings {
		for _, c := range set.Candidates {
			b.Run(slug(c.Name()+" "+set.Label), func(b *testing.B) {
				report(b, c, set.Options)
			})
		}
	}
}

// BenchmarkBufferbloat is the bufferbloat suite (RRUL-like: 4 bulk
// streams, a TCP probe and a UDP echo) at 10 and 100 Mbit/s: tbf with its
// default FIFO, with latency 20ms, with fq_codel as its child, fq_codel
// alone, upstream's tbf. It reports the probes' RTT above idle, goodput and
// Jain's index over the streams. Run with -benchtime=1x.
func BenchmarkBufferbloat(b *testing.B) {
	o := benchOptions(4)
	for _, set := range BufferbloatSuite([]uint64{10 * Mbit, 100 * Mbit}, o).Settings {
		for _, c := range set.Candidates {
			b.Run(fmt.Sprintf("%s/rate=%s", slug(c.Name()), set.Label), func(b *testing.B) {
				for b.Loop() {
					r, err := Run(c, set.Options)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(r.GoodputBps*8/1e6, "goodput-Mbit/s")
					b.ReportMetric(Jain(r.StreamBps), "jain")
					b.ReportMetric(ProbeP50Above(r), "tcp-probe-p50-ms")
					b.ReportMetric(ProbeP99Above(r), "tcp-probe-p99-ms")
					b.ReportMetric(UDPP50Above(r), "udp-echo-p50-ms")
					b.ReportMetric(UDPP99Above(r), "udp-echo-p99-ms")
					b.ReportMetric(float64(r.Drops), "drops")
				}
			})
		}
	}
}
