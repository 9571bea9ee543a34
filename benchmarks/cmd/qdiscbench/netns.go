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

// netnsRow is one candidate measured on a real veth.
type netnsRow struct {
	setting, name string
	rate          uint64
	r             measure.Result
	err           error
}

// runNetns measures on a real veth against the Linux kernel (lab.Lab):
// netqdisc as cfg describes it (or upstream's qdisc), or with compare the
// side-by-side table: netqdisc, the kernel's tbf and upstream's tbf at 10
// and 100 Mbit/s, burst 2 packets and 10 ms of rate, latency 50 ms.
func runNetns(stdout, stderr io.Writer, cfg *runscflags.Config, upstream, compare bool, streams int, warmup, window time.Duration) int {
	l, err := lab.New()
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --netns: %v\n", err)
		return 2
	}
	defer l.Close()
	o := measure.Options{Streams: streams, Warmup: warmup, Window: window, PingInterval: 100 * time.Millisecond}
	var rows []netnsRow
	measure := func(setting string, c *runscflags.Config) {
		for _, cand := range []benchmarks.Candidate{benchmarks.FromConfig(c), benchmarks.Upstream(c)} {
			r, err := l.MeasureNetstack(lab.MakeQDisc(cand.Make), o)
			rows = append(rows, netnsRow{setting, cand.Name(), c.TBFRate, r, err})
		}
		if c.QDisc == "tbf" {
			tc := c.TBFConfig()
			latency := c.TBFLatency
			if latency == 0 {
				latency = time.Duration(float64(1000*1514) / float64(c.TBFRate) * 1e9) // the 1000-packet default, as a latency
			}
			r, err := l.MeasureKernel(c.TBFRate, uint64(tc.Burst), latency, o)
			rows = append(rows, netnsRow{setting, "kernel tbf", c.TBFRate, r, err})
		}
	}
	if compare {
		for _, r := range []uint64{10 * benchmarks.Mbit, 100 * benchmarks.Mbit} {
			for _, b := range []uint64{3028, r / 100} {
				c := &runscflags.Config{QDisc: "tbf", TBFRate: r, TBFBurst: b, TBFLatency: 50 * time.Millisecond}
				label := fmt.Sprintf("%s burst %d lat 50ms", rate.FormatRate(r), b)
				fmt.Fprintf(stderr, "measuring %s\n", label)
				measure(label, c)
			}
		}
	} else {
		c := *cfg
		label := c.QDisc.String()
		if c.QDisc == "tbf" {
			label = fmt.Sprintf("%s burst %d", rate.FormatRate(c.TBFRate), c.TBFBurst)
		}
		if upstream {
			cand := benchmarks.Upstream(&c)
			r, err := l.MeasureNetstack(lab.MakeQDisc(cand.Make), o)
			rows = append(rows, netnsRow{label, cand.Name(), c.TBFRate, r, err})
		} else {
			cand := benchmarks.FromConfig(&c)
			r, err := l.MeasureNetstack(lab.MakeQDisc(cand.Make), o)
			rows = append(rows, netnsRow{label, cand.Name(), c.TBFRate, r, err})
		}
	}
	fmt.Fprintf(stdout, "\nOn a real veth, read at the kernel peer (rx_bytes over %v after %v; ping every 100 ms from the peer), %d TCP streams\n", window, warmup, streams)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "setting\tqdisc\ton-wire Mbit/s\ton-wire/rate\tRTT idle\tloaded p50\tloaded p99\tpings lost\t")
	failed := false
	for _, row := range rows {
		if row.err != nil {
			failed = true
			fmt.Fprintf(tw, "%s\t%s\terror: %v\t\t\t\t\t\t\n", row.setting, row.name, row.err)
			continue
		}
		ratio := "–"
		if row.rate != 0 {
			ratio = fmt.Sprintf("%.4f", row.r.WireBps/float64(row.rate))
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%v\t%v\t%v\t%d/%d\t\n", row.setting, row.name, row.r.WireBps*8/1e6, ratio,
			row.r.IdleRTT.Round(time.Microsecond), row.r.RTT(0.5).Round(10*time.Microsecond), row.r.RTT(0.99).Round(10*time.Microsecond), row.r.PingsLost(), row.r.PingsSent)
	}
	tw.Flush()
	if failed {
		return 1
	}
	return 0
}
