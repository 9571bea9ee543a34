package runscflags

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestFieldAccessors: each row's field is a field of Config of the type
// its Kind holds, no two rows share one, and every exported Config field
// but Notices and Words (the registered kinds' words flags, whose rows
// kindFlags makes: TestKindFlags) is a row's.
func TestFieldAccessors(t *testing.T) {
	want := map[Kind]reflect.Type{
		KindQDisc: reflect.TypeFor[*QueueingDiscipline](), KindChild: reflect.TypeFor[*string](),
		KindRate: reflect.TypeFor[*uint64](), KindSize: reflect.TypeFor[*uint64](), KindCount: reflect.TypeFor[*uint64](),
		KindPacketRate: reflect.TypeFor[*uint64](), KindDuration: reflect.TypeFor[*time.Duration](), KindBool: reflect.TypeFor[*bool](),
		KindHTB: reflect.TypeFor[*string](), KindCake: reflect.TypeFor[*string](), KindCakeKnob: reflect.TypeFor[*string](),
		KindName: reflect.TypeFor[*string](), KindText: reflect.TypeFor[*string](), KindLinkLayer: reflect.TypeFor[*string](),
	}
	var c Config
	base := reflect.ValueOf(&c).Elem()
	byAddr := map[uintptr]string{} // field address -> its name
	for i := 0; i < base.NumField(); i++ {
		byAddr[base.Field(i).Addr().Pointer()] = base.Type().Field(i).Name
	}
	rowOf := map[string]string{} // field name -> the row's flag
	for i := range Flags {
		f := &Flags[i]
		p := reflect.ValueOf(f.field(&c))
		if p.Type() != want[f.Kind] {
			t.Errorf("--%s: its field is a %v; its kind holds a %v", f.Name, p.Type(), want[f.Kind])
			continue
		}
		name, ok := byAddr[p.Pointer()]
		if !ok {
			t.Errorf("--%s: its field is not a field of the Config given", f.Name)
			continue
		}
		if other, ok := rowOf[name]; ok {
			t.Errorf("--%s and --%s both set Config.%s", other, f.Name, name)
		}
		rowOf[name] = f.Name
	}
	for i := 0; i < base.NumField(); i++ {
		sf := base.Type().Field(i)
		if _, ok := rowOf[sf.Name]; !ok && sf.IsExported() && sf.Name != "Notices" && sf.Name != "Words" {
			t.Errorf("Config.%s is no flag's field", sf.Name)
		}
	}
}

// TestCeilingRows: a ceiling's rows are each a tbf.Config setting, once,
// of the field type that setting takes, and each direction has both its
// rates.
func TestCeilingRows(t *testing.T) {
	for _, d := range ceilings {
		seen := map[string]string{}
		for _, f := range ceilingFlags(d) {
			s, ok := tbfSettings[f.Linux.Param]
			if !ok {
				t.Errorf("--%s: Linux.Param %q is no tbf.Config setting (tbfSettings)", f.Name, f.Linux.Param)
				continue
			}
			if other, ok := seen[f.Linux.Param]; ok {
				t.Errorf("--%s and --%s are both ceiling %d's %s", other, f.Name, d, f.Linux.Param)
			}
			seen[f.Linux.Param] = f.Name
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("--%s: its value does not fit tbf's %s: %v", f.Name, f.Linux.Param, r)
					}
				}()
				var c Config
				s.set(&tbf.Config{}, deref(f.field(&c)))
			}()
			if s.part == partBucket {
				if _, ok := tbfSettings[s.rate]; !ok {
					t.Errorf("%s goes with the rate %q, which is no setting", f.Linux.Param, s.rate)
				}
			}
		}
		for _, rate := range []string{"rate", "pkt_rate"} {
			if _, ok := seen[rate]; !ok {
				t.Errorf("ceiling %d has no %s flag", d, rate)
			}
		}
	}
}

// ceilingArgs shapes both directions with every setting a ceiling has but
// latency in egress and limit in ingress (each excludes the other).
var ceilingArgs = []string{"--qdisc=tbf",
	"--qdisc-tbf-rate=1000000", "--qdisc-tbf-burst=20000", "--qdisc-tbf-peakrate=2000000", "--qdisc-tbf-mtu=1514",
	"--qdisc-tbf-latency=40ms", "--qdisc-tbf-pkt-rate=3000", "--qdisc-tbf-pkt-burst=30",
	"--qdisc-ingress-rate=500000", "--qdisc-ingress-burst=10000", "--qdisc-ingress-limit=70000",
	"--qdisc-ingress-pkt-rate=4000", "--qdisc-ingress-pkt-burst=40"}

// TestCeilingTBFConfig: TBFConfig and IngressConfig give each ceiling
// flag's value to its tbf setting, and nothing of the other direction.
func TestCeilingTBFConfig(t *testing.T) {
	c, err := parse(t, ceilingArgs...)
	if err != nil {
		t.Fatal(err)
	}
	queues := min(runtime.GOMAXPROCS(0), tbf.MaxLanes)
	// One lane: fq, the default child, spreads the flows.
	want := tbf.Config{Rate: 1000000, Burst: 20000, PeakRate: 2000000, MTU: 1514, Latency: 40 * time.Millisecond,
		PacketRate: 3000, PacketBurst: 30, Lanes: 1}
	if diff := cmp.Diff(want, c.TBFConfig()); diff != "" {
		t.Errorf("TBFConfig (-want +got):\n%s", diff)
	}
	want = tbf.Config{Rate: 500000, Burst: 10000, Limit: 70000, PacketRate: 4000, PacketBurst: 40, Lanes: queues}
	if diff := cmp.Diff(want, c.IngressConfig()); diff != "" {
		t.Errorf("IngressConfig (-want +got):\n%s", diff)
	}
}

// TestLiveIsCeiling: Changed takes every ceiling's flag and refuses every
// other one, naming it and the flags it takes; LiveArgs gives the ones it
// takes.
func TestLiveIsCeiling(t *testing.T) {
	c, err := parse(t, ceilingArgs...)
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for i := range Flags {
		f := &Flags[i]
		if f.classes != NotCeiling || f.Kind == KindCake || f.Kind == KindCakeKnob || f.fqCoDelLive() {
			continue // changes of classes, of cake or of fq_codel, not ceilings: TestChangeClasses, TestCakeLive, TestLiveChange
		}
		arg := "--" + f.Name + "=" + f.get(c) // no change: valid wherever c is
		next, err := c.Changed([]string{arg})
		switch {
		case f.Ceiling != NotCeiling && err != nil:
			t.Errorf("Changed(%q): %v; a ceiling's flag may change", arg, err)
		case f.Ceiling != NotCeiling && next.String() != c.String():
			t.Errorf("Changed(%q) = %v, want %v", arg, next, c)
		case f.Ceiling == NotCeiling && (err == nil || !strings.Contains(err.Error(), "--"+f.Name+" cannot change on a running sandbox")):
			t.Errorf("Changed(%q): %v; want it refused: --%s shapes the qdisc itself", arg, err, f.Name)
		}
		if f.Ceiling != NotCeiling {
			live = append(live, "--"+f.Name+"=")
		}
	}
	_, err = c.Changed([]string{"--qdisc=fifo"})
	for _, l := range live {
		if name := strings.TrimSuffix(l, "="); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("the refusal %v does not name %s, which may change", err, name)
		}
	}
	args := c.LiveArgs()
	if len(args) != len(live) {
		t.Fatalf("LiveArgs() = %q, want the %d flags %q", args, len(live), live)
	}
	for i := range args {
		if !strings.HasPrefix(args[i], live[i]) {
			t.Errorf("LiveArgs()[%d] = %q, want %s...", i, args[i], live[i])
		}
	}
}

// TestSameCeiling: a change of any one ceiling flag changes its
// direction and only it; a change of any other flag changes neither.
func TestSameCeiling(t *testing.T) {
	c, err := parse(t, ceilingArgs...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range Flags {
		f := &Flags[i]
		next := c.snapshot()
		switch p := f.field(next).(type) {
		case *uint64:
			*p++
		case *time.Duration:
			*p++
		case *bool:
			*p = !*p
		case *string:
			*p += "x"
		case *QueueingDiscipline:
			*p = "fq_codel"
		}
		for _, d := range ceilings {
			if got, want := sameCeiling(d, c, next), f.Ceiling != d; got != want {
				t.Errorf("--%s changed: sameCeiling(%d) = %v, want %v", f.Name, d, got, want)
			}
		}
	}
}

// TestClearRemoved: a rate of 0 clears its bucket's settings; the
// ingress limit goes with both rates, the egress one (the qdisc's queue)
// stays.
func TestClearRemoved(t *testing.T) {
	full, err := parse(t, ceilingArgs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		zero []string // the rates set to 0
		want func(c *Config)
	}{
		{"egress rate", []string{FlagTBFRate}, func(c *Config) {
			c.TBFRate, c.TBFBurst, c.TBFPeakRate, c.TBFMTU, c.TBFLatency = 0, 0, 0, 0, 0
		}},
		{"egress packet rate", []string{FlagTBFPacketRate}, func(c *Config) { c.TBFPacketRate, c.TBFPacketBurst = 0, 0 }},
		{"ingress rate", []string{FlagIngressRate}, func(c *Config) { c.IngressRate, c.IngressBurst = 0, 0 }},
		{"ingress packet rate", []string{FlagIngressPacketRate}, func(c *Config) { c.IngressPacketRate, c.IngressPacketBurst = 0, 0 }},
		{"both ingress rates", []string{FlagIngressRate, FlagIngressPacketRate}, func(c *Config) {
			c.IngressRate, c.IngressBurst, c.IngressPacketRate, c.IngressPacketBurst, c.IngressLimit = 0, 0, 0, 0, 0
		}},
		{"both egress rates", []string{FlagTBFRate, FlagTBFPacketRate}, func(c *Config) {
			c.TBFRate, c.TBFBurst, c.TBFPeakRate, c.TBFMTU, c.TBFLatency, c.TBFPacketRate, c.TBFPacketBurst = 0, 0, 0, 0, 0, 0, 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := full.snapshot(), full.snapshot()
			got.TBFLimit, want.TBFLimit = 90000, 90000 // a queue bound the egress ceiling's removal leaves
			for _, name := range tc.zero {
				if err := got.Set(name, "0"); err != nil {
					t.Fatal(err)
				}
			}
			got.clearRemoved()
			tc.want(want)
			if diff := cmp.Diff(want, got, ignoreOperator); diff != "" {
				t.Errorf("after setting %v to 0 (-want +got):\n%s", tc.zero, diff)
			}
		})
	}
}

// TestKubeRows: each bandwidth annotation sets its direction's rate,
// burst, limit and latency rows and, egress, selects the qdisc; no other
// row names it.
func TestKubeRows(t *testing.T) {
	for _, tc := range []struct {
		key     string
		ceiling Ceiling
		want    []string
	}{
		{AnnotationKubeEgress, EgressCeiling, []string{FlagQDisc, FlagTBFRate, FlagTBFBurst, FlagTBFLimit, FlagTBFLatency}},
		{AnnotationKubeIngress, IngressCeiling, []string{FlagIngressRate, FlagIngressBurst, FlagIngressLimit, FlagIngressLatency}},
	} {
		var got []string
		for i := range Flags {
			if f := &Flags[i]; f.Kube == tc.key {
				got = append(got, f.Name)
				if f.Ceiling != tc.ceiling && f.Kind != KindQDisc {
					t.Errorf("--%s: %s sets it, but it is ceiling %d's, not %d's", f.Name, tc.key, f.Ceiling, tc.ceiling)
				}
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("the rows %s sets (-want +got):\n%s", tc.key, diff)
		}
		var c Config
		s := c.kubeShaperOf(tc.key)
		if s.rateFlag == nil || s.rate == nil || s.burst == nil || s.limit == nil || s.latency == nil {
			t.Errorf("%s: some of rate, burst, limit and latency are no row's: %+v", tc.key, s)
		}
		if (s.qdisc != nil) != (tc.ceiling == EgressCeiling) {
			t.Errorf("%s: selects a qdisc: %v; want %v", tc.key, s.qdisc != nil, tc.ceiling == EgressCeiling)
		}
	}
	for i := range Flags {
		if f := &Flags[i]; f.Kube != "" && f.Kube != AnnotationKubeEgress && f.Kube != AnnotationKubeIngress {
			t.Errorf("--%s: Kube %q is no bandwidth annotation", f.Name, f.Kube)
		}
	}
}

// TestMayAnnotate: the flags MayAnnotate allows are the ones whose Rule
// lets an annotation set some value without --allow-flag-override, as
// ApplyAnnotations applies it alone (policyTakes).
func TestMayAnnotate(t *testing.T) {
	op, err := parse(t, ceilingArgs...)
	if err != nil {
		t.Fatal(err)
	}
	opHTB, err := parse(t, "--qdisc=htb", "--qdisc-htb="+htbSample, "--qdisc-ingress-htb="+htbSample)
	if err != nil {
		t.Fatal(err)
	}
	opCake, err := parse(t, "--qdisc=cake", "--qdisc-cake="+cakeSample, "--qdisc-ingress-cake="+cakeSample)
	if err != nil {
		t.Fatal(err)
	}
	for i := range Flags {
		f := &Flags[i]
		some := false
		op := op
		if f.Annotation.Permit == Tighten {
			op = opHTB // one with classes to tighten
			if f.Kind == KindCake || f.Kind == KindCakeKnob {
				op = opCake
			}
		}
		for _, v := range annotationValues(f, op) {
			some = some || policyTakes(op, f.Name, v)
		}
		if got := MayAnnotate(f.Name); got != some {
			t.Errorf("MayAnnotate(%q) = %v; an annotation may set some value: %v", f.Name, got, some)
		}
	}
	for _, name := range []string{"", "qdisc-tbf-speed", "debug"} {
		if MayAnnotate(name) {
			t.Errorf("MayAnnotate(%q) = true for no qdisc flag", name)
		}
	}
}

// policyTakes reports whether the annotation dev.gvisor.flag.<name>=value
// alone passes the policy on op (a copy): ApplyAnnotations takes it, or
// refuses only the whole as invalid (Validate's rules between flags).
func policyTakes(op *Config, name, value string) bool {
	c := *op
	err := c.ApplyAnnotations(map[string]string{AnnotationPrefix + name: value})
	return err == nil || strings.Contains(err.Error(), " give an invalid configuration: ")
}
