package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
)

// htbRow is one load of one setting: each busy class's share, ours (in
// process and in runsc) and the kernel's, against the model's.
type htbRow struct {
	setting, load       string
	model               []uint64
	ours, runsc, kernel lab.HTBResult
	oursErr             error
	runscErr            error
	kernelErr           error
}

// htbQuota is the quota row's setting: the 90/10 tree's internet class
// with 20 MiB per hour, then 1 Mbit/s.
const htbQuota = "quota 20mb per 1h then 1mbit"

// runHTB measures htb classes by destination on a real veth (lab.Lab):
// ANCHORS' three settings under a 100 Mbit/s root, each class alone and
// both busy, ours (the netstack with the htb runsc's --qdisc-htb builds,
// in process, and in a runsc sandbox when runsc/build.sh's binary is
// there) beside the kernel's sch_htb with the same classes (u32 by
// destination);
// then a quota's cut-over (ours only: Linux's htb has none) and, with
// both classes busy, goodput and ping per class with fq_codel leaves
// (ours; the kernel here has no fq_codel) beside the pfifo leaves.
func runHTB(stdout, stderr io.Writer, streams int, warmup, window time.Duration) int {
	l, err := lab.New()
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --htb: %v\n", err)
		return 2
	}
	defer l.Close()
	o := measure.Options{Streams: streams, Warmup: warmup, Window: window}
	start := time.Now()
	progress := func(f string, a ...any) {
		fmt.Fprintf(stderr, "[%v] %s\n", time.Since(start).Round(time.Second), fmt.Sprintf(f, a...))
	}
	var rows []*htbRow
	var warnings []string
	failed := false
	runsc, runscErr := lab.RunscBinary(false)
	for _, s := range lab.HTBSettings {
		cfg, err := lab.FromFlags(s.Flags(""), nil)
		if err != nil {
			fmt.Fprintf(stderr, "qdiscbench --htb: %s: %v\n", s.Label, err)
			return 1
		}
		hc, err := cfg.HTBConfig()
		if err != nil {
			fmt.Fprintf(stderr, "qdiscbench --htb: %s: %v\n", s.Label, err)
			return 1
		}
		for _, ld := range []struct {
			name              string
			cluster, internet bool
			model             []uint64
		}{
			{"cluster alone", true, false, []uint64{s.ClusterAlone}},
			{"internet alone", false, true, []uint64{s.InternetAlone}},
			{"both busy", true, true, s.Both[:]},
		} {
			row := &htbRow{setting: s.Label, load: ld.name, model: ld.model}
			loads := lab.Loads(ld.cluster, ld.internet, streams)
			progress("%s, %s: ours", s.Label, ld.name)
			row.ours, row.oursErr = l.MeasureNetstackHTB(cfg.NewQueueingDiscipline, loads, o)
			progress("%s, %s: the kernel's", s.Label, ld.name)
			var w []string
			row.kernel, w, row.kernelErr = l.MeasureKernelHTB(hc, loads, o)
			if len(warnings) == 0 {
				warnings = w
			}
			failed = failed || row.oursErr != nil || row.kernelErr != nil
			rows = append(rows, row)
		}
		// The sandbox takes vethN: its runs come after the in-process ones.
		var sb *lab.Sandbox
		err = runscErr
		if err == nil {
			progress("%s: starting a runsc sandbox", s.Label)
			// Without host GSO: a class's counter moves by whole packets,
			// as in process (TestHTBInRunsc says what GSO adds).
			sb, err = l.StartHTBSandbox(lab.SandboxOptions{Runsc: runsc, Flags: append(s.Flags(""), "--gso=false")})
		}
		for _, row := range rows[len(rows)-3:] {
			if err != nil {
				row.runscErr = err
				continue
			}
			progress("%s, %s: in runsc", s.Label, row.load)
			loads := lab.Loads(row.load != "internet alone", row.load != "cluster alone", streams)
			row.runsc, row.runscErr = l.MeasureSandboxHTB(sb, loads, o)
			failed = failed || row.runscErr != nil
		}
		if sb != nil {
			sb.Close()
		}
	}
	fmt.Fprintf(stdout, "\nhtb classes by destination on a real veth: a 100 Mbit/s root 1:1; the cluster class 1:10 by destination (ours: filter dst 10.77.1.0/24; the kernel's: u32 match ip dst 10.78.1.0/24), the internet class 1:20 the default; %d TCP streams into each busy class; each class's rate from its tc -s counter (L2 bytes) over %v after %v; ours: the netstack in process with the htb of runsc's --qdisc-htb, and a runsc sandbox with those flags and --gso=false (iperf inside; its counters from runsc qdisc show); the kernel's: sch_htb on the kernel sender's veth (tc's defaults: burst and cburst 1600 b, r2q 10)\n", streams, window, warmup)
	writeHTBTable(stdout, rows)
	for _, w := range warnings {
		fmt.Fprintf(stdout, "tc said: %s\n", w)
	}

	progress("quota cut-over")
	cfg, err := lab.FromFlags(lab.HTBSettings[0].Flags(htbQuota), nil)
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --htb: quota: %v\n", err)
		return 1
	}
	qo := measure.Options{Warmup: time.Second, Window: window}
	q, err := l.MeasureQuotaCutover(cfg.NewQueueingDiscipline, lab.Loads(false, true, streams)[0], qo, time.Millisecond, 30*time.Second)
	fmt.Fprintf(stdout, "\nA quota's cut-over (ours; Linux's htb has none): %s, the internet class 1:20 (%s) %s, %d streams, alone; its QuotaUsed at the last 1 ms poll that saw the quota unspent and at the first that saw it spent (the cut-over is between), its rate over the second before and over %v from %v after\n", lab.HTBSettings[0].Label, lab.HTBSettings[0].Internet, htbQuota, streams, qo.Window, qo.Warmup)
	if err != nil {
		failed = true
		fmt.Fprintf(stdout, "  error: %v\n", err)
	} else {
		fmt.Fprintf(stdout, "  budget %d bytes; unspent at QuotaUsed %d (%d bytes to go), and %v later, spent after %v at QuotaUsed %d (+%d bytes), Sent %d; before %.2f Mbit/s, after %.3f Mbit/s = %.4f of 1 Mbit/s\n",
			q.Budget, q.Unspent, int64(q.Budget)-int64(q.Unspent), q.Gap.Round(10*time.Microsecond), q.After.Round(time.Millisecond), q.Used, int64(q.Used)-int64(q.Budget), q.Bytes, q.Before*8/1e6, q.Fallen*8/1e6, q.Fallen/125_000)
	}

	s := lab.HTBSettings[0]
	cfg, err = lab.FromFlags(s.Flags(""), nil)
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --htb: %v\n", err)
		return 1
	}
	hc, err := cfg.HTBConfig()
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --htb: %v\n", err)
		return 1
	}
	po := o
	po.PingInterval = 20 * time.Millisecond
	loads := lab.Loads(true, true, streams)
	fq := lab.WithLeaves(hc, func(mtu uint32) (qdisc.Queue, error) { return fqcodel.NewQueue(fqcodel.Config{}, mtu, nil) })
	fmt.Fprintf(stdout, "\nLeaves under load: %s, both busy, %d streams each; a ping every %v from each class's peer address (its replies go through the class); goodput is the payload the peer's TCP received (ss bytes_received); fq_codel with its defaults (ours: htb.ClassConfig.Leaf, which runsc's flags cannot set yet; the kernel here has no fq_codel)\n", s.Label, streams, po.PingInterval)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "leaves\tclass\trate Mbit/s\tof model\tgoodput Mbit/s\tping idle\tloaded p50\tloaded p99\tanswered\t")
	for _, c := range []struct {
		name string
		run  func() (lab.HTBResult, error)
	}{
		{"ours, fq_codel", func() (lab.HTBResult, error) { return l.MeasureNetstackHTB(fq, loads, po) }},
		{"ours, pfifo", func() (lab.HTBResult, error) { return l.MeasureNetstackHTB(cfg.NewQueueingDiscipline, loads, po) }},
		{"kernel, pfifo", func() (lab.HTBResult, error) { r, _, err := l.MeasureKernelHTB(hc, loads, po); return r, err }},
	} {
		progress("leaves: %s", c.name)
		r, err := c.run()
		if err != nil {
			failed = true
			fmt.Fprintf(tw, "%s\terror: %v\t\t\t\t\t\t\t\t\n", c.name, err)
			continue
		}
		for i, cr := range r.Classes {
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.4f\t%.2f\t%v\t%v\t%v\t%d/%d\t\n", c.name, classify.ClassID(cr.Class), cr.Bps*8/1e6, cr.Bps/float64(s.Both[i]), cr.Goodput*8/1e6,
				cr.IdleRTT.Round(time.Microsecond), cr.RTT(0.5).Round(10*time.Microsecond), cr.RTT(0.99).Round(10*time.Microsecond), len(cr.RTTs), cr.PingsSent)
		}
	}
	tw.Flush()
	if failed {
		return 1
	}
	return 0
}

// writeHTBTable prints the side-by-side rows: a line per busy class.
func writeHTBTable(w io.Writer, rows []*htbRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "setting\tload\tclass\tmodel Mbit/s\tours Mbit/s\tours/model\trunsc Mbit/s\trunsc/model\tkernel Mbit/s\tkernel/model\t")
	for _, row := range rows {
		for i, want := range row.model {
			ours, oursRatio := htbCell(row.ours, row.oursErr, i, want)
			runsc, runscRatio := htbCell(row.runsc, row.runscErr, i, want)
			kernel, kernelRatio := htbCell(row.kernel, row.kernelErr, i, want)
			class := "–"
			if i < len(row.ours.Classes) {
				class = classify.ClassID(row.ours.Classes[i].Class)
			} else if i < len(row.kernel.Classes) {
				class = classify.ClassID(row.kernel.Classes[i].Class)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.setting, row.load, class, float64(want)*8/1e6, ours, oursRatio, runsc, runscRatio, kernel, kernelRatio)
		}
	}
	tw.Flush()
}

// htbCell is class i's rate and its share of want in r, or the error.
func htbCell(r lab.HTBResult, err error, i int, want uint64) (rate, ratio string) {
	switch {
	case err != nil:
		msg := strings.Join(strings.Fields(err.Error()), " ")
		if len(msg) > 100 {
			msg = msg[:100] + "…"
		}
		return "error: " + msg, "–"
	case i >= len(r.Classes):
		return "–", "–"
	}
	c := r.Classes[i]
	return fmt.Sprintf("%.2f", c.Bps*8/1e6), fmt.Sprintf("%.4f", c.Bps/float64(want))
}
