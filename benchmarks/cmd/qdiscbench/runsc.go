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
)

// runscSetting is one row group of the --runsc table: runsc flags every
// candidate gets, and the rate they shape to (0: unshaped).
type runscSetting struct {
	label string
	flags []string
	rate  uint64
}

// runscSettings are the --runsc table's settings: tbf at 10 and 100 Mbit/s
// with a 2-packet and a 10 ms bucket (host GSO off, which upstream runsc
// needs for a bucket below 64 KiB), and fifo unshaped with runsc's defaults.
func runscSettings() []runscSetting {
	var s []runscSetting
	for _, r := range []uint64{10 * benchmarks.Mbit, 100 * benchmarks.Mbit} {
		for _, b := range []uint64{3028, r / 100} {
			s = append(s, runscSetting{
				label: fmt.Sprintf("tbf %s burst %d", rate.FormatRate(r), b),
				flags: []string{"--qdisc=tbf", fmt.Sprintf("--qdisc-tbf-rate=%d", r), fmt.Sprintf("--qdisc-tbf-burst=%d", b), "--gso=false"},
				rate:  r,
			})
		}
	}
	return append(s, runscSetting{label: "fifo", flags: []string{"--qdisc=fifo"}})
}

// runscCandidate is a runsc binary, with flags of its own on top of the
// setting's.
type runscCandidate struct {
	name, binary string
	extra        []string
	tbfOnly      bool
}

// runscRow is one candidate's rounds at one setting.
type runscRow struct {
	setting runscSetting
	cand    runscCandidate
	rounds  []measure.Result
	err     error
}

// runRunsc runs real runsc sandboxes side by side (see docs/results.md): upstream
// runsc and netqdisc's runsc with the same flags, and netqdisc's with a
// 50 ms latency bound too, 4 iperf streams from the sandbox to the kernel
// peer, interleaved over rounds; it prints on-wire/rate, loaded ping RTT and
// the sandbox's CPU per GB.
func runRunsc(stdout, stderr io.Writer, settings []runscSetting, rounds, streams int, warmup, window time.Duration) int {
	cands, err := runscCandidates()
	if err == nil {
		err = lab.Check()
	}
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --runsc: %v\n", err)
		return 2
	}
	return compareRunsc(stdout, stderr, cands, settings, rounds, streams, warmup, window)
}

// runscCandidates are upstream runsc, netqdisc's runsc, and netqdisc's with
// a 50 ms latency bound (a flag upstream lacks) on its tbf settings.
func runscCandidates() ([]runscCandidate, error) {
	up, err := lab.RunscBinary(true)
	if err != nil {
		return nil, err
	}
	ours, err := lab.RunscBinary(false)
	if err != nil {
		return nil, err
	}
	return []runscCandidate{
		{name: "upstream runsc", binary: up},
		{name: "netqdisc runsc", binary: ours},
		{name: "netqdisc runsc, latency 50ms", binary: ours, extra: []string{"--qdisc-tbf-latency=50ms"}, tbfOnly: true},
	}, nil
}

// compareRunsc measures every candidate at every setting, round after
// round, and prints the table.
func compareRunsc(stdout, stderr io.Writer, cands []runscCandidate, settings []runscSetting, rounds, streams int, warmup, window time.Duration) int {
	l, err := lab.New()
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --runsc: %v\n", err)
		return 2
	}
	defer l.Close()
	o := measure.Options{Streams: streams, Warmup: warmup, Window: window, PingInterval: 100 * time.Millisecond}
	var rows []*runscRow
	for _, s := range settings {
		for _, c := range cands {
			if !c.tbfOnly || s.rate != 0 {
				rows = append(rows, &runscRow{setting: s, cand: c})
			}
		}
	}
	start := time.Now()
	for round := 1; round <= rounds; round++ {
		for i, row := range rows {
			if row.err != nil {
				continue
			}
			fmt.Fprintf(stderr, "[%v] round %d/%d, %d/%d: %s, %s\n", time.Since(start).Round(time.Second), round, rounds, i+1, len(rows), row.setting.label, row.cand.name)
			r, err := measureRunsc(l, row.cand, row.setting, o)
			if err != nil {
				row.err = err
				continue
			}
			row.rounds = append(row.rounds, r)
		}
	}
	fmt.Fprintf(stdout, "\nReal runsc sandboxes: %d iperf streams from the sandbox to the kernel peer on a veth; rx_bytes at the peer over %v after %v; ping every 100 ms from the peer; CPU from the sandbox's cgroup; median [min–max] of %d interleaved rounds\n", streams, window, warmup, rounds)
	writeRunscTable(stdout, rows)
	for _, row := range rows {
		if row.err != nil {
			return 1
		}
	}
	return 0
}

// measureRunsc starts a sandbox of c with s's flags and measures it.
func measureRunsc(l *lab.Lab, c runscCandidate, s runscSetting, o measure.Options) (measure.Result, error) {
	flags := append(append([]string(nil), s.flags...), c.extra...)
	sb, err := l.StartSandbox(lab.SandboxOptions{Runsc: c.binary, Flags: flags})
	if err != nil {
		return measure.Result{}, err
	}
	defer sb.Close()
	return l.MeasureSandbox(sb, o)
}

func writeRunscTable(w io.Writer, rows []*runscRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "setting\trunsc\ton-wire Mbit/s\ton-wire/rate\tRTT idle\tloaded RTT p50\tpings lost\tCPU s/GB\t")
	for _, row := range rows {
		if len(row.rounds) == 0 {
			fmt.Fprintf(tw, "%s\t%s\terror: %v\t\t\t\t\t\t\n", row.setting.label, row.cand.name, row.err)
			continue
		}
		wire, _, _ := measure.MedianOf(row.rounds, func(r measure.Result) float64 { return r.WireBps * 8 / 1e6 })
		ratio := "–"
		if row.setting.rate != 0 {
			m, lo, hi := measure.MedianOf(row.rounds, func(r measure.Result) float64 { return r.WireBps / float64(row.setting.rate) })
			ratio = fmt.Sprintf("%.4f [%.4f–%.4f]", m, lo, hi)
		}
		idle, _, _ := measure.MedianOf(row.rounds, func(r measure.Result) float64 { return float64(r.IdleRTT) })
		p50, _, _ := measure.MedianOf(row.rounds, func(r measure.Result) float64 { return float64(r.RTT(0.5)) })
		lost, sent := 0, 0
		for _, r := range row.rounds {
			lost, sent = lost+r.PingsLost(), sent+r.PingsSent
		}
		cpu, _, _ := measure.MedianOf(row.rounds, measure.Result.CPUPerGB)
		errNote := ""
		if row.err != nil {
			errNote = fmt.Sprintf(" (a later round failed: %v)", row.err)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%v\t%v\t%d/%d\t%.1f%s\t\n", row.setting.label, row.cand.name, wire, ratio,
			time.Duration(idle).Round(time.Microsecond), time.Duration(p50).Round(10*time.Microsecond), lost, sent, cpu, errNote)
	}
	tw.Flush()
}
