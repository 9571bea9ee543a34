package benchmarks

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

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
	Options    Options
}

// Summary is one candidate at one setting, over rounds.
type Summary struct {
	Suite, Setting string
	Candidate      Candidate
	Rounds         []Result
}

// Median of f over the rounds, and its spread (min, max).
func (s Summary) Median(f func(Result) float64) (med, lo, hi float64) {
	v := make([]float64, len(s.Rounds))
	for i, r := range s.Rounds {
		v[i] = f(r)
	}
	if len(v) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(v)
	if n := len(v); n%2 == 1 {
		med = v[n/2]
	} else {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return med, v[0], v[len(v)-1]
}

// ThroughputSuite is the pull request's first table: every candidate at a
// far ceiling, at each stream count.
func ThroughputSuite(streams []int, o Options) Suite {
	s := Suite{Name: "throughput"}
	for _, n := range streams {
		oo := o
		oo.Streams = n
		cands := append(SideBySide(FarRate, FarBurst), SingleQueue(&runscflags.Config{QDisc: runscflags.QDiscTBF, TBFRate: FarRate, TBFBurst: FarBurst}))
		s.Settings = append(s.Settings, Setting{Label: fmt.Sprintf("%d", n), Candidates: cands, Options: oo})
	}
	return s
}

// AccuracyBurst is the burst the accuracy suite uses: 10 ms of the rate,
// and at least two full-size packets.
func AccuracyBurst(r uint64) uint64 { return max(r/100, 2*1514) }

// AccuracySuite runs netqdisc's and upstream's tbf at each rate.
func AccuracySuite(rates []uint64, o Options) Suite {
	s := Suite{Name: "accuracy"}
	for _, r := range rates {
		cfg := &runscflags.Config{QDisc: runscflags.QDiscTBF, TBFRate: r, TBFBurst: AccuracyBurst(r)}
		s.Settings = append(s.Settings, Setting{Label: rate.FormatRate(r), Candidates: []Candidate{FromConfig(cfg), Upstream(cfg)}, Options: o})
	}
	return s
}

// PacedSuite is the pull request's third table: streams paced to a target
// total rate, every candidate at a far ceiling; it measures CPU.
func PacedSuite(targets []uint64, o Options) Suite {
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
func SmallBurstSuite(rates, bursts []uint64, o Options) Suite {
	s := Suite{Name: "smallburst"}
	for _, r := range rates {
		for _, b := range bursts {
			cfg := &runscflags.Config{QDisc: runscflags.QDiscTBF, TBFRate: r, TBFBurst: b}
			s.Settings = append(s.Settings, Setting{Label: fmt.Sprintf("%s burst %d", rate.FormatRate(r), b), Candidates: []Candidate{FromConfig(cfg), Upstream(cfg)}, Options: o})
		}
	}
	return s
}

// ShapedCPUSuite paces the streams to each rate and runs fifo, and
// netqdisc's and upstream's tbf at that rate with burst bytes: the CPU a
// packet costs when the tbf shapes, against fifo carrying the same load.
func ShapedCPUSuite(rates []uint64, burst uint64, o Options) Suite {
	s := Suite{Name: "shapedcpu"}
	fifoCfg := &runscflags.Config{QDisc: runscflags.QDiscFIFO}
	for _, r := range rates {
		cfg := &runscflags.Config{QDisc: runscflags.QDiscTBF, TBFRate: r, TBFBurst: burst}
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
// (Options.Sparse) through each candidate at each rate, burst 10 ms of
// it: tbf with its default FIFO queue, tbf with latency 20 ms, tbf with
// fq_codel as its child, fq_codel alone at line rate, and upstream's tbf.
func BufferbloatSuite(rates []uint64, o Options) Suite {
	s := Suite{Name: "bufferbloat"}
	o.Sparse = true
	o.Streams = 4
	for _, r := range rates {
		base := &runscflags.Config{QDisc: runscflags.QDiscTBF, TBFRate: r, TBFBurst: AccuracyBurst(r)}
		lat, fq := *base, *base
		lat.TBFLatency = 20 * time.Millisecond
		fq.TBFChild = runscflags.ChildFQCoDel
		cands := []Candidate{
			FromConfig(base),
			withVariant(FromConfig(&lat), "latency 20ms"),
			withVariant(FromConfig(&fq), "fq_codel"),
			FromConfig(&runscflags.Config{QDisc: runscflags.QDiscFQCoDel}),
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

// Bufferbloat figures: the probes' RTT above the idle RTT in ms, Jain's
// index over the bulk streams, and the UDP echoes lost.
var (
	ProbeP50Above = func(r Result) float64 { return msAbove(r.RTTP50, r.RTTIdle) }
	ProbeP99Above = func(r Result) float64 { return msAbove(r.RTTP99, r.RTTIdle) }
	UDPP50Above   = func(r Result) float64 { return msAbove(r.UDPRTTP50, r.RTTIdle) }
	UDPP99Above   = func(r Result) float64 { return msAbove(r.UDPRTTP99, r.RTTIdle) }
	Fairness      = func(r Result) float64 { return Jain(r.StreamBps) }
	UDPLost       = func(r Result) float64 { return float64(r.UDPLost) }
	Drops         = func(r Result) float64 { return float64(r.Drops) }
	Marks         = func(r Result) float64 { return float64(r.ECNMarks) }
)

func msAbove(d, idle time.Duration) float64 {
	return float64(max(d-idle, 0)) / float64(time.Millisecond)
}

// BufferbloatNames are the bufferbloat suite's candidates, in table order.
var BufferbloatNames = []string{"netqdisc tbf", "netqdisc tbf (latency 20ms)", "netqdisc tbf (fq_codel)", "netqdisc fq_codel", "upstream tbf"}

// Suites returns the named suites with their default settings for
// qdiscbench --compare: throughput, accuracy, paced, smallburst,
// shapedcpu. d is how long each run measures.
func Suites(names []string, d time.Duration) ([]Suite, error) {
	o := Options{Warmup: 500 * time.Millisecond, Duration: d}
	four := o
	four.Streams = 4
	var out []Suite
	for _, n := range names {
		switch n {
		case "throughput":
			out = append(out, ThroughputSuite([]int{1, 2, 4, 8, 16, 32}, o))
		case "accuracy":
			oa := four
			oa.Duration = 2 * d
			out = append(out, AccuracySuite([]uint64{1 * Mbit, 10 * Mbit, 100 * Mbit, 1000 * Mbit}, oa))
		case "paced":
			out = append(out, PacedSuite([]uint64{10 * Mbit, 100 * Mbit, 250 * Mbit, 500 * Mbit}, four))
		case "smallburst":
			oa := four
			oa.Duration = 2 * d
			out = append(out, SmallBurstSuite([]uint64{10 * Mbit, 100 * Mbit}, []uint64{1514, 3028}, oa))
		case "shapedcpu":
			oa := four
			oa.Duration = 2 * d
			out = append(out, ShapedCPUSuite([]uint64{10 * Mbit, 100 * Mbit}, 1514, oa))
		case "bufferbloat":
			oa := four
			oa.Warmup, oa.Duration = 2*time.Second, 4*d // past TCP's start and CoDel's first interval
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

// Mbps is a Result's field in Mbit/s.
func Mbps(f func(Result) float64) func(Result) float64 {
	return func(r Result) float64 { return f(r) * 8 / 1e6 }
}

// Goodput, Wire, Ratio, CPUPct, CPUPerGB and RTT50 pick a Result's figures.
var (
	Goodput  = func(r Result) float64 { return r.GoodputBps }
	Wire     = func(r Result) float64 { return r.WireBps }
	Ratio    = func(r Result) float64 { return r.Ratio() }
	CPUPct   = func(r Result) float64 { return r.CPUPercent() }
	CPUPerGB = func(r Result) float64 { return r.CPUSecPerGB() }
	RTT50    = func(r Result) float64 { return float64(r.RTTP50) / float64(time.Millisecond) }
	RTT99    = func(r Result) float64 { return float64(r.RTTP99) / float64(time.Millisecond) }
	// CPUPerPkt is µs of CPU per 1514-byte packet; WakeupsPerSec the
	// qdisc's timer wake-ups a second; LateP50 and LateP99 are timer
	// wake-up lateness in µs.
	CPUPerPkt     = func(r Result) float64 { return float64(r.CPUPerPacket()) / float64(time.Microsecond) }
	WakeupsPerSec = func(r Result) float64 { return float64(r.Wakeups) / r.Elapsed.Seconds() }
	LateP50       = func(r Result) float64 { return float64(r.Lateness.Quantile(0.5)) / float64(time.Microsecond) }
	LateP99       = func(r Result) float64 { return float64(r.Lateness.Quantile(0.99)) / float64(time.Microsecond) }
)

// cell prints a median with its spread when rounds differ.
func cell(s Summary, f func(Result) float64, format string) string {
	med, lo, hi := s.Median(f)
	if len(s.Rounds) < 2 {
		return fmt.Sprintf(format, med)
	}
	return fmt.Sprintf(format+" ["+format+"–"+format+"]", med, lo, hi)
}

// cells formats f for each named candidate at a setting ("–" where the
// candidate did not run).
func cells(sums []Summary, suite, setting string, names []string, f func(Result) float64, format string) []string {
	var out []string
	for _, name := range names {
		if s, ok := find(sums, suite, setting, name); ok {
			out = append(out, cell(s, f, format))
		} else {
			out = append(out, "–")
		}
	}
	return out
}

// ratios formats, for each pair of candidates at a setting, the median
// over rounds of f's ratio of the first to the second ("–" where either
// did not run).
func ratios(sums []Summary, suite, setting string, pairs [][2]string, f func(Result) float64) []string {
	var out []string
	for _, p := range pairs {
		a, ok1 := find(sums, suite, setting, p[0])
		b, ok2 := find(sums, suite, setting, p[1])
		if ok1 && ok2 {
			out = append(out, ratioCell(a, b, f))
		} else {
			out = append(out, "–")
		}
	}
	return out
}

// find returns the summary for suite, setting and candidate name.
func find(sums []Summary, suite, setting, name string) (Summary, bool) {
	for _, s := range sums {
		if s.Suite == suite && s.Setting == setting && s.Candidate.Name() == name {
			return s, true
		}
	}
	return Summary{}, false
}

// ratioCell prints the median of a/b over rounds, pairing round i of each.
func ratioCell(a, b Summary, f func(Result) float64) string {
	n := min(len(a.Rounds), len(b.Rounds))
	if n == 0 {
		return "–"
	}
	r := Summary{}
	for i := 0; i < n; i++ {
		x, y := f(a.Rounds[i]), f(b.Rounds[i])
		if y == 0 {
			return "–"
		}
		r.Rounds = append(r.Rounds, Result{WireBps: x / y})
	}
	return cell(r, Wire, "%.2f")
}

// WriteTables prints a table per suite present in sums.
func WriteTables(w io.Writer, sums []Summary) {
	suites := map[string][]string{} // suite -> settings in order
	var order []string
	for _, s := range sums {
		if _, ok := suites[s.Suite]; !ok {
			order = append(order, s.Suite)
		}
		if l := suites[s.Suite]; len(l) == 0 || l[len(l)-1] != s.Setting && !contains(l, s.Setting) {
			suites[s.Suite] = append(l, s.Setting)
		}
	}
	for _, suite := range order {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		switch suite {
		case "throughput":
			fmt.Fprintf(w, "\nThroughput, goodput in Mbit/s (ceiling %s, burst %s); median [min–max] over rounds\n", rate.FormatRate(FarRate), rate.FormatSize(FarBurst))
			fmt.Fprintln(tw, "streams\tnone\tnetqdisc fifo\tupstream fifo\tnetqdisc tbf\tnetqdisc tbf (1 queue)\tupstream tbf\ttbf/fifo netqdisc\ttbf/fifo upstream\ttbf/upstream tbf\t")
			for _, set := range suites[suite] {
				row := []string{set}
				row = append(row, cells(sums, suite, set, []string{"none", "netqdisc fifo", "upstream fifo", "netqdisc tbf", "netqdisc tbf (1 queue)", "upstream tbf"}, Mbps(Goodput), "%.0f")...)
				row = append(row, ratios(sums, suite, set, [][2]string{{"netqdisc tbf", "netqdisc fifo"}, {"upstream tbf", "upstream fifo"}, {"netqdisc tbf", "upstream tbf"}}, Goodput)...)
				fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
			}
		case "accuracy":
			fmt.Fprintf(w, "\nAccuracy: on-wire bytes / configured rate (burst 10 ms of rate, at least 3028 B), and loaded RTT p50 in ms\n")
			fmt.Fprintln(tw, "rate\tnetqdisc tbf\tupstream tbf\tRTT netqdisc\tRTT upstream\t")
			for _, set := range suites[suite] {
				row := []string{set}
				both := []string{"netqdisc tbf", "upstream tbf"}
				row = append(row, cells(sums, suite, set, both, Ratio, "%.4f")...)
				row = append(row, cells(sums, suite, set, both, RTT50, "%.1f")...)
				fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
			}
		case "smallburst":
			fmt.Fprintf(w, "\nSmall bursts: on-wire bytes / configured rate (4 bulk streams), and netqdisc's timer wake-up lateness\n")
			fmt.Fprintln(tw, "setting\tnetqdisc tbf\tupstream tbf\tlateness p50\tlateness p99\t")
			for _, set := range suites[suite] {
				row := []string{set}
				row = append(row, cells(sums, suite, set, []string{"netqdisc tbf", "upstream tbf"}, Ratio, "%.4f")...)
				if s, ok := find(sums, suite, set, "netqdisc tbf"); ok {
					row = append(row, cell(s, LateP50, "%.0fµs"), cell(s, LateP99, "%.0fµs"))
				}
				fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
			}
		case "shapedcpu":
			fmt.Fprintf(w, "\nCPU per packet with the streams paced to the tbf's rate, or to 90%% of it (burst 1514 B), against fifo carrying the same load, in µs of process CPU per 1514-byte packet; netqdisc tbf's timer wake-ups a second\n")
			fmt.Fprintln(tw, "rate (pace)\tnetqdisc fifo\tnetqdisc tbf\tupstream tbf\ttbf/fifo netqdisc\ttbf/fifo upstream\ton-wire netqdisc tbf\twake-ups/s\t")
			for _, set := range suites[suite] {
				row := []string{set}
				row = append(row, cells(sums, suite, set, []string{"netqdisc fifo", "netqdisc tbf", "upstream tbf"}, CPUPerPkt, "%.1f")...)
				row = append(row, ratios(sums, suite, set, [][2]string{{"netqdisc tbf", "netqdisc fifo"}, {"upstream tbf", "netqdisc fifo"}}, CPUPerPkt)...)
				if s, ok := find(sums, suite, set, "netqdisc tbf"); ok {
					row = append(row, cell(s, Ratio, "%.4f"), cell(s, WakeupsPerSec, "%.0f"))
				}
				fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
			}
		case "bufferbloat":
			fmt.Fprintf(w, "\nLatency under load (RRUL-like): 4 bulk streams, a TCP request/response probe and a UDP echo every 10 ms; probe RTTs in ms above the idle RTT; bulk goodput over tbf's with its default queue; Jain's fairness index over the bulk streams\n")
			fmt.Fprintln(tw, "rate\tqdisc\tgoodput Mbit/s\tgoodput/tbf\tJain\tTCP probe p50\tp99\tUDP echo p50\tp99\techoes lost\tdrops\tECN marks\t")
			for _, set := range suites[suite] {
				for _, name := range BufferbloatNames {
					st, ok := find(sums, suite, set, name)
					if !ok {
						continue
					}
					row := []string{set, name, cell(st, Mbps(Goodput), "%.2f")}
					row = append(row, ratios(sums, suite, set, [][2]string{{name, "netqdisc tbf"}}, Goodput)...)
					for _, f := range []struct {
						f      func(Result) float64
						format string
					}{{Fairness, "%.3f"}, {ProbeP50Above, "%.1f"}, {ProbeP99Above, "%.1f"}, {UDPP50Above, "%.1f"}, {UDPP99Above, "%.1f"}, {UDPLost, "%.0f"}, {Drops, "%.0f"}, {Marks, "%.0f"}} {
						row = append(row, cell(st, f.f, f.format))
					}
					fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
				}
			}
		case "paced":
			fmt.Fprintf(w, "\nCPU at paced targets (ceiling %s): process CPU in %% of one core, and CPU seconds per GB on the wire\n", rate.FormatRate(FarRate))
			fmt.Fprintln(tw, "target\tnone\tnetqdisc fifo\tupstream fifo\tnetqdisc tbf\tupstream tbf\ts/GB netqdisc tbf\ts/GB netqdisc fifo\ts/GB upstream tbf\ttbf/fifo s/GB netqdisc\t")
			for _, set := range suites[suite] {
				row := []string{set}
				row = append(row, cells(sums, suite, set, []string{"none", "netqdisc fifo", "upstream fifo", "netqdisc tbf", "upstream tbf"}, CPUPct, "%.1f")...)
				row = append(row, cells(sums, suite, set, []string{"netqdisc tbf", "netqdisc fifo", "upstream tbf"}, CPUPerGB, "%.1f")...)
				row = append(row, ratios(sums, suite, set, [][2]string{{"netqdisc tbf", "netqdisc fifo"}}, CPUPerGB)...)
				fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
			}
		}
		tw.Flush()
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
