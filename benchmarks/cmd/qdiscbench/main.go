// Command qdiscbench shapes real TCP through a netqdisc qdisc and shows how
// it compares. It runs two gVisor netstacks in this process, joined by an
// in-memory link, with the qdisc on the sender's NIC; it needs no root and
// no set-up.
//
// With no flags it shapes 4 TCP streams through tbf at 100 Mbit/s (burst
// 10 ms of rate) for 10 s, printing a line each second and then a table.
// It takes runsc's qdisc flags (--qdisc, --qdisc-tbf-rate, ...) and OCI
// annotations (--annotation dev.gvisor.flag.qdisc-tbf-rate=5mbit), applied
// under the same policy a runtime applies. --compare runs the side-by-side
// tables against gVisor's upstream qdiscs instead; --netns, --runsc,
// --ingress, --htb, --cake and --cri measure on real namespaces, sandboxes and pods
// (root).
//
// Exit status: 0 on success, 1 if a run failed, 2 for a bad flag or
// annotation (before any traffic).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/netqdisc/netqdisc/benchmarks"
	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/runsc-flags"
)

// annotations is a repeatable --annotation key=value flag.
type annotations map[string]string

func (a annotations) String() string { return fmt.Sprint(map[string]string(a)) }
func (a annotations) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, such as %squdisc-tbf-rate=5mbit", runscflags.AnnotationPrefix)
	}
	if !strings.HasPrefix(k, runscflags.AnnotationPrefix) && !strings.Contains(k, "/") { // kubernetes.io/... stays
		k = runscflags.AnnotationPrefix + k
	}
	a[k] = v
	return nil
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("qdiscbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runscflags.RegisterFlags(fs)
	// qdiscbench's defaults: tbf at 100 Mbit/s with 10 ms of burst.
	for k, v := range map[string]string{runscflags.FlagQDisc: "tbf", runscflags.FlagTBFRate: "100mbit", runscflags.FlagTBFBurst: "125000"} {
		fs.Lookup(k).DefValue = v
		if err := fs.Set(k, v); err != nil {
			panic(err)
		}
	}
	ann := annotations{}
	fs.Var(ann, "annotation", "an OCI annotation key=value, applied as a runtime would (repeatable); the dev.gvisor.flag. prefix may be left out; kubernetes.io/ingress-bandwidth and kubernetes.io/egress-bandwidth too")
	streams := fs.Int("streams", 4, "bulk TCP streams")
	duration := fs.Duration("duration", 10*time.Second, "how long to measure")
	warmup := fs.Duration("warmup", time.Second, "how long to run before measuring")
	pace := fs.String("pace", "", "pace the streams to this total rate (tc units, e.g. 50mbit); default: as fast as TCP goes")
	upstream := fs.Bool("upstream", false, "run gVisor's upstream qdisc with the same settings instead of netqdisc's")
	compare := fs.Bool("compare", false, "run the side-by-side tables (--suites) against gVisor's upstream qdiscs")
	suiteNames := fs.String("suites", "throughput,accuracy,paced", "with --compare: the suites to run, of throughput, accuracy, paced, smallburst (1-2 packet bursts at 10 and 100 Mbit/s), shapedcpu (CPU per packet when shaping, against fifo), bufferbloat (latency under load: tbf with fq (its default child), with its FIFO, with the FIFO at latency 20ms, with fq_codel, fq_codel alone, upstream tbf; sparse TCP and UDP probes, goodput, fairness)")
	rounds := fs.Int("rounds", 0, "rounds, interleaved (default 1; with --compare 2)")
	cmpDuration := fs.Duration("compare-duration", time.Second, "with --compare: how long to measure each run")
	jsonPath := fs.String("json", "", "write machine-readable results to this file")
	chartPath := fs.String("chart", "", "draw throughput against streams and rate over time to this .svg file")
	quiet := fs.Bool("quiet", false, "no live lines")
	netns := fs.Bool("netns", false, "measure on a real veth against the Linux kernel in network namespaces the run makes and removes (root; needs ip, tc, iperf, ping, ethtool, socat); with --compare, beside the kernel's tbf and upstream's")
	runscCmp := fs.Bool("runsc", false, "real runsc sandboxes side by side: upstream runsc and netqdisc's (runsc/build.sh and runsc/build.sh --upstream build them) with the same flags at 10 and 100 Mbit/s, bursts of 2 packets and 10 ms, and fifo; iperf from the sandbox to the kernel on a veth (root); about 2 minutes a round")
	ingressRun := fs.Bool("ingress", false, "measure the receive direction on a real veth: the kernel peer sends to the netstack through netqdisc's ingress shaper (the --qdisc-ingress-* flags; default: 10 and 100 Mbit/s, burst 10 ms, latency 25 ms), beside Linux's ingress qdisc + ifb + tbf (root)")
	criRun := fs.Bool("cri", false, "Kubernetes' node path side by side: pods run through containerd's CRI with gVisor's shim and the CNI bridge (cri/build.sh builds them; runsc/build.sh and runsc/build.sh --upstream the runscs), one TCP stream each for --duration: netqdisc's runsc under an operator's ceiling of 100mbit and upstream runsc, each with kubernetes.io/egress-bandwidth: 10M and ingress-bandwidth: 20M, runc + the CNI bandwidth plugin with the same (on a containerd of its own), a bandwidth above the ceiling (200M) and a dev.gvisor.flag.qdisc-tbf-rate above it (refused); first second, average from the first byte, on the wire, steady, ping under load (root); about 90 s a round")
	htbRun := fs.Bool("htb", false, "htb classes by destination on a real veth, side by side with the kernel's sch_htb (u32 by destination): a 100 Mbit/s root with a cluster and an internet class at 90/10 and 20/20 (prio 0/1, ceil 100) and 90/10 (internet ceil 10), each class alone and both busy, ours in process and in a runsc sandbox (runsc/build.sh's, if built); a quota's cut-over; goodput and ping per class with fq_codel and pfifo leaves (root); about 5 minutes")
	cakeRun := fs.Bool("cake", false, "cake on a real veth, the netstack serving two clients (root): host fairness (1 stream to one client, 10 to another, 100 Mbit/s) with cake's dual-dsthost, triple-isolate and dsthost beside tbf + fq_codel and the kernel's sch_tbf and sch_htb; the shaper's accuracy and a ping's RTT under load at 1, 10, 100 Mbit/s and 1 Gbit/s; an EF-marked ping beside an unmarked one under bulk load, diffserv4 and besteffort; the ACK filter on 1:10 and 1:333 links; about 2.5 minutes")
	criSndbuf := fs.Int("cri-sndbuf", 16384, "with --cri: the senders' send buffer in bytes (SO_SNDBUF), as the CRI tests give them: in flight it fits the shapers' queues; 0: the stack's default")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: qdiscbench [flags]\n\nShapes real TCP through a qdisc between two in-process gVisor netstacks.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "qdiscbench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg, err := runscflags.NewFromFlags(fs)
	if err == nil {
		err = cfg.ApplyAnnotations(ann)
	}
	var paceBps uint64
	if err == nil && *pace != "" {
		if paceBps, err = rate.ParseRate(*pace); err != nil {
			err = fmt.Errorf("--pace: %w", err)
		}
	}
	if err == nil && (*streams < 1 || *duration <= 0 || *warmup < 0 || *rounds < 0) {
		err = fmt.Errorf("--streams must be at least 1, --duration positive, --warmup and --rounds not negative")
	}
	if err == nil && *criRun {
		// --cri measures its own pods: another mode's flags would not apply.
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "runsc", "ingress", "netns", "compare", "upstream", "annotation", "pace", "json", "chart":
				err = fmt.Errorf("--cri runs alone: --%s does not apply to it", f.Name)
			}
		})
	}
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench: %v\n", err)
		return 2
	}

	if *chartPath != "" && !strings.EqualFold(filepath.Ext(*chartPath), ".svg") {
		fmt.Fprintf(stderr, "qdiscbench: --chart %s: give a .svg file name\n", *chartPath)
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "qdiscbench: --cpuprofile: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(stderr, "qdiscbench: warning: %s\n", w)
	}
	if *criRun {
		return runCRI(stdout, stderr, max(*rounds, 1), *duration, *criSndbuf, *quiet)
	}
	if *cakeRun {
		return runCake(stdout, stderr, *streams, max(*warmup, 2*time.Second), min(*duration, 5*time.Second))
	}
	if *htbRun {
		return runHTB(stdout, stderr, *streams, max(*warmup, 2*time.Second), min(*duration, 5*time.Second))
	}
	if *runscCmp {
		n := *rounds
		if n == 0 {
			n = 2
		}
		return runRunsc(stdout, stderr, runscSettings(), n, *streams, max(*warmup, 2*time.Second), min(*duration, 5*time.Second))
	}
	if *ingressRun {
		return runIngress(stdout, stderr, ingressSettings(cfg), max(*rounds, 1), *streams, max(*warmup, 2*time.Second), min(*duration, 5*time.Second))
	}
	if *netns {
		// On a real veth: a warm-up of at least 2 s (TCP start and the first
		// burst), a window of at most 5 s.
		return runNetns(stdout, stderr, cfg, *upstream, *compare, *streams, max(*warmup, 2*time.Second), min(*duration, 5*time.Second))
	}
	status := func(s string) {}
	if !*quiet {
		status = func(s string) { fmt.Fprintln(stderr, s) }
	}
	var sums, timelines []benchmarks.Summary
	if *compare {
		n := *rounds
		if n == 0 {
			n = 2
		}
		suites, err := benchmarks.Suites(strings.Split(*suiteNames, ","), *cmpDuration)
		if err != nil {
			fmt.Fprintf(stderr, "qdiscbench: --suites: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "qdiscbench --compare: %d rounds, interleaved; every figure is from this run, on this machine\n", n)
		sums, err = benchmarks.RunSuites(suites, n, status)
		if err != nil {
			fmt.Fprintf(stderr, "qdiscbench: %v\n", err)
			return 1
		}
		benchmarks.WriteTables(stdout, sums)
		for _, s := range sums {
			if s.Suite == "accuracy" && s.Setting == rate.FormatRate(100*benchmarks.Mbit) {
				timelines = append(timelines, s)
			}
		}
	} else {
		c := benchmarks.FromConfig(cfg)
		if *upstream {
			c = benchmarks.Upstream(cfg)
		}
		o := measure.Options{Streams: *streams, Warmup: *warmup, Window: *duration, Pace: paceBps}
		if !*quiet {
			o.Progress = func(p measure.Progress) { fmt.Fprintln(stdout, progressLine(c, p)) }
		}
		fmt.Fprintf(stdout, "qdiscbench: %s, %d TCP streams, %v warm-up + %v measured\n", c.Name(), *streams, *warmup, *duration)
		n := max(*rounds, 1)
		s := benchmarks.Summary{Candidate: c}
		for i := 0; i < n; i++ {
			r, err := benchmarks.Run(c, o)
			if err != nil {
				fmt.Fprintf(stderr, "qdiscbench: %v\n", err)
				return 1
			}
			s.Rounds = append(s.Rounds, r)
		}
		sums = []benchmarks.Summary{s}
		timelines = sums
		writeRun(stdout, s)
	}
	if *jsonPath != "" {
		b, err := benchmarks.JSON(sums)
		if err == nil {
			err = os.WriteFile(*jsonPath, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "qdiscbench: --json: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s\n", *jsonPath)
	}
	if *chartPath != "" {
		if err := benchmarks.Chart(*chartPath, sums, timelines); err != nil {
			fmt.Fprintf(stderr, "qdiscbench: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s\n", *chartPath)
	}
	return 0
}

func mbps(bps float64) string { return fmt.Sprintf("%.2f Mbit/s", bps*8/1e6) }

func msec(d time.Duration) string {
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func progressLine(c benchmarks.Candidate, p measure.Progress) string {
	phase := ""
	if p.Warmup {
		phase = "  (warm-up)"
	}
	ratio := ""
	if c.Rate != 0 {
		ratio = fmt.Sprintf(" (%.4f of rate)", p.WireBps/float64(c.Rate))
	}
	rtt := "–"
	if p.RTT != 0 {
		rtt = msec(p.RTT)
	}
	return fmt.Sprintf("%6.1fs  on-wire %s%s  RTT %s  drops %d%s", p.Elapsed.Seconds(), mbps(p.WireBps), ratio, rtt, p.Drops, phase)
}

func writeRun(w io.Writer, s benchmarks.Summary) {
	med := func(f func(measure.Result) float64) float64 { m, _, _ := s.Median(f); return m }
	r := s.Rounds[len(s.Rounds)-1]
	c := s.Candidate
	fmt.Fprintln(w)
	row := func(k, v string) { fmt.Fprintf(w, "  %-20s %s\n", k, v) }
	desc := r.Describe
	if desc == "" {
		desc = c.QDisc
	}
	row("qdisc", desc+" ("+c.Impl+")")
	row("streams", fmt.Sprint(r.Streams))
	if c.Rate != 0 {
		row("configured rate", mbps(float64(c.Rate)))
		row("on-wire rate", fmt.Sprintf("%s  (%.4f of configured)", mbps(med(benchmarks.Wire)), med(benchmarks.Ratio)))
	} else {
		row("on-wire rate", mbps(med(benchmarks.Wire)))
	}
	row("goodput", mbps(med(benchmarks.Goodput)))
	row("RTT idle", msec(time.Duration(med(func(r measure.Result) float64 { return float64(r.IdleRTT) }))))
	row("RTT loaded", fmt.Sprintf("p50 %s  p99 %s  max %s  (%d probes)", msec(r.RTT(0.5)), msec(r.RTT(0.99)), msec(r.RTT(1)), len(r.RTTs)))
	row("drops", fmt.Sprint(r.Drops))
	row("CPU", fmt.Sprintf("%.1f s/GB, %.1f µs per 1514-byte packet  (%.0f%% of a core)", med(benchmarks.CPUPerGB), med(benchmarks.CPUPerPkt), med(benchmarks.CPUPct)))
	if r.HasLateness {
		row("timer wake-ups", fmt.Sprintf("%d (%.0f a second); waits ended late by p50 %v  p99 %v  max %v", r.Wakeups, float64(r.Wakeups)/r.Elapsed.Seconds(), r.Lateness.Quantile(0.5), r.Lateness.Quantile(0.99), r.Lateness.Quantile(1)))
	}
	row("stream content", fmt.Sprintf("%d bytes received, every byte checked", r.Received))
	if len(s.Rounds) > 1 {
		_, lo, hi := s.Median(benchmarks.Wire)
		row("rounds", fmt.Sprintf("%d: on-wire %s – %s", len(s.Rounds), mbps(lo), mbps(hi)))
	}
	if r.HasStats {
		fmt.Fprintf(w, "\n  tc -s qdisc:\n  %s\n", strings.ReplaceAll(r.TCStats, "\n", "\n  "))
	}
}
