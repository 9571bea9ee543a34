package runscflags_test

import (
	"flag"
	"io"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// parseArgs parses args as runsc does (RegisterFlags, NewFromFlags).
func parseArgs(args ...string) (*runscflags.Config, error) {
	fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	runscflags.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return runscflags.NewFromFlags(fs)
}

// TestKnobWords: --qdisc-tbf, --qdisc-ingress-tbf and --qdisc-fq-codel
// take tc's words (a bare rate in bits/s, a bare time in microseconds) and
// give the Config the knobs' flags give: the same Args, the same qdisc.
// Words no flag holds are refused naming them.
func TestKnobWords(t *testing.T) {
	for _, tc := range []struct {
		words, knobs []string
		show         string // the qdisc the words build, or an error's words
	}{
		{
			[]string{"--qdisc=tbf", "--qdisc-tbf=rate 10mbit burst 32k latency 25ms"},
			[]string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=32kb", "--qdisc-tbf-latency=25ms"},
			"tbf rate 10Mbit burst 32Kb lat 25ms",
		},
		{
			[]string{"--qdisc=tbf", "--qdisc-tbf=rate 8000000 burst 20000b limit 100kb peakrate 20mbit mtu 1600"},
			[]string{"--qdisc=tbf", "--qdisc-tbf-rate=1000000", "--qdisc-tbf-burst=20000", "--qdisc-tbf-limit=102400", "--qdisc-tbf-peakrate=20mbit", "--qdisc-tbf-mtu=1600"},
			"tbf rate 8Mbit burst 20000b peakrate 20Mbit minburst 1600b lat 82.4ms",
		},
		{
			[]string{"--qdisc=fq_codel", "--qdisc-fq-codel=limit 500 target 2000 interval 50ms noecn"},
			[]string{"--qdisc=fq_codel", "--qdisc-fq-codel-limit=500", "--qdisc-fq-codel-target=2ms", "--qdisc-fq-codel-interval=50ms", "--qdisc-fq-codel-ecn=false"},
			"fq_codel limit 500p flows 1024 quantum 1514 target 2ms interval 50ms memory_limit 32Mb",
		},
		{
			[]string{"--qdisc=tbf", "--qdisc-tbf=rate 10mbit burst 32k latency 25ms overhead 24 mpu 64 linklayer atm"},
			[]string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=32kb", "--qdisc-tbf-latency=25ms", "--qdisc-tbf-overhead=24", "--qdisc-tbf-mpu=64", "--qdisc-tbf-linklayer=atm"},
			"tbf rate 10Mbit burst 36252b lat 22.2ms overhead 24 linklayer atm",
		},
		{[]string{"--qdisc-ingress-tbf=rate 10mbit burst 32k overhead 24"}, nil, "overhead is not taken on what the sandbox receives"},
		{[]string{"--qdisc=tbf", "--qdisc-tbf=rate 10mbit latency 25ms"}, nil, "burst"},
		{[]string{"--qdisc-ingress-tbf=rate 10mbit burst 32k peakrate 20mbit mtu 1600"}, nil, "peakrate is not taken on what the sandbox receives"},
		{[]string{"--qdisc=fq_codel", "--qdisc-fq-codel=limit 500 ce_threshold 1ms ce_threshold_selector 0x1/0x3"}, nil, "ce_threshold_selector is not taken here"},
	} {
		got, err := parseArgs(tc.words...)
		if tc.knobs == nil {
			if err == nil || !strings.Contains(err.Error(), tc.show) {
				t.Errorf("%q: error %v; want one saying %q", tc.words, err, tc.show)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.words, err)
			continue
		}
		want, err := parseArgs(tc.knobs...)
		if err != nil {
			t.Fatalf("%q: %v", tc.knobs, err)
		}
		if g, w := strings.Join(got.Args(), " "), strings.Join(want.Args(), " "); g != w {
			t.Errorf("%q: Args %s; want the knobs' %s", tc.words, g, w)
		}
		clock := faketime.NewManualClock()
		q, err := got.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
		if err != nil {
			t.Fatalf("%q: %v", tc.words, err)
		}
		if s := q.(runscflags.QDisc).String(); !strings.HasPrefix(s, tc.show) {
			t.Errorf("%q: builds %q; want %q", tc.words, s, tc.show)
		}
		q.Close()
		if name := strings.SplitN(strings.TrimPrefix(tc.words[1], "--"), "=", 2)[0]; got.Get(name) == "" {
			t.Errorf("Get(%q) = \"\"; want the words the knobs hold", name)
		}
	}
	in, err := parseArgs("--qdisc-ingress-tbf=rate 1mbit burst 10k limit 20k")
	if err != nil {
		t.Fatal(err)
	}
	if c := in.IngressConfig(); c.Rate != 125000 || c.Burst != 10240 || c.Limit != 20480 {
		t.Errorf("--qdisc-ingress-tbf: %+v; want rate 125000 bytes/s, burst 10240 and limit 20480 bytes", c)
	}
}

// TestKnobWordsAnnotations: a pod's words for tbf are held to the
// operator's knob by knob, as the knobs' own annotations are; and `runsc
// qdisc change` takes the words as the knobs' changes.
func TestKnobWordsAnnotations(t *testing.T) {
	op := []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=32kb"}
	c, err := parseArgs(op...)
	if err != nil {
		t.Fatal(err)
	}
	key := runscflags.AnnotationPrefix + "qdisc-tbf"
	if err := c.ApplyAnnotations(map[string]string{key: "rate 5mbit burst 16k latency 10ms"}); err != nil {
		t.Fatal(err)
	}
	if c.TBFRate != 625000 || c.TBFBurst != 16384 || c.TBFLatency.Milliseconds() != 10 {
		t.Errorf("after the annotation: %v; want rate 625000, burst 16384, latency 10ms", c.Args())
	}
	for _, words := range []string{"rate 20mbit burst 16k", "rate 5mbit burst 64k"} {
		c, _ := parseArgs(op...)
		if err := c.ApplyAnnotations(map[string]string{key: words}); err == nil || !strings.Contains(err.Error(), "exceeds the operator's ceiling") {
			t.Errorf("annotation %q: %v; want a refusal past the operator's ceiling", words, err)
		}
	}

	clock := faketime.NewManualClock()
	c, _ = parseArgs(op...)
	link := qdisctest.NewLink(clock)
	q, err := c.NewQueueingDiscipline(link, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	n := runscflags.NewNIC("eth0", c, link, clock, q, nil)
	if _, err := runscflags.Change([]*runscflags.NIC{n}, []string{"--qdisc-tbf=rate 20mbit burst 64k latency 5ms"}); err != nil {
		t.Fatal(err)
	}
	if show := n.Show(); !strings.Contains(show, "root refcnt 2 rate 20Mbit burst 64Kb lat 5ms") {
		t.Errorf("after the change:\n%s\nwant rate 20Mbit burst 64Kb lat 5ms", show)
	}
}
