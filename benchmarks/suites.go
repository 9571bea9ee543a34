package benchmarks

import (
	"fmt"
	"time"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/runsc-flags"
)

// Mbit is 1 Mbit/s in bytes per second.
const Mbit = 125_000

// The settings of the gVisor pull request's tables (seeds/001): a ceiling
// far away, 100 Gbit/s with a 128 MiB bucket.
const (
	FarRate  = 100_000 * Mbit
	FarBurst = 128 << 20
)

// Suite is a set of settings, each run with several candidates.
type Suite struct {
	Name string
	// Settings are run in order, each with every candidate, in rounds.
	Settings []Setting
}

// Setting is one row of a suite's table.
type Setting struct {
	Label      string
	Candidates []Candidate
	Options    measure.Options
}

// Summary is one candidate at one setting, over rounds.
type Summary struct {
	Suite, Setting string
	Candidate      Candidate
	Rounds         []measure.Result
}

// Median of f over the rounds, and its spread (min, max): measure.Median.
func (s Summary) Median(f func(measure.Result) float64) (med, lo, hi float64) {
	return measure.MedianOf(s.Rounds, f)
}

// ThroughputSuite is the pull request's first table: every candidate at a
// far ceiling, at each stream count.
func ThroughputSuite(streams []int, o measure.Options) Suite {
	s := Suite{Name: "throughput"}
	for _, n := range streams {
		oo := o
		oo.Streams = n
		cands := append(SideBySide(FarRate, FarBurst), SingleQueue(&runscflags.Config{QDisc: "tbf", TBFRate: FarRate, TBFBurst: FarBurst}))
		s.Settings = append(s.Settings, Setting{Label: fmt.Sprintf("%d", n), Candidates: cands, Options: oo})
	}
	return s
}

// AccuracyBurst is the burst the accuracy suite uses: 10 ms of the rate,
// and at least two full-size packets.
func AccuracyBurst(r uint64) uint64 { return max(r/100, 2*1514) }

// AccuracySuite runs netqdisc's and upstream's tbf at each rate, and
// netqdisc's cake with its defaults and with COBALT dormant
// (interplanetary: a 1000 s interval), which tells the shaper's accuracy
// from what TCP loses to the AQM's drops (cake has no bucket to refill
// an emptied queue's idle time).
func AccuracySuite(rates []uint64, o measure.Options) Suite {
	s := Suite{Name: "accuracy"}
	for _, r := range rates {
		cfg := &runscflags.Config{QDisc: "tbf", TBFRate: r, TBFBurst: AccuracyBurst(r)}
		cands := []Candidate{FromConfig(cfg), Upstream(cfg), Cake(r, ""), Cake(r, CakeDormantAQM)}
		s.Settings = append(s.Settings, Setting{Label: rate.FormatRate(r), Candidates: cands, Options: o})
	}
	return s
}

// CakeDormantAQM is the accuracy suite's second cake: COBALT tuned for
// an RTT so long that it never drops, leaving the shaper alone.
const CakeDormantAQM = "interplanetary"

// AccuracyNames are the accuracy suite's candidates, in table order.
var AccuracyNames = []string{"netqdisc tbf", "upstream tbf", "netqdisc cake", "netqdisc cake (" + CakeDormantAQM + ")"}

// PacedSuite is the pull request's third table: streams paced to a target
// total rate, every candidate at a far ceiling; it measures CPU.
func PacedSuite(targets []uint64, o measure.Options) Suite {
	s := Suite{Name: "paced"}
	for _, t := range targets {
		oo := o
		oo.Pace = t
		s.Settings = append(s.Settings, Setting{Label: rate.FormatRate(t), Candidates: SideBySide(FarRate, FarBurst), Options: oo})
	}
	return s
}

// SmallBurstSuite runs netqdisc's and upstream's tbf at each rate with
// each burst (bytes), bulk streams: how close to the rate a bucket of one
// or two packets holds.
func SmallBurstSuite(rates, bursts []uint64, o measure.Options) Suite {
	s := Suite{Name: "smallburst"}
	for _, r := range rates {
		for _, b := range bursts {
			cfg := &runscflags.Config{QDisc: "tbf", TBFRate: r, TBFBurst: b}
			s.Settings = append(s.Settings, Setting{Label: fmt.Sprintf("%s burst %d", rate.FormatRate(r), b), Candidates: []Candidate{FromConfig(cfg), Upstream(cfg)}, Options: o})
		}
	}
	return s
}

// ShapedCPUSuite paces the streams to each rate and runs fifo, and
// netqdisc's and upstream's tbf at that rate with burst bytes: the CPU a
// packet costs when the tbf shapes, against fifo carrying the same load.
func ShapedCPUSuite(rates []uint64, burst uint64, o measure.Options) Suite {
	s := Suite{Name: "shapedcpu"}
	fifoCfg := &runscflags.Config{QDisc: "fifo"}
	for _, r := range rates {
		cfg := &runscflags.Config{QDisc: "tbf", TBFRate: r, TBFBurst: burst}
		for _, load := range []struct {
			label string
			pace  uint64
		}{
			// Paced to the rate, the headers put the wire above it: the
			// tbf is overloaded and keeps a standing queue.
			{"", r},
			// 90% of the rate (about 95% on the wire, with headers): no
			// standing queue, and still the tbf holds most packets, a
			// bucket of one packet being that small.
			{" at 90%", r / 10 * 9},
		} {
			oo := o
			oo.Pace = load.pace
			s.Settings = append(s.Settings, Setting{Label: rate.FormatRate(r) + load.label, Candidates: []Candidate{FromConfig(fifoCfg), FromConfig(cfg), Upstream(cfg)}, Options: oo})
		}
	}
	return s
}

// BufferbloatSuite is an RRUL-like test of latency under load: 4 bulk
// streams, the TCP request/response probe and a ping-like UDP echo
// (measure.Options.Sparse) through each candidate at each rate, burst 10 ms of
// it: tbf with its default child (fq), with the byte FIFO that was the
// default before, with the FIFO bounded at 20 ms, with fq_codel as its
// child, fq_codel alone at line rate, and upstream's tbf.
func BufferbloatSuite(rates []uint64, o measure.Options) Suite {
	s := Suite{Name: "bufferbloat"}
	o.Sparse = true
	o.Streams = 4
	for _, r := range rates {
		base := &runscflags.Config{QDisc: "tbf", TBFRate: r, TBFBurst: AccuracyBurst(r)}
		fifo, lat, fqc := *base, *base, *base
		fifo.TBFChild, lat.TBFChild = runscflags.ChildFIFO, runscflags.ChildFIFO
		lat.TBFLatency = 20 * time.Millisecond
		fqc.TBFChild = runscflags.ChildFQCoDel
		cands := []Candidate{
			FromConfig(base),
			withVariant(FromConfig(&fifo), "fifo"),
			withVariant(FromConfig(&lat), "fifo, latency 20ms"),
			withVariant(FromConfig(&fqc), "fq_codel"),
			FromConfig(&runscflags.Config{QDisc: "fq_codel"}),
			Upstream(base),
		}
		s.Settings = append(s.Settings, Setting{Label: rate.FormatRate(r), Candidates: cands, Options: o})
	}
	return s
}

// withVariant names a candidate's variant ("netqdisc tbf (fq_codel)").
func withVariant(c Candidate, v string) Candidate {
	c.Variant = v
	return c
}

// BufferbloatNames are the bufferbloat suite's candidates, in table order.
var BufferbloatNames = []string{"netqdisc tbf", "netqdisc tbf (fifo)", "netqdisc tbf (fifo, latency 20ms)", "netqdisc tbf (fq_codel)", "netqdisc fq_codel", "upstream tbf"}

// Suites returns the named suites with their default settings for
// qdiscbench --compare: throughput, accuracy, paced, smallburst,
// shapedcpu. d is how long each run measures.
func Suites(names []string, d time.Duration) ([]Suite, error) {
	o := measure.Options{Warmup: 500 * time.Millisecond, Window: d}
	four := o
	four.Streams = 4
	var out []Suite
	for _, n := range names {
		switch n {
		case "throughput":
			out = append(out, ThroughputSuite([]int{1, 2, 4, 8, 16, 32}, o))
		case "accuracy":
			oa := four
			oa.Window = 2 * d
			out = append(out, AccuracySuite([]uint64{1 * Mbit, 10 * Mbit, 100 * Mbit, 1000 * Mbit}, oa))
		case "paced":
			out = append(out, PacedSuite([]uint64{10 * Mbit, 100 * Mbit, 250 * Mbit, 500 * Mbit}, four))
		case "smallburst":
			oa := four
			oa.Window = 2 * d
			out = append(out, SmallBurstSuite([]uint64{10 * Mbit, 100 * Mbit}, []uint64{1514, 3028}, oa))
		case "shapedcpu":
			oa := four
			oa.Window = 2 * d
			out = append(out, ShapedCPUSuite([]uint64{10 * Mbit, 100 * Mbit}, 1514, oa))
		case "bufferbloat":
			oa := four
			oa.Warmup, oa.Window = 2*time.Second, 4*d // past TCP's start and CoDel's first interval
			out = append(out, BufferbloatSuite([]uint64{10 * Mbit, 100 * Mbit}, oa))
		default:
			return nil, fmt.Errorf("unknown suite %q: choose throughput, accuracy, paced, smallburst, shapedcpu or bufferbloat", n)
		}
	}
	return out, nil
}

// RunSuites runs the suites' settings with every candidate, interleaved in
// rounds (round 1 of everything, then round 2, ...), so that drift in the
// machine's speed touches every candidate alike. status, if set, is told
// each run as it starts.
func RunSuites(suites []Suite, rounds int, status func(string)) ([]Summary, error) {
	var out []Summary
	index := map[string]int{}
	for round := 0; round < max(rounds, 1); round++ {
		for _, s := range suites {
			for _, set := range s.Settings {
				for _, c := range set.Candidates {
					key := s.Name + "/" + set.Label + "/" + c.Name()
					if status != nil {
						status(fmt.Sprintf("round %d/%d  %-10s %-8s %s", round+1, rounds, s.Name, set.Label, c.Name()))
					}
					r, err := Run(c, set.Options)
					if err != nil {
						return out, fmt.Errorf("%s: %w", key, err)
					}
					i, ok := index[key]
					if !ok {
						i = len(out)
						index[key] = i
						out = append(out, Summary{Suite: s.Name, Setting: set.Label, Candidate: c})
					}
					out[i].Rounds = append(out[i].Rounds, r)
				}
			}
		}
	}
	return out, nil
}
