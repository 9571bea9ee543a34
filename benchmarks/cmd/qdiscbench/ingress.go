package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/netqdisc/netqdisc/benchmarks"
	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/rate"
	"github.com/netqdisc/netqdisc/runsc-flags"
)

// ingressSetting is one row group of the --ingress table.
type ingressSetting struct {
	label   string
	cfg     *runscflags.Config
	latency time.Duration // the kernel control's (the 1000-packet default when cfg has none)
}

// ingressSettings are the receive-direction settings: cfg's, when it shapes
// that direction, else the CNI bandwidth plugin's shape at 10 and 100
// Mbit/s: burst 10 ms of rate, latency 25 ms.
func ingressSettings(cfg *runscflags.Config) []ingressSetting {
	if cfg.IngressRate != 0 {
		c := *cfg
		latency := c.IngressLatency
		if latency == 0 {
			limit := c.IngressLimit
			if limit == 0 {
				limit = 1000 * 1514
			}
			latency = time.Duration(float64(limit-min(limit, c.IngressBurst)) / float64(c.IngressRate) * 1e9)
		}
		return []ingressSetting{{fmt.Sprintf("%s burst %d", rate.FormatRate(c.IngressRate), c.IngressBurst), &c, latency}}
	}
	var s []ingressSetting
	for _, r := range []uint64{10 * benchmarks.Mbit, 100 * benchmarks.Mbit} {
		c := &runscflags.Config{QDisc: "fifo", IngressRate: r, IngressBurst: r / 100, IngressLatency: runscflags.KubeLatency}
		s = append(s, ingressSetting{fmt.Sprintf("%s burst %d lat 25ms", rate.FormatRate(r), r/100), c, runscflags.KubeLatency})
	}
	return s
}

// ingressRow is one shaper's rounds at one setting.
type ingressRow struct {
	setting ingressSetting
	name    string
	rounds  []measure.Result
	err     error
}

// The --ingress table's shapers.
const (
	shaperNetqdisc = "netqdisc ingress"
	shaperKernel   = "kernel ingress+ifb+tbf"
	// The netstack unshaped, the peer's kernel tbf shaping what it sends:
	// the same traffic reaches the netstack, so its CPU is the baseline
	// that netqdisc's shaper adds to.
	shaperPeer = "netstack, peer's tbf"
)

// measureIngress measures one shaper at its setting.
func measureIngress(l *lab.Lab, row *ingressRow, o measure.Options) (measure.Result, error) {
	c := row.setting.cfg
	switch row.name {
	case shaperNetqdisc:
		return l.MeasureNetstackIngress(c.NewQueueingDiscipline, lab.IngressFrom(c), o)
	case shaperKernel:
		return l.MeasureKernelIngress(c.IngressRate, c.IngressBurst, row.setting.latency, o)
	}
	if err := lab.Tbf(l.NSP, l.VethP1, c.IngressRate, c.IngressBurst, row.setting.latency); err != nil {
		return measure.Result{}, err
	}
	defer lab.Run(l.NSP, "tc", "qdisc", "del", "dev", l.VethP1, "root")
	return l.MeasureNetstackIngress(c.NewQueueingDiscipline, nil, o)
}

// runIngress measures the download direction on a real veth (lab.Lab): the
// peer's kernel sends streams TCP streams to the netstack through
// netqdisc's ingress shaper, and to a kernel namespace through Linux's
// ingress qdisc + ifb + tbf, and to the netstack unshaped through the
// peer's own tbf (the CPU baseline), interleaved over rounds; it prints
// what the shapers let through over the rate, RTT under load and the
// machine's CPU per GB.
func runIngress(stdout, stderr io.Writer, settings []ingressSetting, rounds, streams int, warmup, window time.Duration) int {
	l, err := lab.New()
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --ingress: %v\n", err)
		return 2
	}
	defer l.Close()
	o := measure.Options{Streams: streams, Warmup: warmup, Window: window, PingInterval: 100 * time.Millisecond}
	var rows []*ingressRow
	for _, s := range settings {
		for _, name := range []string{shaperNetqdisc, shaperKernel, shaperPeer} {
			rows = append(rows, &ingressRow{setting: s, name: name})
		}
	}
	start := time.Now()
	for round := 1; round <= rounds; round++ {
		for i, row := range rows {
			if row.err != nil {
				continue
			}
			fmt.Fprintf(stderr, "[%v] round %d/%d, %d/%d: %s, %s\n", time.Since(start).Round(time.Second), round, rounds, i+1, len(rows), row.setting.label, row.name)
			r, err := measureIngress(l, row, o)
			if err != nil {
				row.err = err
				continue
			}
			row.rounds = append(row.rounds, r)
		}
	}
	fmt.Fprintf(stdout, "\nThe receive direction on a real veth: %d TCP streams from the kernel peer; L2 bytes the shaper let through over %v after %v (the netstack's NIC counters; the ifb's tx_bytes); ping every 100 ms from the peer; the machine's CPU (/proc/stat, the sender included); median [min–max] of %d interleaved rounds\n", streams, window, warmup, rounds)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "setting\tshaper\tshaped Mbit/s\tshaped/rate\tRTT idle\tloaded p50\tloaded p99\tpings lost\tCPU s/GB\t")
	failed := false
	for _, row := range rows {
		if len(row.rounds) == 0 {
			failed = true
			fmt.Fprintf(tw, "%s\t%s\terror: %v\t\t\t\t\t\t\t\n", row.setting.label, row.name, row.err)
			continue
		}
		failed = failed || row.err != nil
		wire, _, _ := measure.MedianOf(row.rounds, func(r measure.Result) float64 { return r.WireBps * 8 / 1e6 })
		m, lo, hi := measure.MedianOf(row.rounds, func(r measure.Result) float64 { return r.WireBps / float64(row.setting.cfg.IngressRate) })
		idle, _, _ := measure.MedianOf(row.rounds, func(r measure.Result) float64 { return float64(r.IdleRTT) })
		p50, _, _ := measure.MedianOf(row.rounds, func(r measure.Result) float64 { return float64(r.RTT(0.5)) })
		p99, _, _ := measure.MedianOf(row.rounds, func(r measure.Result) float64 { return float64(r.RTT(0.99)) })
		cpu, clo, chi := measure.MedianOf(row.rounds, measure.Result.CPUPerGB)
		lost, sent := 0, 0
		for _, r := range row.rounds {
			lost, sent = lost+r.PingsLost(), sent+r.PingsSent
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.4f [%.4f–%.4f]\t%v\t%v\t%v\t%d/%d\t%.1f [%.1f–%.1f]\t\n", row.setting.label, row.name, wire, m, lo, hi,
			time.Duration(idle).Round(time.Microsecond), time.Duration(p50).Round(10*time.Microsecond), time.Duration(p99).Round(10*time.Microsecond), lost, sent, cpu, clo, chi)
	}
	tw.Flush()
	if failed {
		return 1
	}
	return 0
}
