package runscflags

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSetGet(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		get         string // what Get gives after Set
		says        string // non-empty: Set fails with an error saying this
	}{
		{FlagQDisc, "tbf", "tbf", ""},
		{FlagQDisc, "red", "", `invalid value "red" for --qdisc`},
		{FlagTBFRate, "10mbit", "1250000", ""},
		{FlagTBFRate, "10mbits", "", "unknown unit"},
		{FlagTBFBurst, "12.5kb", "12800", ""},
		{FlagTBFLatency, "1.5ms", "1.5ms", ""},
		{FlagTBFLatency, "soon", "", "--qdisc-tbf-latency"},
		{FlagIngressLimit, "1mb", "1048576", ""},
		{FlagTBFChild, "fq_codel", "fq_codel", ""},
		{FlagTBFChild, "fifo", "fifo", ""},
		{FlagTBFChild, "sfq", "", "fifo, fq, fq_codel or netem"},
		{FlagFQCoDelFlows, "256", "256", ""},
		{FlagFQCoDelFlows, "10k", "", "--qdisc-fq-codel-flows"},
		{FlagFQCoDelMemLimit, "4mb", "4194304", ""},
		{FlagFQCoDelECN, "false", "false", ""},
		{FlagAllowFlagOverride, "true", "true", ""},
		{"debug", "true", "", "unknown flag --debug"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			c := defaults()
			before := *c
			err := c.Set(tc.name, tc.value)
			if tc.says != "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("Set: %v; want an error saying %q", err, tc.says)
				}
				if diff := cmp.Diff(before, *c, cmp.AllowUnexported(Config{})); diff != "" {
					t.Errorf("a refused Set changed the Config (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Get(tc.name); got != tc.get {
				t.Errorf("Get = %q, want %q", got, tc.get)
			}
		})
	}
	if got := defaults().Get("debug"); got != "" {
		t.Errorf(`Get("debug") = %q, want ""`, got)
	}
	if c := defaults(); c.Get(FlagFQCoDelECN) != "true" || c.FQNoECN {
		t.Errorf("ecn: Get %q, FQNoECN %v; want true, false", c.Get(FlagFQCoDelECN), c.FQNoECN)
	}
}

// roundTripBase is a valid Config on which each flag's sample is valid.
var roundTripBase = []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-peakrate=100mbit", "--qdisc-tbf-mtu=1514",
	"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=12500", "--qdisc-tbf-pkt-rate=10000", "--qdisc-tbf-pkt-burst=16",
	"--qdisc-ingress-pkt-rate=10000", "--qdisc-ingress-pkt-burst=16"}

// roundTripSamples is a value for every flag that differs from
// roundTripBase's and keeps it valid.
var roundTripSamples = map[string]string{
	FlagQDisc: "fq_codel", FlagTBFRate: "5mbit", FlagTBFBurst: "64kb", FlagTBFPeakRate: "1gbit", FlagTBFMTU: "9000",
	FlagTBFLimit: "1mb", FlagTBFLatency: "20ms", FlagIngressRate: "20mbit", FlagIngressBurst: "3028",
	FlagIngressLimit: "1mb", FlagIngressLatency: "25ms", FlagTBFChild: "fq_codel", FlagFQCoDelLimit: "1000",
	FlagFQCoDelFlows: "256", FlagFQCoDelQuantum: "300", FlagFQCoDelMemLimit: "4mb", FlagFQCoDelDropBatch: "16",
	FlagFQCoDelTarget: "2ms", FlagFQCoDelInterval: "50ms", FlagFQCoDelECN: "false", FlagFQCoDelCEThreshold: "1ms", FlagAllowFlagOverride: "true",
	FlagTBFPacketRate: "20kpps", FlagTBFPacketBurst: "32", FlagTBFOverhead: "24", FlagTBFMPU: "84", FlagTBFLinkLayer: "atm", FlagIngressPacketRate: "1.5mpps", FlagIngressPacketBurst: "8",
	FlagHTB: htbSample, FlagIngressHTB: htbSample, FlagCake: cakeSample, FlagIngressCake: cakeSample,
	FlagCakeBandwidth: "50mbit", FlagCakeIsolation: "dual-srchost", FlagCakeDiffserv: "besteffort", FlagCakeAckFilter: "ack-filter-aggressive",
	FlagCakeRTT: "50ms", FlagCakeOverhead: "overhead 38 mpu 84", FlagCakeMemlimit: "16mb", FlagCakeWash: "true", FlagCakeSplitGSO: "false",
	FlagIngressQDisc: "tbf",
	FlagNode:         nodeSample, FlagNodeParent: "1:10", FlagNodeRate: "10mbit", FlagNodeCeil: "100mbit", FlagNodePrio: "1",
	FlagIngressNode: nodeSample, FlagIngressNodeParent: "1:10", FlagIngressNodeRate: "10mbit", FlagIngressNodeCeil: "100mbit", FlagIngressNodePrio: "1",
}

// nodeSample is a node's tree file; Validate does not read it.
const nodeSample = "/run/netqdisc/node.htb"

// cakeSample is cake for a server: 100 Mbit/s, fair between its clients.
const cakeSample = "bandwidth 100mbit diffserv4 dual-dsthost ack-filter"

// htbSample is a two-class htb script: the cluster unshaped, the rest 10
// Mbit/s.
const htbSample = "qdisc default 20; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:10 rate 990mbit ceil 1gbit; " +
	"class parent 1:1 classid 1:20 rate 10mbit; filter dst 10.0.0.0/8 classid 1:10"

// sampleBase is what a flag's sample needs of roundTripBase changed: htb
// as the qdisc, or no ingress tbf beside ingress classes.
var sampleBase = map[string][]string{
	FlagHTB:           {FlagQDisc, "htb"},
	FlagIngressHTB:    {FlagIngressRate, "0", FlagIngressBurst, "0", FlagIngressPacketRate, "0", FlagIngressPacketBurst, "0"},
	FlagCake:          {FlagQDisc, "cake"},
	FlagCakeBandwidth: {FlagQDisc, "cake"}, FlagCakeIsolation: {FlagQDisc, "cake"}, FlagCakeDiffserv: {FlagQDisc, "cake"},
	FlagCakeAckFilter: {FlagQDisc, "cake"}, FlagCakeRTT: {FlagQDisc, "cake"}, FlagCakeOverhead: {FlagQDisc, "cake"},
	FlagCakeMemlimit: {FlagQDisc, "cake"}, FlagCakeWash: {FlagQDisc, "cake"}, FlagCakeSplitGSO: {FlagQDisc, "cake"},
	FlagIngressCake: {FlagIngressRate, "0", FlagIngressBurst, "0", FlagIngressPacketRate, "0", FlagIngressPacketBurst, "0"},
	FlagNode:        {FlagNodeRate, "10mbit"}, FlagNodeRate: {FlagNode, nodeSample},
	FlagNodeParent: {FlagNode, nodeSample, FlagNodeRate, "10mbit"}, FlagNodeCeil: {FlagNode, nodeSample, FlagNodeRate, "10mbit"},
	FlagNodePrio:    {FlagNode, nodeSample, FlagNodeRate, "10mbit"},
	FlagIngressNode: {FlagIngressNodeRate, "10mbit"}, FlagIngressNodeRate: {FlagIngressNode, nodeSample},
	FlagIngressNodeParent: {FlagIngressNode, nodeSample, FlagIngressNodeRate, "10mbit"}, FlagIngressNodeCeil: {FlagIngressNode, nodeSample, FlagIngressNodeRate, "10mbit"},
	FlagIngressNodePrio: {FlagIngressNode, nodeSample, FlagIngressNodeRate, "10mbit"},
}

// TestRoundTrip: for every flag of the table, Set(Get()) changes nothing,
// and Args parse back, by NewFromFlags, as the same Config.
func TestRoundTrip(t *testing.T) {
	for _, f := range Flags {
		t.Run(f.Name, func(t *testing.T) {
			sample, ok := roundTripSamples[f.Name]
			if !ok {
				t.Fatalf("no sample value for --%s", f.Name)
			}
			c, err := parse(t, roundTripBase...)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Set(f.Name, sample); err != nil {
				t.Fatal(err)
			}
			for kv := sampleBase[f.Name]; len(kv) > 0; kv = kv[2:] {
				if err := c.Set(kv[0], kv[1]); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("sample %q: %v", sample, err)
			}
			if got := c.Get(f.Name); got == f.Default {
				t.Errorf("sample %q is the default %q", sample, got)
			}
			before := *c
			for _, g := range Flags {
				if err := c.Set(g.Name, c.Get(g.Name)); err != nil {
					t.Errorf("Set(%q, Get()=%q): %v", g.Name, c.Get(g.Name), err)
				}
			}
			if diff := cmp.Diff(before, *c, cmp.AllowUnexported(Config{})); diff != "" {
				t.Errorf("Set(Get()) changed the Config (-before +after):\n%s", diff)
			}
			back, err := parse(t, c.Args()...)
			if err != nil {
				t.Fatalf("Args %q: %v", c.Args(), err)
			}
			if diff := cmp.Diff(c, back, ignoreOperator, cmpopts.IgnoreFields(Config{}, "AllowFlagOverride")); diff != "" {
				t.Errorf("Args %q parse back as another Config (-want +got):\n%s", c.Args(), diff)
			}
			if want := f.runtime || f.Default == c.Get(f.Name); want == strings.Contains(strings.Join(c.Args(), " "), "--"+f.Name+"=") {
				t.Errorf("Args %q: --%s there: %v", c.Args(), f.Name, !want)
			}
		})
	}
}

// TestAnnotationAlone: one annotation, as ApplyAnnotations applies it to
// the operator's Config: the per-flag policy's refusals name the
// annotation, the ceiling and what lifts it, and leave the Config as it
// was; what the policy takes may still leave the whole invalid, which
// Validate says (invalid); a flag that is not ours is the runtime's.
func TestAnnotationAlone(t *testing.T) {
	operatorTBF := []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-latency=50ms"}
	override := append([]string{"--allow-flag-override"}, operatorTBF...)
	for _, tc := range []struct {
		operator    []string
		name, value string
		says        []string // nil: accepted
		invalid     bool     // the policy takes it; the result is not valid
	}{
		{operatorTBF, FlagTBFRate, "5mbit", nil, false},
		{operatorTBF, FlagTBFRate, "20mbit", []string{"annotation dev.gvisor.flag.qdisc-tbf-rate=\"20mbit\": ", "exceeds the operator's ceiling --qdisc-tbf-rate=1250000 bytes/s (10Mbit)", "--allow-flag-override"}, false},
		{operatorTBF, FlagTBFRate, "0", []string{"0 would unset"}, false},
		{operatorTBF, FlagTBFRate, "fast", []string{`"fast"`}, false},
		{operatorTBF, FlagTBFLatency, "0s", []string{"positive duration such as 50ms"}, false},
		{operatorTBF, FlagTBFLatency, "1s", []string{"--qdisc-tbf-latency=50ms"}, false},
		{operatorTBF, FlagTBFPeakRate, "100mbit", []string{"mtu"}, true}, // no ceiling; the MTU it needs is Validate's
		{operatorTBF, FlagQDisc, "fifo", []string{"only tbf", "qdisc=fifo over the operator's tbf"}, false},
		{operatorTBF, FlagQDisc, "fq_codel", []string{"--allow-flag-override"}, false},
		{nil, FlagQDisc, "fq_codel", nil, false},
		{nil, FlagQDisc, "tbf", []string{"--qdisc-tbf-rate"}, true},                    // the rate and burst it needs are Validate's
		{operatorTBF, FlagTBFChild, "fq_codel", []string{"--qdisc-tbf-latency"}, true}, // the latency it excludes is Validate's
		{[]string{"--qdisc-tbf-child=fq_codel"}, FlagTBFChild, "fifo", []string{"--allow-flag-override"}, false},
		{nil, FlagFQCoDelTarget, "50ms", []string{"--qdisc-fq-codel-target=5ms", "Linux's default"}, false},
		{nil, FlagFQCoDelTarget, "1ms", nil, false},
		{nil, FlagFQCoDelLimit, "0", []string{"non-zero"}, false},
		{nil, FlagFQCoDelFlows, "16", []string{"bounds nothing"}, false},
		{override, FlagFQCoDelFlows, "16", nil, false},
		{override, FlagTBFRate, "1gbit", nil, false},
		{override, FlagFQCoDelFlows, "x", []string{`"x"`}, false},
		{override, FlagAllowFlagOverride, "false", []string{"cannot be set"}, false},
		{nil, "debug", "true", nil, false}, // the runtime's: left to it
	} {
		t.Run(fmt.Sprintf("%q/%s=%s", tc.operator, tc.name, tc.value), func(t *testing.T) {
			c, err := parse(t, tc.operator...)
			if err != nil {
				t.Fatal(err)
			}
			before := c.String()
			err = c.ApplyAnnotations(a(tc.name, tc.value))
			if tc.says == nil {
				if err != nil {
					t.Errorf("ApplyAnnotations: %v; want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ApplyAnnotations accepted; want an error saying %q", tc.says)
			}
			if after := c.String(); after != before {
				t.Errorf("a refused annotation changed the Config from %q to %q", before, after)
			}
			if got := strings.Contains(err.Error(), " give an invalid configuration: "); got != tc.invalid {
				t.Errorf("error %q: refused by Validate %v, want %v", err, got, tc.invalid)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// annotationValues are values to try for f over op: around op's value (or
// its ceiling), zero, the sample, and text that is not a value.
func annotationValues(f *Flag, op *Config) []string {
	vs := []string{"", "garbage", roundTripSamples[f.Name]}
	switch f.Kind {
	case KindQDisc:
		vs = append(vs, qdiscChoices()...)
	case KindChild:
		vs = append(vs, "fifo", ChildFQCoDel)
	case KindName:
		vs = append(vs, "tbf", "fifo", "fq_codel", "none")
	case KindBool:
		vs = append(vs, "true", "false")
	case KindHTB:
		vs = append(vs, "class classid 1:20 rate 5mbit", "class classid 1:20 rate 20mbit", "class classid 1:30 parent 1:1 rate 1mbit")
	case KindCake:
		vs = append(vs, "bandwidth 50mbit", "bandwidth 200mbit", "unlimited", "bandwidth 50mbit flows besteffort")
	case KindCakeKnob:
		vs = append(vs, f.Example, "50mbit", "200mbit", "unlimited", "flows", "diffserv8", "no-ack-filter", "lan", "ethernet", "1mb", "false")
	default:
		n := f.number(op)
		if n == 0 {
			n = max(f.Annotation.Default, 1<<20)
		}
		for _, m := range []uint64{0, n / 2, n, n + 1, 2 * n} {
			if f.Kind == KindDuration {
				vs = append(vs, time.Duration(m).String(), "-"+time.Duration(m).String())
			} else {
				vs = append(vs, strconv.FormatUint(m, 10))
			}
		}
	}
	return vs
}
