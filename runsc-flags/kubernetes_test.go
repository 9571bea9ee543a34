package runscflags

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

func TestParseKubeBandwidth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64 // bytes/s; 0: an error
	}{
		{"10M", 1_250_000},
		{"1G", 125_000_000},
		{"500k", 62_500},
		{"1Mi", 131_072},
		{"1e6", 125_000},
		{"1.5M", 187_500},
		{"1000", 125},
		{"1T", 125_000_000_000},
		{"999", 0},    // below kubelet's 1k
		{"2T", 0},     // above what 25 ms of queue can hold
		{"100m", 0},   // 0.1 bit/s
		{"-5M", 0},    // negative
		{"10 M", 0},   // a space
		{"10MB", 0},   // not a quantity suffix
		{"fast", 0},   // not a number
		{"", 0},       // empty
		{"1/8M", 0},   // a fraction is not a quantity
		{"10mbit", 0}, // tc's units are not Kubernetes'
	} {
		got, err := ParseKubeBandwidth(tc.in)
		if tc.want == 0 {
			if err == nil {
				t.Errorf("ParseKubeBandwidth(%q) = %d; want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseKubeBandwidth(%q) = %d, %v; want %d bytes/s", tc.in, got, err, tc.want)
		}
	}
}

func kube(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// TestKubeAnnotations: Kubernetes' bandwidth annotations tighten: egress
// selects tbf, each direction gets the rate, a burst holding a full-size
// GSO packet (or 10 ms of rate), and 25 ms of queue (on egress under fq,
// the default child, only where a limit or latency is in force: fq's own
// limits bound it), each only where it is smaller than what is in force; above the operator's rate they get the
// operator's rate, with a notice naming the annotation and the ceiling
// (Warnings, for the boot log).
func TestKubeAnnotations(t *testing.T) {
	operatorTBF := []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-latency=50ms"}
	for _, tc := range []struct {
		name     string
		operator []string
		set      map[string]string
		want     Config
		says     []string // an error that says these
	}{
		// Under fq, the default child, the tbf's default limit and fq's own bound the queue
		// where the operator set no limit or latency.
		{"egress on fifo selects tbf", nil, kube(AnnotationKubeEgress, "10M"),
			Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 65550}, nil},
		{"egress over a tbf's byte FIFO: 25 ms of queue", []string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=125000", "--qdisc-tbf-child=fifo"}, kube(AnnotationKubeEgress, "10M"),
			Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 65550, TBFChild: ChildFIFO, TBFLatency: 25 * time.Millisecond}, nil},
		{"egress below the operator's tbf", operatorTBF, kube(AnnotationKubeEgress, "5M"),
			Config{QDisc: "tbf", TBFRate: 625_000, TBFBurst: 12500, TBFLatency: 25 * time.Millisecond}, nil},
		{"egress at 1G: 10 ms of burst, the default queue", []string{"--qdisc-tbf-child=fifo"}, kube(AnnotationKubeEgress, "1G"),
			// 25 ms at 1 Gbit/s is more than the default queue (1000
			// full-size packets) the operator left: held to it.
			Config{QDisc: "tbf", TBFRate: 125_000_000, TBFBurst: 1_250_000, TBFChild: ChildFIFO, TBFLatency: 2112 * time.Microsecond}, nil},
		{"egress at 10G: the burst alone past the default queue", []string{"--qdisc-tbf-child=fifo"}, kube(AnnotationKubeEgress, "10G"),
			Config{QDisc: "tbf", TBFRate: 1_250_000_000, TBFBurst: 12_500_000, TBFChild: ChildFIFO, TBFLimit: DefaultQueueBytes}, nil},
		{"egress keeps a smaller limit", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-limit=20000"}, kube(AnnotationKubeEgress, "5M"),
			Config{QDisc: "tbf", TBFRate: 625_000, TBFBurst: 12500, TBFLimit: 20000}, nil},
		{"egress caps a larger limit at 25 ms", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-limit=1mb"}, kube(AnnotationKubeEgress, "5M"),
			Config{QDisc: "tbf", TBFRate: 625_000, TBFBurst: 12500, TBFLimit: 625_000/40 + 12500}, nil},
		{"egress keeps a shorter latency", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-latency=10ms"}, kube(AnnotationKubeEgress, "5M"),
			Config{QDisc: "tbf", TBFRate: 625_000, TBFBurst: 12500, TBFLatency: 10 * time.Millisecond}, nil},
		{"egress and a stricter flag annotation", operatorTBF, map[string]string{AnnotationKubeEgress: "8M", AnnotationPrefix + FlagTBFRate: "2mbit"},
			Config{QDisc: "tbf", TBFRate: 250_000, TBFBurst: 12500, TBFLatency: 25 * time.Millisecond}, nil},
		{"egress above the operator's rate gets the rate", operatorTBF, kube(AnnotationKubeEgress, "20M"),
			Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 12500, TBFLatency: 25 * time.Millisecond, Notices: []string{
				`annotation kubernetes.io/egress-bandwidth="20M": 2500000 bytes/s (20Mbit) is above the operator's ceiling --qdisc-tbf-rate=1250000 bytes/s (10Mbit); the pod gets the ceiling (a bandwidth annotation is a limit, not a reservation)`}}, nil},
		{"ingress where the operator has none", nil, kube(AnnotationKubeIngress, "100M"),
			Config{QDisc: "fifo", IngressRate: 12_500_000, IngressBurst: 125_000, IngressLatency: 25 * time.Millisecond}, nil},
		{"both directions", operatorTBF, kube(AnnotationKubeIngress, "1M", AnnotationKubeEgress, "1M"),
			Config{QDisc: "tbf", TBFRate: 125_000, TBFBurst: 12500, TBFLatency: 25 * time.Millisecond, IngressRate: 125_000, IngressBurst: 65550, IngressLatency: 25 * time.Millisecond}, nil},
		{"ingress above the operator's gets the operator's", []string{"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=12500"}, kube(AnnotationKubeIngress, "20M"),
			Config{QDisc: "fifo", IngressRate: 1_250_000, IngressBurst: 12500, IngressLatency: 25 * time.Millisecond, Notices: []string{
				`annotation kubernetes.io/ingress-bandwidth="20M": 2500000 bytes/s (20Mbit) is above the operator's ceiling --qdisc-ingress-rate=1250000 bytes/s (10Mbit); the pod gets the ceiling (a bandwidth annotation is a limit, not a reservation)`}}, nil},
		{"a refused flag annotation keeps the notice out", operatorTBF, map[string]string{AnnotationKubeEgress: "20M", AnnotationPrefix + FlagTBFRate: "20mbit"}, Config{},
			[]string{AnnotationPrefix + FlagTBFRate, "exceeds the operator's ceiling --qdisc-tbf-rate=1250000 bytes/s (10Mbit)", "--allow-flag-override"}},
		{"not a quantity", nil, kube(AnnotationKubeIngress, "10mbit"), Config{},
			[]string{AnnotationKubeIngress, `"10mbit"`, "10M, 1G or 500k"}},
		{"zero", nil, kube(AnnotationKubeEgress, "0"), Config{}, []string{AnnotationKubeEgress, "out of range"}},
		{"above with override", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--allow-flag-override"}, kube(AnnotationKubeEgress, "20M"),
			Config{QDisc: "tbf", TBFRate: 2_500_000, TBFBurst: 65550, TBFLatency: 25 * time.Millisecond, AllowFlagOverride: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := annotate(t, tc.operator, tc.set, tc.says)
			if c == nil {
				return
			}
			if diff := cmp.Diff(tc.want, *c, ignoreOperator); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNewIngress: the factory wraps the link in a shaper whose ceiling the
// flags give (none: it passes packets up until one is set in place), and
// its errors name the flag to change.
func TestNewIngress(t *testing.T) {
	clock := faketime.NewManualClock()
	c, _ := parse(t)
	if e, err := c.NewIngress(qdisctest.NewLink(clock), clock); err != nil || e.String() != "none" || e.Lanes() != 0 {
		t.Errorf("no ingress flags: %v, %v; want an Endpoint with no ceiling", e, err)
	} else {
		e.Close()
	}
	c, _ = parse(t, "--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=12500", "--qdisc-ingress-latency=25ms")
	e, err := c.NewIngress(qdisctest.NewLink(clock), clock)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, want := e.String(), "tbf rate 10Mbit burst 12500b lat 25ms"; got != want || e.Lanes() != runtime.GOMAXPROCS(0) {
		t.Errorf("ingress %q with %d queues, want %q with GOMAXPROCS", got, e.Lanes(), want)
	}
	// What only the NIC can refuse, NewIngress refuses; the rest Validate
	// does, as the flags are parsed.
	for _, tc := range []struct {
		args    []string
		atParse bool
		flag    string
	}{
		{[]string{"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=1000"}, false, "--qdisc-ingress-burst: "},
		{[]string{"--qdisc-ingress-rate=100gbit", "--qdisc-ingress-burst=12500", "--qdisc-ingress-latency=1h"}, true, "--qdisc-ingress-latency: "},
	} {
		c, err := parse(t, tc.args...)
		if tc.atParse {
			if err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
				t.Errorf("%q: parse error %v, want one starting %q", tc.args, err, tc.flag)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if e, err := c.NewIngress(qdisctest.NewLink(clock), clock); err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
			if e != nil {
				e.Close()
			}
			t.Errorf("%q: error %v, want one starting %q", tc.args, err, tc.flag)
		}
	}
}

// annotate parses the operator's flags and applies the annotations. When
// says is non-nil it asserts that they are refused with an error saying
// each string and leave the Config as it was, and returns nil; otherwise it
// asserts that they are accepted and returns the Config.
func annotate(t *testing.T, operator []string, set map[string]string, says []string) *Config {
	t.Helper()
	c, err := parse(t, operator...)
	if err != nil {
		t.Fatal(err)
	}
	before := *c
	err = c.ApplyAnnotations(set)
	if says == nil {
		if err != nil {
			t.Fatalf("ApplyAnnotations(%v): %v", set, err)
		}
		return c
	}
	if err == nil {
		t.Fatalf("ApplyAnnotations(%v) accepted: %+v; want an error", set, *c)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if diff := cmp.Diff(before, *c, cmp.AllowUnexported(Config{})); diff != "" {
		t.Errorf("a refused set changed the Config (-before +after):\n%s", diff)
	}
	return nil
}
