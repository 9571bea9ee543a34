package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
)

// cakeRates are the --cake suite's bandwidths for the shaper's accuracy
// and latency under load.
var cakeRates = []string{"1mbit", "10mbit", "100mbit", "1gbit"}

// runCake measures cake on a real veth (lab.Lab), the netstack in process
// as the sandbox serving the peer's two addresses as two clients (issue
// 29): host fairness with client A receiving 1 TCP stream and client B 10
// through 100 Mbit/s, cake's host modes beside netqdisc's tbf with an
// fq_codel child and the kernel's sch_tbf and sch_htb (one class, a pfifo leaf; this
// kernel has neither fq_codel nor cake); the shaper's accuracy on the
// wire and a ping's RTT under load from 1 Mbit/s to 1 Gbit/s; and an EF
// marked ping beside an unmarked one under bulk load with diffserv4 and
// besteffort; and the ACK filter where the netstack's ACKs leave through
// cake at 1:10 and 1:333 of a download.
func runCake(stdout, stderr io.Writer, streams int, warmup, window time.Duration) int {
	l, err := lab.New()
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --cake: %v\n", err)
		return 2
	}
	defer l.Close()
	start := time.Now()
	progress := func(f string, a ...any) {
		fmt.Fprintf(stderr, "[%v] %s\n", time.Since(start).Round(time.Second), fmt.Sprintf(f, a...))
	}
	failed := false
	o := measure.Options{Warmup: warmup, Window: window}

	// Host fairness.
	fmt.Fprintf(stdout, "\nHost fairness: the netstack serves client A (%s) 1 TCP stream and client B (%s) 10, through 100 Mbit/s; each client's goodput (the peer's ss bytes_received) over %v after %v, A's share of the two; on the wire: the peer's veth\n", lab.PeerAddr, lab.PeerClusterAddr, window, warmup)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "qdisc\tA Mbit/s\tB Mbit/s\tA's share\ton the wire Mbit/s\t")
	kernelHTB, err := lab.FromFlags([]string{"--qdisc=htb", "--qdisc-htb=qdisc default 20; class root classid 1:1 rate 100mbit; class parent 1:1 classid 1:20 rate 100mbit ceil 100mbit"}, nil)
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --cake: kernel htb: %v\n", err)
		return 1
	}
	tbfFQ, err := lab.FromFlags([]string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=125000", "--qdisc-tbf-child=fq_codel"}, nil)
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --cake: tbf + fq_codel: %v\n", err)
		return 1
	}
	for _, c := range []struct {
		name string
		run  func() (lab.HTBResult, error)
	}{
		{"ours, cake 100mbit dual-dsthost", cakeHosts(l, "bandwidth 100mbit dual-dsthost", o)},
		{"ours, cake 100mbit triple-isolate", cakeHosts(l, "bandwidth 100mbit triple-isolate", o)},
		{"ours, cake 100mbit dsthost", cakeHosts(l, "bandwidth 100mbit dsthost", o)},
		{"ours, tbf 100mbit + fq_codel", func() (lab.HTBResult, error) {
			return l.MeasureNetstackHosts(tbfFQ.NewQueueingDiscipline, lab.HostLoads(1, 10), o)
		}},
		{"kernel, tbf 100mbit (burst 125000)", func() (lab.HTBResult, error) {
			return l.MeasureKernelTBF(100*125_000, 125_000, 50*time.Millisecond, lab.HostLoads(1, 10), o)
		}},
		{"kernel, htb 100mbit (one class, pfifo)", func() (lab.HTBResult, error) {
			hc, err := kernelHTB.HTBConfig()
			if err != nil {
				return lab.HTBResult{}, err
			}
			r, _, err := l.MeasureKernelHTB(hc, lab.HostLoads(1, 10), o)
			return r, err
		}},
	} {
		progress("host fairness: %s", c.name)
		r, err := c.run()
		if err != nil {
			failed = true
			fmt.Fprintf(tw, "%s\terror: %v\t\t\t\t\n", c.name, err)
			continue
		}
		s := lab.Shares(r)
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.3f\t%.2f\t\n", c.name, r.Classes[0].Goodput*8/1e6, r.Classes[1].Goodput*8/1e6, s[0], r.PeerBps*8/1e6)
	}
	tw.Flush()

	// Accuracy and latency under load.
	po := measure.Options{Streams: streams, Warmup: warmup, Window: window, PingInterval: 50 * time.Millisecond}
	fmt.Fprintf(stdout, "\nThe shaper's accuracy and a sparse flow under load: cake bandwidth X alone (no overhead keyword: cake charges each frame's length, what the peer's veth counts), %d TCP streams from the netstack; the peer's veth's received bytes over %v after %v, over X; a ping every %v from the peer (its replies cross cake), RTT above the idle median\n", streams, window, warmup, po.PingInterval)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "bandwidth\ton the wire Mbit/s\tof X\tping idle\tp50 above idle\tp99 above idle\tanswered\t")
	for _, bw := range cakeRates {
		words := "bandwidth " + bw
		progress("accuracy: cake %s", words)
		cfg, err := cake.ParseQdisc(words)
		if err != nil {
			fmt.Fprintf(stderr, "qdiscbench --cake: %v\n", err)
			return 1
		}
		mk, err := lab.CakeQDisc(words)
		if err != nil {
			fmt.Fprintf(stderr, "qdiscbench --cake: %v\n", err)
			return 1
		}
		r, err := l.MeasureNetstack(mk, po)
		if err != nil {
			failed = true
			fmt.Fprintf(tw, "%s\terror: %v\t\t\t\t\t\t\n", bw, err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.4f\t%v\t%v\t%v\t%d/%d\t\n", bw, r.WireBps*8/1e6, r.WireBps/float64(cfg.Bandwidth), r.IdleRTT.Round(time.Microsecond),
			(r.RTT(0.5) - r.IdleRTT).Round(10*time.Microsecond), (r.RTT(0.99) - r.IdleRTT).Round(10*time.Microsecond), len(r.RTTs), r.PingsSent)
	}
	tw.Flush()

	// Diffserv.
	mo := measure.Options{Warmup: warmup, Window: window, PingInterval: 20 * time.Millisecond}
	fmt.Fprintf(stdout, "\nA voice-marked sparse flow under bulk load: %d unmarked TCP streams from the netstack through cake 100mbit; from the peer at once a ping marked EF (TOS 0xb8: diffserv4's voice tin; the netstack's echo reply keeps the TOS) and an unmarked one, every %v over %v after %v\n", streams, mo.PingInterval, window, warmup)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cake\tgoodput Mbit/s\tprobe\tidle\tp50\tp99\tanswered\t")
	for _, words := range []string{"bandwidth 100mbit diffserv4", "bandwidth 100mbit besteffort"} {
		progress("diffserv: cake %s", words)
		mk, err := lab.CakeQDisc(words)
		if err != nil {
			fmt.Fprintf(stderr, "qdiscbench --cake: %v\n", err)
			return 1
		}
		r, err := l.MeasureNetstackMarked(mk, streams, []uint8{0xb8, 0}, mo)
		if err != nil {
			failed = true
			fmt.Fprintf(tw, "%s\terror: %v\t\t\t\t\t\t\n", words, err)
			continue
		}
		for _, p := range r.Probes {
			name := "unmarked"
			if p.TOS != 0 {
				name = fmt.Sprintf("EF (%#x)", p.TOS)
			}
			fmt.Fprintf(tw, "%s\t%.2f\t%s\t%v\t%v\t%v\t%d/%d\t\n", words, r.Goodput*8/1e6, name, p.IdleRTT.Round(time.Microsecond), p.RTT(0.5).Round(10*time.Microsecond), p.RTT(0.99).Round(10*time.Microsecond), len(p.RTTs), p.PingsSent)
		}
	}
	tw.Flush()

	// ACK filter.
	do := measure.Options{Streams: streams, Warmup: warmup, Window: window}
	fmt.Fprintf(stdout, "\nThe ACK filter on asymmetric links: the peer sends the netstack %d TCP streams (iperf) through the kernel's tbf 100mbit on its veth; the netstack's ACKs leave through cake at 10mbit (1:10) and 300kbit (1:333, where the ACKs fill the uplink); over %v after %v: the download at the netstack's NIC (L2), the packets cake sent (ACKs) and its ACK filter's drops\n", streams, window, warmup)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "cake (egress)\tdownload Mbit/s\tpackets sent/s\tACKs dropped/s\t")
	for _, bw := range []string{"10mbit", "300kbit"} {
		for _, filter := range []string{"", " ack-filter", " ack-filter-aggressive"} {
			words := "bandwidth " + bw + filter
			progress("ACK filter: cake %s", words)
			mk, err := lab.CakeQDisc(words)
			if err != nil {
				fmt.Fprintf(stderr, "qdiscbench --cake: %v\n", err)
				return 1
			}
			r, err := l.MeasureNetstackDownload(mk, 100*125_000, do)
			if err != nil {
				failed = true
				fmt.Fprintf(tw, "%s\terror: %v\t\t\t\n", words, err)
				continue
			}
			secs := r.Elapsed.Seconds()
			fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%.0f\t\n", words, r.RxWireBps*8/1e6, float64(r.EgressPackets)/secs, float64(r.AckDrops)/secs)
		}
	}
	tw.Flush()
	if failed {
		return 1
	}
	return 0
}

// cakeHosts measures the host fairness loads through cake configured by
// words.
func cakeHosts(l *lab.Lab, words string, o measure.Options) func() (lab.HTBResult, error) {
	return func() (lab.HTBResult, error) {
		mk, err := lab.CakeQDisc(words)
		if err != nil {
			return lab.HTBResult{}, err
		}
		return l.MeasureNetstackHosts(mk, lab.HostLoads(1, 10), o)
	}
}
