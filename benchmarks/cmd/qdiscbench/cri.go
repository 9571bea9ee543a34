package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netqdisc/netqdisc/lab"
	"github.com/netqdisc/netqdisc/lab/measure"
	"github.com/netqdisc/netqdisc/runsc-flags"
)

// criRow is one line of the --cri table: a pod of a runtime handler with
// annotations, on the CRI with or without the CNI bandwidth plugin, and
// what its rounds measured.
type criRow struct {
	runtime, asks string
	handler       string
	ann           map[string]string
	ingress       bool
	plugin        bool // on the second CRI, the bandwidth plugin's
	refused       bool // the pod must be refused; the note is why

	rounds []lab.CRIStreamResult
	note   string
	err    error
}

// criRows are the --cri table's pods: what the CRI tests (e2e/cri_*_test.go)
// measure. netqdisc's runsc with the operator's ceiling (lab.CRIOperator),
// upstream runsc, and runc with the CNI bandwidth plugin on a CRI of its
// own (as the tests keep it apart: a runsc pod there is shaped twice),
// each asked for 10M out and 20M in; then a Kubernetes bandwidth above the
// ceiling (the pod gets the ceiling) and a dev.gvisor.flag above it
// (refused).
func criRows() []*criRow {
	egress := map[string]string{runscflags.AnnotationKubeEgress: "10M"}
	ingress := map[string]string{runscflags.AnnotationKubeIngress: "20M"}
	const ours, ceiling = "runsc with netqdisc", "runsc with netqdisc, ceiling 100mbit"
	return []*criRow{
		{runtime: ours, asks: "egress-bandwidth: 10M", handler: "runsc", ann: egress},
		{runtime: ours, asks: "ingress-bandwidth: 20M", handler: "runsc", ann: ingress, ingress: true},
		{runtime: "upstream runsc", asks: "egress-bandwidth: 10M", handler: "runsc-upstream", ann: egress},
		{runtime: "upstream runsc", asks: "ingress-bandwidth: 20M", handler: "runsc-upstream", ann: ingress, ingress: true},
		{runtime: "runc + CNI bandwidth plugin", asks: "egress-bandwidth: 10M", handler: "runc", ann: egress, plugin: true},
		{runtime: "runc + CNI bandwidth plugin", asks: "ingress-bandwidth: 20M", handler: "runc", ann: ingress, ingress: true, plugin: true},
		{runtime: ceiling, asks: "egress-bandwidth: 200M", handler: "runsc", ann: map[string]string{runscflags.AnnotationKubeEgress: "200M"}},
		{runtime: ceiling, asks: "dev.gvisor.flag.qdisc-tbf-rate: 200mbit", handler: "runsc",
			ann: map[string]string{runscflags.AnnotationPrefix + "qdisc-tbf-rate": "200mbit"}, refused: true},
	}
}

// criBinaries returns netqdisc's runsc and upstream's, once cri/bin, both
// runscs and root are there; the error says what to build or install.
func criBinaries() (ours, upstream string, err error) {
	if _, err = lab.CRIBin(); err != nil {
		return "", "", err
	}
	if ours, err = lab.RunscBinary(false); err != nil {
		return "", "", err
	}
	if upstream, err = lab.RunscBinary(true); err != nil {
		return "", "", err
	}
	return ours, upstream, lab.CheckCRI()
}

// runCRI runs the --cri comparison: each row's pod through containerd's
// CRI, one TCP stream of d each from a send buffer of sndbuf bytes (0: the
// stack's default), interleaved over rounds, then the table. Everything it
// starts goes on every path, an interrupt (SIGINT, SIGTERM) included.
func runCRI(stdout, stderr io.Writer, rounds int, d time.Duration, sndbuf int, quiet bool) int {
	if d > 2*time.Minute || sndbuf < 0 {
		fmt.Fprintf(stderr, "qdiscbench --cri: --duration must be at most 2m, --cri-sndbuf not negative\n")
		return 2
	}
	ours, upstream, err := criBinaries()
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --cri: %v\n", err)
		return 2
	}
	lab.SweepCRI() // what a killed run left
	// Two levels under the temporary directory, where SweepCRI looks.
	top, err := os.MkdirTemp("", "qdiscbench-cri-")
	if err != nil {
		fmt.Fprintf(stderr, "qdiscbench --cri: %v\n", err)
		return 1
	}
	var mu sync.Mutex
	var cris []*lab.CRI
	cleanup := sync.OnceFunc(func() {
		lab.CloseAll() // the CRIs, one being started included
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cris {
			for _, l := range c.Leftovers() {
				fmt.Fprintf(stderr, "qdiscbench --cri: left after the run: %s\n", l)
			}
			os.Remove(c.Dir) // Close empties it
		}
		os.Remove(top)
	})
	defer cleanup()
	// An interrupt ends the run after the current pod (a terminal's ^C has
	// already killed its client, sender and ping: that is soon), then the
	// deferred cleanup runs; should the pod hang, the cleanup runs here.
	var interrupted atomic.Bool
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case s := <-sig:
			interrupted.Store(true)
			fmt.Fprintf(stderr, "qdiscbench --cri: %v: removing the CRIs after the current pod\n", s)
			select {
			case <-done:
			case <-time.After(d + time.Minute):
				cleanup()
				os.Exit(1)
			}
		case <-done:
		}
	}()

	handlers := map[string]lab.CRIRuntime{
		"runsc":          {Runsc: ours, Config: lab.CRIOperator},
		"runsc-upstream": {Runsc: upstream},
	}
	start := time.Now()
	for i, plugin := range []bool{false, true} {
		if interrupted.Load() {
			return 1
		}
		dir := filepath.Join(top, strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			fmt.Fprintf(stderr, "qdiscbench --cri: %v\n", err)
			return 1
		}
		c, err := lab.StartCRI(dir, lab.CRIOptions{Runsc: handlers, BandwidthPlugin: plugin})
		if err != nil {
			os.Remove(dir)
			fmt.Fprintf(stderr, "qdiscbench --cri: %v\n", err)
			return 1
		}
		mu.Lock()
		cris = append(cris, c)
		mu.Unlock()
	}
	if !quiet {
		fmt.Fprintf(stderr, "[%v] containerd up in %s and %s (with the CNI bandwidth plugin)\n", time.Since(start).Round(time.Second), cris[0].NS, cris[1].NS)
	}
	rows := criRows()
	for round := 1; round <= rounds; round++ {
		for i, row := range rows {
			if interrupted.Load() {
				return 1
			}
			if row.err != nil {
				continue
			}
			if !quiet {
				fmt.Fprintf(stderr, "[%v] round %d/%d, %d/%d: %s, %s\n", time.Since(start).Round(time.Second), round, rounds, i+1, len(rows), row.runtime, row.asks)
			}
			c := cris[0]
			if row.plugin {
				c = cris[1]
			}
			r, note, err := measureCRI(c, row, fmt.Sprintf("bench-%d-%d", round, i+1), d, sndbuf)
			if err != nil {
				row.err = err
				continue
			}
			row.note = note
			if !row.refused {
				row.rounds = append(row.rounds, r)
			}
		}
	}
	buf := "the stack's default send buffer"
	if sndbuf > 0 {
		buf = fmt.Sprintf("a %d-byte send buffer", sndbuf)
	}
	of := "one round"
	if rounds > 1 {
		of = fmt.Sprintf("median [min–max] of %d interleaved rounds", rounds)
	}
	fmt.Fprintf(stdout, "\nPods through containerd's CRI with gVisor's shim and the CNI bridge (runc + the CNI bandwidth plugin on a second containerd); one TCP stream each for %v from %s, counted by the sink at the receiving end from the first byte (on the wire: with each segment's Ethernet, IP and TCP headers); ping every 100 ms from the node's namespace while it runs; the runsc handler's runsc.toml sets the operator's tbf (rate 100mbit, burst 128kb, latency 50ms); %s\n\n", d, buf, of)
	writeCRITable(stdout, rows)
	for _, row := range rows {
		if row.err != nil {
			return 1
		}
	}
	return 0
}

// measureCRI runs row's pod (named name), streams through it for d, and
// returns what was measured and the row's note (for a refused row, the
// refusal's first line); the pod is removed before it returns.
func measureCRI(c *lab.CRI, row *criRow, name string, d time.Duration, sndbuf int) (r lab.CRIStreamResult, note string, err error) {
	ann := make(map[string]string, len(row.ann))
	for k, v := range row.ann {
		ann[k] = v
	}
	p := &lab.Pod{Name: name, RuntimeHandler: row.handler, Annotations: ann}
	id, err := c.RunPod(p)
	if row.refused {
		if err == nil {
			c.RemovePod(id)
			return r, "", errors.New("RunPodSandbox accepted the pod")
		}
		// netqdisc's refusal names the annotation; any other failure
		// (containerd gone) is no refusal.
		var ce *lab.ClientError
		if !errors.As(err, &ce) || !strings.Contains(ce.Stderr, runscflags.AnnotationPrefix+"qdisc-tbf-rate") {
			return r, "", err
		}
		line, _, _ := strings.Cut(ce.Stderr, "\n")
		return r, "refused: " + line, nil
	}
	if err != nil {
		return r, "", err
	}
	defer func() {
		if rerr := c.RemovePod(id); err == nil {
			err = rerr
		}
	}()
	s := lab.CRIStream{PodID: id, Pod: p, Ingress: row.ingress, For: d}
	if sndbuf > 0 {
		s.SenderArgs = []string{"-sndbuf", strconv.Itoa(sndbuf)}
	}
	if r, err = c.Stream(s); err != nil {
		return r, "", err
	}
	note, err = criNote(c, row, id)
	return r, note, err
}

var (
	bootQDisc   = regexp.MustCompile(`Enabling qdisc on "[^"]*": ([^\n]*)`)
	bootIngress = regexp.MustCompile(`Enabling ingress shaping on "[^"]*": ([^\n]*)`)
	bootCeiling = regexp.MustCompile(`is above the operator's ceiling [^\n;]*; the pod gets the ceiling`)
)

// criNote says what shaped the stream of a pod that still runs: for
// netqdisc's runsc, the shaper its boot log names (and the notice when a
// bandwidth was held to the ceiling); for runc, the plugin's tbf, its
// bucket and whether it held packets.
func criNote(c *lab.CRI, row *criRow, podID string) (string, error) {
	switch row.handler {
	case "runsc-upstream":
		return "the annotation is ignored", nil
	case "runc":
		qs, err := c.TBFs()
		if err != nil {
			return "", err
		}
		if len(qs) != 1 {
			return "", fmt.Errorf("%d tbf qdiscs in the CRI's namespace; want the plugin's one", len(qs))
		}
		q := qs[0]
		shape := strings.TrimSpace(q.Line)
		if i := strings.Index(shape, "rate "); i >= 0 {
			shape = shape[i:]
		}
		return fmt.Sprintf("the plugin's tbf %s (a bucket of %.0f MB): %d overlimits, %d dropped", shape, float64(q.Burst())/1e6, q.Overlimits, q.Dropped), nil
	}
	log, err := c.RunscLog(row.handler, podID, "boot")
	if err != nil {
		return "", err
	}
	re := bootQDisc
	if row.ingress {
		re = bootIngress
	}
	m := re.FindStringSubmatch(log)
	if m == nil {
		return "", fmt.Errorf("the boot log of pod %s names no shaper (%s)", podID, re)
	}
	note := "boot log: " + m[1]
	if n := bootCeiling.FindString(log); n != "" {
		note += "; " + row.asks + " " + n
	}
	return note, nil
}

// writeCRITable prints the rows as a markdown table: the median of each
// figure over the rounds, with its range when there are several.
func writeCRITable(w io.Writer, rows []*criRow) {
	fmt.Fprintln(w, "| runtime | pod asks | first second (MB) | average from the first byte (Mbit/s) | on the wire (Mbit/s) | steady, second 2 to the end (Mbit/s) | ping p50 (ms) | ping p99 (ms) | note |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|---|")
	ms := func(d time.Duration) float64 {
		if d == 0 { // no ping answered
			return math.NaN()
		}
		return float64(d) / float64(time.Millisecond)
	}
	figures := []struct {
		f      func(lab.CRIStreamResult) float64
		format string
	}{
		{func(r lab.CRIStreamResult) float64 { return float64(r.FirstSecondBytes()) / 1e6 }, "%.2f"},
		{func(r lab.CRIStreamResult) float64 { return r.GoodputBps / 1e6 }, "%.2f"},
		{func(r lab.CRIStreamResult) float64 { return r.WireBps() / 1e6 }, "%.2f"},
		{func(r lab.CRIStreamResult) float64 {
			if s := r.SteadyBps(2); s > 0 {
				return s / 1e6
			}
			return math.NaN() // a stream of 2 s or less
		}, "%.2f"},
		{func(r lab.CRIStreamResult) float64 { return ms(r.RTT(0.5)) }, "%.2f"},
		{func(r lab.CRIStreamResult) float64 { return ms(r.RTT(0.99)) }, "%.2f"},
	}
	for _, row := range rows {
		cells := []string{row.runtime, row.asks}
		for _, fig := range figures {
			v := make([]float64, len(row.rounds))
			for i, r := range row.rounds {
				v[i] = fig.f(r)
			}
			cells = append(cells, spread(v, fig.format))
		}
		note := row.note
		switch {
		case row.err != nil && len(row.rounds) == 0 && note == "":
			note = fmt.Sprintf("error: %v", row.err)
		case row.err != nil:
			note += fmt.Sprintf(" (a later round failed: %v)", row.err)
		}
		cells = append(cells, note)
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(strings.ReplaceAll(c, "|", `\|`), "\n", " ")
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// spread formats the median of v (measure.Median), with its range when v has more than one
// value ("–" when it has none; NaNs, figures a round lacked, are left out).
func spread(v []float64, format string) string {
	var s []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return "–"
	}
	m, lo, hi := measure.Median(s)
	med := fmt.Sprintf(format, m)
	if len(s) == 1 {
		return med
	}
	return fmt.Sprintf("%s ["+format+"–"+format+"]", med, lo, hi)
}
