package runscflags

import (
	stdcmp "cmp"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// maxBurst is the largest burst (and mtu) randomOperator gives.
const maxBurst = 1514 + 1<<20

// randomOperator returns flags for a valid operator configuration without
// --allow-flag-override.
func randomOperator(rng *rand.Rand) []string {
	var args []string
	q := []string{"none", "fifo", "tbf", "fq_codel"}[rng.Intn(4)]
	args = append(args, "--qdisc="+q)
	rateV := uint64(0)
	if q == "tbf" || rng.Intn(2) == 0 {
		rateV = uint64(1+rng.Intn(1000)) * 125_000
		args = append(args, fmt.Sprintf("--qdisc-tbf-rate=%d", rateV))
	}
	if q == "tbf" || rng.Intn(2) == 0 {
		args = append(args, fmt.Sprintf("--qdisc-tbf-burst=%d", 1514+rng.Intn(1<<20)))
	}
	if rng.Intn(3) == 0 {
		args = append(args, fmt.Sprintf("--qdisc-tbf-peakrate=%d", rateV+uint64(1+rng.Intn(1<<30))), fmt.Sprintf("--qdisc-tbf-mtu=%d", 1514+rng.Intn(9000)))
	}
	switch rng.Intn(4) {
	case 0:
		args = append(args, fmt.Sprintf("--qdisc-tbf-limit=%d", maxBurst+rng.Intn(1<<22))) // a limit holds a burst
	case 1:
		args = append(args, fmt.Sprintf("--qdisc-tbf-latency=%dms", 1+rng.Intn(1000)))
	case 2:
		args = append(args, "--qdisc-tbf-child=fq_codel")
	}
	if rng.Intn(2) == 0 {
		args = append(args, fmt.Sprintf("--qdisc-fq-codel-limit=%d", 1+rng.Intn(20000)), fmt.Sprintf("--qdisc-fq-codel-target=%dms", 1+rng.Intn(10)))
	}
	if rng.Intn(3) == 0 {
		args = append(args, fmt.Sprintf("--qdisc-tbf-pkt-rate=%d", 1+rng.Intn(1_000_000)), fmt.Sprintf("--qdisc-tbf-pkt-burst=%d", 1+rng.Intn(1000)))
	}
	if rng.Intn(3) == 0 {
		args = append(args, fmt.Sprintf("--qdisc-ingress-pkt-rate=%d", 1+rng.Intn(1_000_000)), fmt.Sprintf("--qdisc-ingress-pkt-burst=%d", 1+rng.Intn(1000)))
	}
	if rng.Intn(2) == 0 {
		args = append(args, fmt.Sprintf("--qdisc-ingress-rate=%d", uint64(1+rng.Intn(1000))*125_000), fmt.Sprintf("--qdisc-ingress-burst=%d", 1514+rng.Intn(1<<20)))
		switch rng.Intn(3) {
		case 0:
			args = append(args, fmt.Sprintf("--qdisc-ingress-limit=%d", maxBurst+rng.Intn(1<<22)))
		case 1:
			args = append(args, fmt.Sprintf("--qdisc-ingress-latency=%dms", 1+rng.Intn(1000)))
		}
	}
	return args
}

// randomKube is a Kubernetes bandwidth near ceiling (bytes/s): below,
// equal, above, or not a quantity.
func randomKube(rng *rand.Rand, ceiling uint64) string {
	if ceiling == 0 {
		ceiling = uint64(1+rng.Intn(1000)) * 125_000
	}
	switch rng.Intn(5) {
	case 0:
		return "garbage"
	case 1:
		return fmt.Sprint(ceiling * 8)
	case 2:
		return fmt.Sprintf("%dk", ceiling*8/1000+1)
	default:
		return fmt.Sprint(1000 + rng.Uint64()%(ceiling*8))
	}
}

// randomValue is a value near ceiling: below, equal, above, zero, or text
// that is not a number, in bare numbers and in tc's units.
func randomValue(rng *rand.Rand, ceiling uint64, isRate bool) string {
	if ceiling == 0 {
		ceiling = uint64(1 + rng.Intn(1<<24))
	}
	switch rng.Intn(9) {
	case 0:
		return "0"
	case 1:
		return "garbage"
	case 2:
		return fmt.Sprint(ceiling)
	case 3:
		return fmt.Sprint(ceiling + 1)
	case 4:
		if isRate {
			return fmt.Sprintf("%dbit", ceiling*8+8)
		}
		return fmt.Sprintf("%dkb", ceiling/1024+1)
	case 5:
		if isRate {
			return fmt.Sprintf("%dbit", (ceiling/2+1)*8)
		}
		return fmt.Sprintf("%db", ceiling/2+1)
	default:
		return fmt.Sprint(1 + rng.Uint64()%ceiling)
	}
}

func randomAnnotations(rng *rand.Rand, op *Config) map[string]string {
	m := map[string]string{}
	for _, key := range []string{AnnotationKubeEgress, AnnotationKubeIngress} {
		if rng.Intn(6) == 0 {
			ceiling := op.TBFRate
			if key == AnnotationKubeIngress {
				ceiling = op.IngressRate
			}
			m[key] = randomKube(rng, ceiling)
		}
	}
	for _, name := range []string{FlagQDisc, FlagTBFRate, FlagTBFBurst, FlagTBFPeakRate, FlagTBFMTU, FlagTBFLimit, FlagTBFLatency,
		FlagIngressRate, FlagIngressBurst, FlagIngressLimit, FlagIngressLatency, FlagAllowFlagOverride, "debug",
		FlagTBFChild, FlagFQCoDelLimit, FlagFQCoDelTarget, FlagFQCoDelInterval, FlagFQCoDelMemLimit, FlagFQCoDelFlows} {
		if rng.Intn(6) != 0 || (name == FlagAllowFlagOverride || name == FlagFQCoDelFlows) && rng.Intn(2) == 0 {
			continue // the two always refused at half the others' rate
		}
		var v string
		switch name {
		case FlagQDisc:
			v = []string{"none", "fifo", "tbf", "tbf", "tbf", "red", "fq_codel", "fq_codel"}[rng.Intn(8)]
		case FlagTBFChild:
			v = []string{"fifo", "fq_codel", "fq_codel", "sfq"}[rng.Intn(4)]
		case FlagFQCoDelFlows:
			v = fmt.Sprint(1 + rng.Intn(4096))
		case FlagFQCoDelLimit, FlagFQCoDelMemLimit:
			c := *fqCeilings[name].field(op)
			if c == 0 {
				c = fqCeilings[name].def
			}
			v = []string{fmt.Sprint(c / 2), fmt.Sprint(c), fmt.Sprint(c + 1), "0", "x"}[rng.Intn(5)]
		case FlagFQCoDelTarget, FlagFQCoDelInterval:
			c := time.Duration(fqCeilings[name].def)
			if d := *fqCeilings[name].dur(op); d != 0 {
				c = d
			}
			v = []string{(c / 2).String(), c.String(), (c + time.Millisecond).String(), "0s", "x"}[rng.Intn(5)]
		case FlagTBFLatency, FlagIngressLatency:
			c := *durationKnobs[name](op)
			if c == 0 {
				c = 100 * time.Millisecond
			}
			v = []string{(c / 2).String(), c.String(), (c + time.Millisecond).String(), "0s", "x"}[rng.Intn(5)]
		case FlagAllowFlagOverride:
			v = "true"
		case "debug":
			v = "true"
		default:
			k := ceilingKnobs[name]
			v = randomValue(rng, *k.field(op), name == FlagTBFRate || name == FlagTBFPeakRate || name == FlagIngressRate)
		}
		m[AnnotationPrefix+name] = v
	}
	// A pod's ceiling shapes only a tbf (unappliedCeiling): on an
	// operator's other qdisc, a set that gives one and no qdisc selects
	// tbf too, with the rate and burst a tbf needs where neither the set
	// nor the operator gives them (one that selects another is refused).
	if _, ok := m[AnnotationPrefix+FlagQDisc]; !ok && !op.QDisc.Is(tbf.Kind) {
		for _, f := range ceilingFlags(EgressCeiling) {
			if _, ok := m[AnnotationPrefix+f.Name]; !ok {
				continue
			}
			m[AnnotationPrefix+FlagQDisc] = "tbf"
			if _, ok := m[AnnotationPrefix+FlagTBFRate]; !ok && op.TBFRate == 0 {
				m[AnnotationPrefix+FlagTBFRate] = "10mbit"
			}
			if _, ok := m[AnnotationPrefix+FlagTBFBurst]; !ok && op.TBFBurst == 0 {
				m[AnnotationPrefix+FlagTBFBurst] = "12500"
			}
			break
		}
	}
	return m
}

// TestPolicyProperty: for thousands of random operator configurations and
// annotation sets, an accepted set never raises a ceiling, never unsets
// one, never leaves tbf, never sets override; a refused set changes
// nothing; and every order of the same set gives the same outcome. 5000
// sets in the long run (qdisctest.Long), the first 800 of them by
// default; either way at least a tenth of them accepted and a tenth
// refused.
func TestPolicyProperty(t *testing.T) {
	t.Parallel() // long under -race; shares nothing with the package's other tests
	rng := rand.New(rand.NewSource(42))
	sets := 800
	if qdisctest.Long() {
		sets = 5000
	}
	accepted, refused := 0, 0
	for i := 0; i < sets; i++ {
		args := randomOperator(rng)
		c, err := parse(t, args...)
		if err != nil {
			t.Fatalf("operator %q: %v", args, err)
		}
		op := c.snapshot()
		set := randomAnnotations(rng, op)

		var first *Config
		var firstErr string
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		for perm := 0; perm < 4; perm++ {
			rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			m := make(map[string]string, len(keys))
			for _, k := range keys {
				m[k] = set[k]
			}
			cc, _ := parse(t, args...)
			err := cc.ApplyAnnotations(m)
			es := ""
			if err != nil {
				es = err.Error()
			}
			if perm == 0 {
				first, firstErr = cc, es
			} else if es != firstErr || !cmp.Equal(first, cc, cmp.AllowUnexported(Config{})) {
				t.Fatalf("operator %q, annotations %v: order changed the outcome: %q %+v vs %q %+v", args, set, firstErr, *first, es, *cc)
			}
		}
		got := first
		if firstErr != "" {
			refused++
			if !cmp.Equal(*got.snapshot(), *op, ignoreOperator) {
				t.Fatalf("operator %q, annotations %v refused (%s) but the Config changed: %+v", args, set, firstErr, *got)
			}
			named := false
			for k := range set {
				named = named || strings.HasPrefix(firstErr, "annotation "+k+"=") || strings.Contains(firstErr, k)
			}
			if !named {
				t.Fatalf("refusal %q does not name an annotation of %v", firstErr, set)
			}
			continue
		}
		accepted++
		if got.AllowFlagOverride {
			t.Fatalf("annotations %v set allow-flag-override", set)
		}
		if op.QDisc == "tbf" && got.QDisc != "tbf" {
			t.Fatalf("operator %q, annotations %v: left tbf for %v", args, set, got.QDisc)
		}
		if _, ok := set[AnnotationPrefix+FlagQDisc]; ok && got.QDisc != "tbf" && !(got.QDisc == "fq_codel" && (op.QDisc == "fifo" || op.QDisc == QDiscNone || op.QDisc == "fq_codel")) {
			t.Fatalf("operator %q, annotations %v selected %v", args, set, got.QDisc)
		}
		if op.QDisc == "fq_codel" && got.QDisc != "fq_codel" && got.QDisc != "tbf" {
			t.Fatalf("operator %q, annotations %v: left fq_codel for %v", args, set, got.QDisc)
		}
		if op.TBFChild == ChildFQCoDel && got.TBFChild != ChildFQCoDel {
			t.Fatalf("operator %q, annotations %v: dropped the fq_codel child", args, set)
		}
		for name, k := range fqCeilings {
			var v, ceiling uint64
			if k.dur != nil {
				v, ceiling = uint64(*k.dur(got)), uint64(*k.dur(op))
			} else {
				v, ceiling = *k.field(got), *k.field(op)
			}
			v, ceiling = stdcmp.Or(v, k.def), stdcmp.Or(ceiling, k.def)
			if v > ceiling {
				t.Fatalf("operator %q, annotations %v: --%s went from %d to %d", args, set, name, ceiling, v)
			}
		}
		if got.FQFlows != op.FQFlows {
			t.Fatalf("operator %q, annotations %v: flows changed without override", args, set)
		}
		if _, ok := set[AnnotationKubeEgress]; ok && got.QDisc != "tbf" {
			t.Fatalf("annotations %v: egress bandwidth without tbf", set)
		}
		if _, ok := set[AnnotationKubeIngress]; ok && got.IngressRate == 0 {
			t.Fatalf("annotations %v: ingress bandwidth without an ingress shaper", set)
		}
		for name, k := range ceilingKnobs {
			if ceiling, v := *k.field(op), *k.field(got); ceiling != 0 && (v > ceiling || v == 0) {
				t.Fatalf("operator %q, annotations %v: --%s went from %d to %d", args, set, name, ceiling, v)
			}
		}
		// A bandwidth above the ceiling gets the ceiling, and a notice.
		for key, ceiling := range map[string]uint64{AnnotationKubeEgress: op.TBFRate, AnnotationKubeIngress: op.IngressRate} {
			v, ok := set[key]
			if !ok {
				continue
			}
			r, _ := ParseKubeBandwidth(v)
			noticed := slices.ContainsFunc(got.Notices, func(n string) bool { return strings.HasPrefix(n, "annotation "+key+"=") })
			if above := ceiling != 0 && r > ceiling; noticed != above {
				t.Fatalf("operator %q, annotations %v: %s above the ceiling %v, notices %q", args, set, key, above, got.Notices)
			}
		}
		for name, field := range durationKnobs {
			if ceiling, v := *field(op), *field(got); ceiling != 0 && v > ceiling {
				t.Fatalf("operator %q, annotations %v: --%s went from %v to %v", args, set, name, ceiling, v)
			}
		}
		// A latency bound may become a limit no larger than what it held
		// (a Kubernetes annotation under an operator's limit), never go.
		if op.TBFLatency != 0 && got.TBFLatency == 0 && got.TBFLimit == 0 {
			t.Fatalf("operator %q, annotations %v: latency unset", args, set)
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("accepted annotations %v give an invalid Config: %v", set, err)
		}
		// What the boot process is started with gives it the same Config.
		boot, err := parse(t, got.Args()...)
		if err != nil {
			t.Fatalf("operator %q, annotations %v: Args %q do not parse: %v", args, set, got.Args(), err)
		}
		if diff := cmp.Diff(got, boot, ignoreOperator, cmpopts.IgnoreFields(Config{}, "AllowFlagOverride", "Notices")); diff != "" {
			t.Fatalf("operator %q, annotations %v: Args %q give another Config (-want +got):\n%s", args, set, got.Args(), diff)
		}
	}
	t.Logf("%d sets accepted, %d refused", accepted, refused)
	if accepted < sets/10 || refused < sets/10 {
		t.Errorf("%d accepted, %d refused: the generator does not exercise both outcomes", accepted, refused)
	}
}

// FuzzApplyAnnotations: no annotation value makes ApplyAnnotations panic,
// loosen the operator's tbf, or change the Config when it refuses.
func FuzzApplyAnnotations(f *testing.F) {
	for _, s := range [][7]string{
		{"tbf", "5mbit", "3028", "", "", "", "20ms"},
		{"fifo", "20mbit", "", "", "", "", ""},
		{"", "0", "0", "0", "0", "0", "0s"},
		{"tbf", "1250000", "12500", "100mbit", "1514", "", ""},
		{"", "", "", "", "", "10kb", ""},
		{"none", "-1", "1e6", "18446744073709551616", "4gb", "99999999999999999999", "-5ms"},
		{"tbf", "1.5mbit", "1.5kb", "1.5gbit", "1.5k", "1.5mb", "1.5ms"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6])
	}
	f.Fuzz(func(t *testing.T, qdisc, rateV, burst, peak, mtu, limit, latency string) {
		c, err := parse(t, "--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-peakrate=100mbit", "--qdisc-tbf-mtu=9000", "--qdisc-tbf-latency=50ms")
		if err != nil {
			t.Fatal(err)
		}
		op := c.snapshot()
		m := map[string]string{}
		for name, v := range map[string]string{FlagQDisc: qdisc, FlagTBFRate: rateV, FlagTBFBurst: burst, FlagTBFPeakRate: peak, FlagTBFMTU: mtu, FlagTBFLimit: limit, FlagTBFLatency: latency} {
			if v != "" {
				m[AnnotationPrefix+name] = v
			}
		}
		if err := c.ApplyAnnotations(m); err != nil {
			if !cmp.Equal(*c.snapshot(), *op, ignoreOperator) {
				t.Fatalf("refused (%v) but changed the Config", err)
			}
			return
		}
		if c.QDisc != "tbf" || c.TBFRate > op.TBFRate || c.TBFBurst > op.TBFBurst || c.TBFPeakRate > op.TBFPeakRate ||
			c.TBFMTU > op.TBFMTU || c.TBFLatency > op.TBFLatency || c.TBFRate == 0 || c.TBFBurst == 0 {
			t.Fatalf("annotations %v loosened %+v to %+v", m, *op, *c)
		}
	})
}

// TestDefaultQueue: where the operator leaves a direction's tbf limit and
// latency unset, its queue is the default, 1000 full-size packets
// (DefaultQueueBytes), and an annotation may shorten it, never lengthen
// it: a limit no larger, a latency whose limit at the resulting rate and
// burst is no larger. An operator's own limit or latency is the ceiling
// instead; --allow-flag-override lifts it.
func TestDefaultQueue(t *testing.T) {
	shaped := []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"}
	ingress := []string{"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=12500"}
	for _, tc := range []struct {
		name        string
		operator    []string
		annotations map[string]string
		says        []string // the refusal; nil: taken
	}{
		{"a limit of the default", shaped, a(FlagTBFLimit, "1514000"), nil},
		{"a shorter limit", shaped, a(FlagTBFLimit, "100000"), nil},
		{"a limit past the default", shaped, a(FlagTBFLimit, "1514001"),
			[]string{"annotations dev.gvisor.flag.qdisc-tbf-limit: ", "--qdisc-tbf-limit=1514001 bytes exceeds", "unset --qdisc-tbf-limit and --qdisc-tbf-latency", "1000 full-size packets", "--allow-flag-override"}},
		{"a short latency", shaped, a(FlagTBFLatency, "50ms"), nil},
		{"a latency past the default queue", shaped, a(FlagTBFLatency, "2s"),
			[]string{"--qdisc-tbf-latency=2s at --qdisc-tbf-rate=1250000 bytes/s (10Mbit)", "queues up to 2512500 bytes", "give --qdisc-tbf-latency=1.2012s or less", "--qdisc-tbf-limit=1514000 or less"}},
		{"a long latency at a rate the set lowers", shaped, a(FlagTBFLatency, "2s", FlagTBFRate, "1mbit"), nil},
		{"a long latency in tbf's words", shaped, a("qdisc-tbf", "rate 10mbit burst 12500 latency 2s"), []string{"--qdisc-tbf-latency=2s"}},
		{"the receive path's limit", append(slices.Clone(shaped), ingress...), a(FlagIngressLimit, "2000000"),
			[]string{"--qdisc-ingress-limit=2000000 bytes exceeds", "unset --qdisc-ingress-limit and --qdisc-ingress-latency"}},
		{"the receive path's latency", append(slices.Clone(shaped), ingress...), a(FlagIngressLatency, "10ms"), nil},
		{"under the operator's limit", append(slices.Clone(shaped), "--qdisc-tbf-limit=3000000"), a(FlagTBFLimit, "2000000"), nil},
		{"past the operator's limit", append(slices.Clone(shaped), "--qdisc-tbf-limit=3000000"), a(FlagTBFLimit, "4000000"),
			[]string{"exceeds the operator's ceiling --qdisc-tbf-limit=3000000"}},
		{"under the operator's latency", append(slices.Clone(shaped), "--qdisc-tbf-latency=5s"), a(FlagTBFLatency, "2s"), nil},
		{"with --allow-flag-override", append(slices.Clone(shaped), "--allow-flag-override"), a(FlagTBFLimit, "100000000"), nil},
		{"a Kubernetes bandwidth's latency", shaped, map[string]string{AnnotationKubeEgress: "5M"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.operator...)
			if err != nil {
				t.Fatal(err)
			}
			before := c.String()
			err = c.ApplyAnnotations(tc.annotations)
			if tc.says == nil {
				if err != nil {
					t.Errorf("ApplyAnnotations(%v): %v; want nil", tc.annotations, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ApplyAnnotations(%v) took %v; want an error saying %q", tc.annotations, c, tc.says)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if after := c.String(); after != before {
				t.Errorf("a refused set changed the Config from %q to %q", before, after)
			}
		})
	}
}
