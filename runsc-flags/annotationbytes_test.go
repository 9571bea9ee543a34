package runscflags

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestAnnotationSendsNoMore is only-tighten measured in bytes for the
// token bucket, fq_codel and cake: for random operator flags and random
// annotations the policy accepts (dev.gvisor.flag.* for every qdisc flag
// of the send path, and Kubernetes' egress bandwidth), more load than any
// ceiling offered for 2 s to the qdisc NewQueueingDiscipline builds, on a
// step clock, sends no more after the annotations than the operator's
// ceilings let through (ceilingMbit). 250 accepted sets in the long run
// (qdisctest.Long), 8 by default (propertySets).
func TestAnnotationSendsNoMore(t *testing.T) {
	t.Parallel() // long under -race; shares nothing with the package's other tests
	rng := rand.New(rand.NewPCG(36, 2))
	dsts := []netip.Addr{netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2"), netip.MustParseAddr("203.0.113.7")}
	const dur = 2 * time.Second
	// Slack: two packets (in Mbit/s over dur) for where the window ends.
	const pkts = 2 * 1500 * 8 / 2 / 1e6
	want := propertySets()
	accepted := map[string]int{}
	for tried := 0; accepted["tbf"]+accepted["cake"] < want; tried++ {
		if tried > 40*want {
			t.Fatalf("only %v of %d random annotations accepted", accepted, tried)
		}
		args, kind := byteOperator(rng)
		c, err := parse(t, args...)
		if err != nil {
			t.Fatalf("operator %q: %v", args, err)
		}
		ceiling := ceilingMbit(t, c, float64(len(dsts)*10*1500*8*1000)/1e6, dur)
		anns := byteAnnotations(rng, kind)
		if c.ApplyAnnotations(anns) != nil {
			continue
		}
		accepted[kind]++
		after := offeredMbit(t, c, dsts, 10, dur)
		if after > ceiling+pkts {
			t.Fatalf("operator %q, annotations %v: %.3f Mbit/s left, above the operator's ceiling %.3f", args, sortedAnnotations(anns), after, ceiling)
		}
	}
	t.Logf("accepted annotations: %v, each held in 2 s of load", accepted)
	if accepted["tbf"] < want/4 || accepted["cake"] < want/4 {
		t.Errorf("accepted %v: the property is barely exercised", accepted)
	}
}

// byteOperator is a random operator's send path: a tbf (rate, burst,
// now and then a peak rate, a queue bound, a packet ceiling, fq_codel
// under it), fifo, fq_codel or none (kind "tbf"), or cake (kind "cake").
func byteOperator(rng *rand.Rand) ([]string, string) {
	if rng.IntN(3) == 0 {
		return []string{"--qdisc=cake", fmt.Sprintf("--qdisc-cake=bandwidth %dmbit %s", 5+rng.IntN(60), []string{"besteffort", "diffserv4", "dual-dsthost", "ack-filter", "rtt 50ms"}[rng.IntN(5)])}, "cake"
	}
	switch rng.IntN(5) {
	case 0:
		return []string{"--qdisc=" + []string{"fifo", "fq_codel", "none"}[rng.IntN(3)]}, "tbf"
	}
	r := 5 + rng.IntN(60)
	args := []string{"--qdisc=tbf", fmt.Sprintf("--qdisc-tbf-rate=%dmbit", r), fmt.Sprintf("--qdisc-tbf-burst=%d", 1514+rng.IntN(60000))}
	if rng.IntN(3) == 0 {
		args = append(args, fmt.Sprintf("--qdisc-tbf-peakrate=%dmbit", r+1+rng.IntN(50)), "--qdisc-tbf-mtu=1514")
	}
	switch rng.IntN(4) {
	case 0:
		args = append(args, fmt.Sprintf("--qdisc-tbf-latency=%dms", 1+rng.IntN(50)))
	case 1:
		args = append(args, fmt.Sprintf("--qdisc-tbf-limit=%d", 3000+rng.IntN(100000)))
	case 2:
		args = append(args, "--qdisc-tbf-child=fq_codel")
	}
	if rng.IntN(4) == 0 {
		args = append(args, fmt.Sprintf("--qdisc-tbf-pkt-rate=%d", 500+rng.IntN(5000)), fmt.Sprintf("--qdisc-tbf-pkt-burst=%d", 1+rng.IntN(20)))
	}
	return args, "tbf"
}

// byteAnnotations is one to three random annotations of kind's flags,
// some tighter than any operator's, some looser, some nonsense.
func byteAnnotations(rng *rand.Rand, kind string) map[string]string {
	a := map[string]string{}
	for range 1 + rng.IntN(3) {
		if kind == "cake" {
			switch rng.IntN(4) {
			case 0:
				a[AnnotationPrefix+FlagCake] = fmt.Sprintf("bandwidth %dmbit %s", 1+rng.IntN(80), []string{"besteffort", "diffserv8", "triple-isolate", "ack-filter-aggressive", "rtt 10ms", "wash"}[rng.IntN(6)])
			case 1:
				a[AnnotationPrefix+FlagCakeBandwidth] = fmt.Sprintf("%dmbit", 1+rng.IntN(80))
			case 2:
				a[AnnotationPrefix+FlagCakeOverhead] = fmt.Sprint(rng.IntN(64))
			case 3:
				a[AnnotationKubeEgress] = fmt.Sprintf("%dM", 1+rng.IntN(80))
			}
			continue
		}
		switch rng.IntN(9) {
		case 0:
			a[AnnotationPrefix+FlagQDisc] = []string{"tbf", "fq_codel", "fifo", "cake"}[rng.IntN(4)]
		case 1:
			a[AnnotationPrefix+FlagTBFRate] = fmt.Sprintf("%dmbit", 1+rng.IntN(80))
		case 2:
			a[AnnotationPrefix+FlagTBFBurst] = fmt.Sprint(1514 + rng.IntN(80000))
		case 3:
			a[AnnotationPrefix+FlagTBFPeakRate] = fmt.Sprintf("%dmbit", 1+rng.IntN(100))
		case 4:
			a[AnnotationPrefix+FlagTBFLatency] = fmt.Sprintf("%dms", 1+rng.IntN(60))
		case 5:
			a[AnnotationPrefix+FlagTBFPacketRate] = fmt.Sprint(100 + rng.IntN(8000))
		case 6:
			a[AnnotationPrefix+FlagTBFChild] = "fq_codel"
		case 7:
			a[AnnotationKubeEgress] = fmt.Sprintf("%dM", 1+rng.IntN(80))
		case 8:
			a[AnnotationPrefix+FlagTBFMTU] = fmt.Sprint(1514 + rng.IntN(3000))
		}
	}
	// A pod's ceiling shapes only a tbf (unappliedCeiling): most sets
	// that give one select tbf too; the rest are refused.
	if _, ok := a[AnnotationPrefix+FlagQDisc]; !ok && kind != "cake" && rng.IntN(4) != 0 {
		a[AnnotationPrefix+FlagQDisc] = "tbf"
	}
	return a
}

// sortedAnnotations is a's keys and values in order, for messages.
func sortedAnnotations(a map[string]string) string {
	var kv []string
	for k, v := range a {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, " ")
}

// ceilingMbit is the most the operator's send path c lets through in dur,
// in Mbit/s, of 1500-byte packets offered at offered Mbit/s: a tbf's
// buckets (rate and burst, peak rate and mtu, packets per second and
// their burst), cake's bandwidth (a packet ahead at most), or the load
// itself, where nothing bounds it.
func ceilingMbit(t *testing.T, c *Config, offered float64, dur time.Duration) float64 {
	t.Helper()
	secs := dur.Seconds()
	most := offered * secs * 1e6 / 8 // bytes
	switch c.QDisc {
	case "tbf":
		if c.TBFRate != 0 {
			most = min(most, float64(c.TBFRate)*secs+float64(c.TBFBurst))
		}
		if c.TBFPeakRate != 0 {
			most = min(most, float64(c.TBFPeakRate)*secs+float64(c.TBFMTU))
		}
		if c.TBFPacketRate != 0 {
			most = min(most, (float64(c.TBFPacketRate)*secs+float64(c.TBFPacketBurst))*1500)
		}
	case "cake":
		cfg, err := c.CakeConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Bandwidth != 0 {
			most = min(most, float64(cfg.Bandwidth)*secs+1500)
		}
	}
	return most * 8 / secs / 1e6
}
