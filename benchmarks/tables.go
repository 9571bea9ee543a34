package benchmarks

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
)

// The --compare tables: a median [min–max] cell per candidate, ratios
// between candidates, and a table per suite.

// cell prints a median with its spread when rounds differ.
func cell(s Summary, f func(measure.Result) float64, format string) string {
	med, lo, hi := s.Median(f)
	if len(s.Rounds) < 2 {
		return fmt.Sprintf(format, med)
	}
	return fmt.Sprintf(format+" ["+format+"–"+format+"]", med, lo, hi)
}

// cells formats f for each named candidate at a setting ("–" where the
// candidate did not run).
func cells(sums []Summary, suite, setting string, names []string, f func(measure.Result) float64, format string) []string {
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
func ratios(sums []Summary, suite, setting string, pairs [][2]string, f func(measure.Result) float64) []string {
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
func ratioCell(a, b Summary, f func(measure.Result) float64) string {
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
		r.Rounds = append(r.Rounds, measure.Result{WireBps: x / y})
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
			fmt.Fprintf(w, "\nAccuracy: on-wire bytes / configured rate (tbf: burst 10 ms of rate, at least 3028 B; cake: bandwidth, and with COBALT dormant), and loaded RTT p50 in ms\n")
			fmt.Fprintln(tw, "rate\tnetqdisc tbf\tupstream tbf\tnetqdisc cake\tcake "+CakeDormantAQM+"\tRTT netqdisc tbf\tRTT upstream tbf\tRTT cake\t")
			for _, set := range suites[suite] {
				row := []string{set}
				row = append(row, cells(sums, suite, set, AccuracyNames, Ratio, "%.4f")...)
				row = append(row, cells(sums, suite, set, AccuracyNames[:3], RTT50, "%.1f")...)
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
						f      func(measure.Result) float64
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
