package runscflags

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fq"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// parse registers the flags on a new FlagSet and parses args.
func parse(t *testing.T, args ...string) (*Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return NewFromFlags(fs)
}

var ignoreOperator = cmpopts.IgnoreUnexported(Config{})

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want Config
	}{
		{"defaults: fifo as runsc", nil, Config{QDisc: "fifo"}},
		{"none", []string{"--qdisc=none"}, Config{QDisc: QDiscNone}},
		{"runsc bare numbers", []string{"--qdisc=tbf", "--qdisc-tbf-rate=1250000", "--qdisc-tbf-burst=12500"},
			Config{QDisc: "tbf", TBFRate: 1250000, TBFBurst: 12500}},
		{"tc units", []string{"--qdisc=tbf", "--qdisc-tbf-rate=8mbit", "--qdisc-tbf-burst=64kb", "--qdisc-tbf-peakrate=100mbit", "--qdisc-tbf-mtu=1514", "--qdisc-tbf-latency=50ms"},
			Config{QDisc: "tbf", TBFRate: 1_000_000, TBFBurst: 65536, TBFPeakRate: 12_500_000, TBFMTU: 1514, TBFLatency: 50 * time.Millisecond}},
		// tc takes mtu without peakrate; it shapes nothing.
		{"mtu without peakrate", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-mtu=1514"},
			Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 12500, TBFMTU: 1514}},
		{"limit and override", []string{"--qdisc=tbf", "--qdisc-tbf-rate=1gbit", "--qdisc-tbf-burst=1mb", "--qdisc-tbf-limit=4mb", "--allow-flag-override"},
			Config{QDisc: "tbf", TBFRate: 125_000_000, TBFBurst: 1 << 20, TBFLimit: 4 << 20, AllowFlagOverride: true}},
		{"ceilings prepared for pods that pick tbf", []string{"--qdisc-tbf-rate=10mbit"}, Config{QDisc: "fifo", TBFRate: 1_250_000}},
		{"ingress", []string{"--qdisc-ingress-rate=100mbit", "--qdisc-ingress-burst=125kb", "--qdisc-ingress-latency=25ms"},
			Config{QDisc: "fifo", IngressRate: 12_500_000, IngressBurst: 128_000, IngressLatency: 25 * time.Millisecond}},
		{"ingress limit beside tbf", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-ingress-rate=1250000", "--qdisc-ingress-burst=3028", "--qdisc-ingress-limit=1mb"},
			Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 12500, IngressRate: 1_250_000, IngressBurst: 3028, IngressLimit: 1 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *c, ignoreOperator); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		says []string
	}{
		{"unknown qdisc", []string{"--qdisc=red"}, []string{`"red"`, orList(qdiscChoices())}},
		{"bad rate unit", []string{"--qdisc-tbf-rate=10mbits"}, []string{"qdisc-tbf-rate", `"10mbits"`, "unknown unit"}},
		{"negative burst", []string{"--qdisc-tbf-burst=-1"}, []string{"qdisc-tbf-burst", "negative"}},
		{"tbf without rate", []string{"--qdisc=tbf", "--qdisc-tbf-burst=12500"}, []string{"--qdisc-tbf-rate"}},
		{"tbf without burst", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit"}, []string{"--qdisc-tbf-burst"}},
		{"peakrate without mtu", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-peakrate=100mbit"}, []string{"--qdisc-tbf-mtu"}},
		{"peakrate not above rate", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-peakrate=10mbit", "--qdisc-tbf-mtu=1514"}, []string{"--qdisc-tbf-peakrate", "above"}},
		{"limit and latency", []string{"--qdisc-tbf-limit=100kb", "--qdisc-tbf-latency=50ms"}, []string{"--qdisc-tbf-limit", "--qdisc-tbf-latency"}},
		{"negative latency", []string{"--qdisc-tbf-latency=-5ms"}, []string{"--qdisc-tbf-latency"}},
		{"burst past 32 bits", []string{"--qdisc-tbf-burst=5gb"}, []string{"--qdisc-tbf-burst", "4 GiB"}},
		{"limit past 32 bits", []string{"--qdisc-tbf-limit=4294967296"}, []string{"--qdisc-tbf-limit"}},
		{"mtu past 32 bits", []string{"--qdisc-tbf-peakrate=1gbit", "--qdisc-tbf-mtu=8gb"}, []string{"--qdisc-tbf-mtu"}},
		{"ingress rate unit", []string{"--qdisc-ingress-rate=fast"}, []string{"qdisc-ingress-rate", `"fast"`}},
		{"ingress rate without burst", []string{"--qdisc-ingress-rate=10mbit"}, []string{"--qdisc-ingress-rate", "requires --qdisc-ingress-burst"}},
		{"ingress burst without rate", []string{"--qdisc-ingress-burst=12500"}, []string{"need --qdisc-ingress-rate"}},
		{"ingress limit and latency", []string{"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=12500", "--qdisc-ingress-limit=100kb", "--qdisc-ingress-latency=50ms"}, []string{"--qdisc-ingress-limit", "--qdisc-ingress-latency"}},
		{"ingress negative latency", []string{"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=12500", "--qdisc-ingress-latency=-1ms"}, []string{"--qdisc-ingress-latency", "positive"}},
		{"ingress burst past 32 bits", []string{"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=5gb"}, []string{"--qdisc-ingress-burst", "4 GiB"}},
		// tbf.Config.Check's bounds, at parse rather than at boot.
		{"latency past a 32-bit limit", []string{"--qdisc=tbf", "--qdisc-tbf-rate=100gbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-latency=1h"}, []string{"--qdisc-tbf-latency: ", "4294967295", "u32"}},
		{"latency past 2^64 bytes", []string{"--qdisc=tbf", "--qdisc-tbf-rate=8tbit", "--qdisc-tbf-burst=1mb", "--qdisc-tbf-latency=2540000h"}, []string{"--qdisc-tbf-latency: ", "4294967295"}},
		{"burst shorter than 1 ns", []string{"--qdisc=tbf", "--qdisc-tbf-rate=18446744073709551615", "--qdisc-tbf-burst=1514"}, []string{"--qdisc-tbf-burst: ", "less than 1 ns"}},
		{"peak bucket shorter than 1 ns", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-peakrate=18446744073709551615", "--qdisc-tbf-mtu=1514"}, []string{"--qdisc-tbf-mtu: ", "less than 1 ns"}},
		{"ingress latency past a 32-bit limit", []string{"--qdisc-ingress-rate=100gbit", "--qdisc-ingress-burst=12500", "--qdisc-ingress-latency=1h"}, []string{"--qdisc-ingress-latency: ", "u32"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.args...)
			if err == nil {
				t.Fatalf("parse(%q) = %+v, nil; want an error", tc.args, c)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

func TestNewFromFlagsNeedsRegisteredFlags(t *testing.T) {
	if _, err := NewFromFlags(flag.NewFlagSet("x", flag.ContinueOnError)); err == nil || !strings.Contains(err.Error(), "RegisterFlags") {
		t.Errorf("NewFromFlags on an empty FlagSet: %v; want an error naming RegisterFlags", err)
	}
}

func TestHelpSaysUnits(t *testing.T) {
	fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
	RegisterFlags(fs)
	for name, unit := range map[string]string{
		FlagTBFRate: "mbit", FlagTBFBurst: "kb", FlagTBFPeakRate: "bytes/s", FlagTBFMTU: "bytes",
		FlagTBFLimit: "bytes", FlagTBFLatency: "50ms", FlagQDisc: "htb (--qdisc-htb)",
		FlagIngressRate: "mbit", FlagIngressBurst: "kb", FlagIngressLimit: "bytes", FlagIngressLatency: "25ms",
		FlagHTB: "tc's words", FlagIngressHTB: "--qdisc-htb", FlagCake: "tc-cake's words", FlagIngressCake: "ingress keyword",
	} {
		if u := fs.Lookup(name).Usage; !strings.Contains(u, unit) {
			t.Errorf("--%s help %q does not say %q", name, u, unit)
		}
	}
}

// TestRuntimeOwnsOverride: a runtime with its own --allow-flag-override
// (runsc) registers only the qdisc flags, and NewFromFlags reads its switch.
func TestRuntimeOwnsOverride(t *testing.T) {
	for _, override := range []bool{false, true} {
		fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
		fs.Bool(FlagAllowFlagOverride, false, "the runtime's own switch")
		RegisterQDiscFlags(fs) // would panic if it registered the switch again
		if err := fs.Parse([]string{fmt.Sprintf("--%s=%v", FlagAllowFlagOverride, override), "--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"}); err != nil {
			t.Fatal(err)
		}
		c, err := NewFromFlags(fs)
		if err != nil {
			t.Fatal(err)
		}
		err = c.ApplyAnnotations(a("qdisc-tbf-rate", "20mbit"))
		if got := err == nil; got != override {
			t.Errorf("--allow-flag-override=%v: raising the rate by annotation: %v", override, err)
		}
	}
}

func TestOwns(t *testing.T) {
	fs := flag.NewFlagSet("runsc", flag.ContinueOnError)
	RegisterQDiscFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !Owns(f.Name) {
			t.Errorf("Owns(%q) = false for a flag RegisterQDiscFlags registers", f.Name)
		}
	})
	for _, name := range []string{FlagAllowFlagOverride, "debug", "qdisc-tbff", "network"} {
		if Owns(name) {
			t.Errorf("Owns(%q) = true", name)
		}
	}
}

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		args, want []string
	}{
		{nil, nil},
		{[]string{"--qdisc=none"}, []string{"--qdisc=none"}},
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12.5kb", "--qdisc-tbf-latency=1.5ms"},
			[]string{"--qdisc=tbf", "--qdisc-tbf-rate=1250000", "--qdisc-tbf-burst=12800", "--qdisc-tbf-latency=1.5ms"}},
		{[]string{"--qdisc-tbf-rate=1gbit", "--qdisc-tbf-peakrate=2gbit", "--qdisc-tbf-mtu=9000", "--qdisc-tbf-limit=1mb", "--allow-flag-override"},
			[]string{"--qdisc-tbf-rate=125000000", "--qdisc-tbf-peakrate=250000000", "--qdisc-tbf-mtu=9000", "--qdisc-tbf-limit=1048576"}},
	} {
		c, err := parse(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, c.Args()); diff != "" {
			t.Errorf("%q: Args (-want +got):\n%s", tc.args, diff)
		}
		want := strings.Join(tc.want, " ")
		if want == "" {
			want = "--qdisc=fifo"
		}
		if got := fmt.Sprint(*c); got != want {
			t.Errorf("%q: String() = %q, want %q", tc.args, got, want)
		}
	}
}

func a(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[AnnotationPrefix+kv[i]] = kv[i+1]
	}
	return m
}

func TestApplyAnnotations(t *testing.T) {
	operatorTBF := []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-latency=50ms"}
	for _, tc := range []struct {
		name        string
		flags       []string
		annotations map[string]string
		want        *Config  // when accepted
		says        []string // non-nil: refused, with an error saying these
	}{
		{"lower rate", operatorTBF, a("qdisc-tbf-rate", "5mbit"),
			&Config{QDisc: "tbf", TBFRate: 625_000, TBFBurst: 12500, TBFLatency: 50 * time.Millisecond}, nil},
		{"equal rate", operatorTBF, a("qdisc-tbf-rate", "1250000"),
			&Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 12500, TBFLatency: 50 * time.Millisecond}, nil},
		{"raise rate", operatorTBF, a("qdisc-tbf-rate", "20mbit"), nil,
			[]string{"dev.gvisor.flag.qdisc-tbf-rate", `"20mbit"`, "1250000 bytes/s (10Mbit)", "--allow-flag-override"}},
		{"zero rate unsets", operatorTBF, a("qdisc-tbf-rate", "0"), nil, []string{"0 would unset", "--allow-flag-override"}},
		{"raise burst", operatorTBF, a("qdisc-tbf-burst", "64kb"), nil, []string{"qdisc-tbf-burst", "12500 bytes"}},
		{"lower burst", operatorTBF, a("qdisc-tbf-burst", "3028"),
			&Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 3028, TBFLatency: 50 * time.Millisecond}, nil},
		{"raise latency", operatorTBF, a("qdisc-tbf-latency", "1s"), nil, []string{"qdisc-tbf-latency", "50ms", "--allow-flag-override"}},
		{"lower latency", operatorTBF, a("qdisc-tbf-latency", "20ms"),
			&Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 12500, TBFLatency: 20 * time.Millisecond}, nil},
		{"bad latency", operatorTBF, a("qdisc-tbf-latency", "soon"), nil, []string{"positive duration"}},
		{"add peak rate", operatorTBF, a("qdisc-tbf-peakrate", "100mbit", "qdisc-tbf-mtu", "1514"),
			&Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 12500, TBFPeakRate: 12_500_000, TBFMTU: 1514, TBFLatency: 50 * time.Millisecond}, nil},
		{"peak rate without mtu", operatorTBF, a("qdisc-tbf-peakrate", "100mbit"), nil, []string{"invalid configuration", "--qdisc-tbf-mtu"}},
		{"leave tbf for fifo", operatorTBF, a("qdisc", "fifo"), nil, []string{"only tbf", "--allow-flag-override"}},
		{"leave tbf for none", operatorTBF, a("qdisc", "none"), nil, []string{"only tbf"}},
		{"unknown qdisc", operatorTBF, a("qdisc", "red"), nil, []string{`"red"`, orList(qdiscChoices())}},
		{"cake in place of the operator's tbf", operatorTBF, a("qdisc", "cake"), nil, []string{"only tbf, or fq_codel", "qdisc=cake over the operator's tbf", "--allow-flag-override"}},
		{"set override", operatorTBF, a("allow-flag-override", "true"), nil, []string{"allow-flag-override", "operator"}},
		{"override cannot be set even with override", append([]string{"--allow-flag-override"}, operatorTBF...), a("allow-flag-override", "false"), nil, []string{"cannot be set"}},
		{"pick tbf under fifo with ceilings", []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"}, a("qdisc", "tbf", "qdisc-tbf-rate", "5mbit"),
			&Config{QDisc: "tbf", TBFRate: 625_000, TBFBurst: 12500}, nil},
		{"pick tbf without rate and burst", nil, a("qdisc", "tbf"), nil, []string{"invalid configuration", "--qdisc-tbf-rate"}},
		{"pick tbf and give rate and burst", nil, a("qdisc", "tbf", "qdisc-tbf-rate", "100mbit", "qdisc-tbf-burst", "64kb"),
			&Config{QDisc: "tbf", TBFRate: 12_500_000, TBFBurst: 65536}, nil},
		{"no ceiling: any valid value", []string{"--qdisc=none"}, a("qdisc", "tbf", "qdisc-tbf-rate", "1gbit", "qdisc-tbf-burst", "1mb", "qdisc-tbf-limit", "1mb"),
			&Config{QDisc: "tbf", TBFRate: 125_000_000, TBFBurst: 1 << 20, TBFLimit: 1 << 20}, nil},
		// At start the ceiling's flags shape only a tbf: on another kind a
		// pod's would do nothing, and are refused.
		{"a ceiling on fifo, not selecting tbf", []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"}, a("qdisc-tbf-rate", "5mbit"), nil,
			[]string{`annotation dev.gvisor.flag.qdisc-tbf-rate="5mbit"`, "qdisc is fifo", "annotate dev.gvisor.flag.qdisc=tbf as well"}},
		{"a queue bound on none", []string{"--qdisc=none"}, a("qdisc-tbf-limit", "1mb"), nil, []string{"qdisc is none", "dev.gvisor.flag.qdisc=tbf"}},
		{"a ceiling on htb", []string{"--qdisc=htb", "--qdisc-htb=class root classid 1:1 rate 100mbit"}, a("qdisc-tbf-rate", "5mbit", "qdisc-tbf-burst", "5000"), nil,
			[]string{"qdisc is htb", "or lower htb's own rates (dev.gvisor.flag.qdisc-htb)"}},
		{"override: a ceiling on fifo is refused too", append([]string{"--allow-flag-override"}, operatorTBF...), a("qdisc", "fifo", "qdisc-tbf-rate", "1gbit", "qdisc-tbf-burst", "1mb"), nil,
			[]string{"qdisc is fifo"}},
		{"limit beside operator latency", operatorTBF, a("qdisc-tbf-limit", "10kb"), nil, []string{"--qdisc-tbf-limit and --qdisc-tbf-latency"}},
		{"one bad annotation refuses the set", operatorTBF, a("qdisc-tbf-rate", "5mbit", "qdisc-tbf-burst", "1mb"), nil, []string{"qdisc-tbf-burst"}},
		{"bad unit", operatorTBF, a("qdisc-tbf-rate", "5 furlongs"), nil, []string{`"5 furlongs"`, "unknown unit"}},
		{"keys without the prefix and flags we do not own are ignored", operatorTBF,
			map[string]string{"qdisc": "none", "io.kubernetes.foo": "x", AnnotationPrefix + "network": "host", AnnotationPrefix + "debug": "true"},
			&Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 12500, TBFLatency: 50 * time.Millisecond}, nil},
		{"override: raise and leave tbf", append([]string{"--allow-flag-override"}, operatorTBF...), a("qdisc", "fifo", "qdisc-tbf-rate", "1gbit", "qdisc-tbf-latency", "0s"), nil, []string{"positive duration"}},
		{"override: anything valid", append([]string{"--allow-flag-override"}, operatorTBF...), a("qdisc", "tbf", "qdisc-tbf-rate", "1gbit", "qdisc-tbf-burst", "1mb"),
			&Config{QDisc: "tbf", TBFRate: 125_000_000, TBFBurst: 1 << 20, TBFLatency: 50 * time.Millisecond, AllowFlagOverride: true}, nil},
		{"override: still validated", append([]string{"--allow-flag-override"}, operatorTBF...), a("qdisc-tbf-rate", "0"), nil, []string{"--qdisc-tbf-rate"}},
		// tbf.Config.Check's bounds hold for what annotations give.
		{"pick tbf with a latency past a 32-bit limit", nil, a("qdisc", "tbf", "qdisc-tbf-rate", "100gbit", "qdisc-tbf-burst", "12500", "qdisc-tbf-latency", "1h"), nil,
			[]string{"invalid configuration", "--qdisc-tbf-latency: ", "u32"}},
		// A limit below the burst is Linux's to take (bfifo drops what
		// does not fit), and lowering it tightens.
		{"a limit below the operator's burst", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"}, a("qdisc-tbf-limit", "5000"),
			&Config{QDisc: "tbf", TBFRate: 1_250_000, TBFBurst: 12500, TBFLimit: 5000}, nil},
		{"override: a burst shorter than 1 ns", append([]string{"--allow-flag-override"}, operatorTBF...), a("qdisc-tbf-rate", "18446744073709551615"), nil,
			[]string{"invalid configuration", "--qdisc-tbf-burst: ", "less than 1 ns"}},
		{"ingress limit below its burst", []string{"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=12500"}, a("qdisc-ingress-limit", "5000"),
			&Config{QDisc: "fifo", IngressRate: 1_250_000, IngressBurst: 12500, IngressLimit: 5000}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := annotate(t, tc.flags, tc.annotations, tc.says)
			if c == nil {
				return
			}
			if diff := cmp.Diff(*tc.want, *c, ignoreOperator); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCeilingsAreTheOperators applies two annotation sets in turn: the
// second may raise a value the first lowered, up to the operator's value
// and no further.
func TestCeilingsAreTheOperators(t *testing.T) {
	c, err := parse(t, "--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyAnnotations(a("qdisc-tbf-rate", "2mbit")); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyAnnotations(a("qdisc-tbf-rate", "10mbit")); err != nil || c.TBFRate != 1_250_000 {
		t.Errorf("second set up to the operator's rate: %v, rate %d", err, c.TBFRate)
	}
	if err := c.ApplyAnnotations(a("qdisc-tbf-rate", "11mbit")); err == nil {
		t.Errorf("a second set raised the rate past the operator's ceiling")
	}
}

func TestNewQueueingDiscipline(t *testing.T) {
	clock := faketime.NewManualClock()
	t.Run("none", func(t *testing.T) {
		c, _ := parse(t, "--qdisc=none")
		q, err := c.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
		if q != nil || err != nil {
			t.Errorf("none: %v, %v; want nil, nil", q, err)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		c, _ := parse(t)
		q, err := c.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		f, ok := q.(*fifo.Discipline)
		if !ok || f.Lanes() != runtime.GOMAXPROCS(0) {
			t.Errorf("fifo: %T with %d queues; want *fifo.Discipline with GOMAXPROCS=%d", q, f.Lanes(), runtime.GOMAXPROCS(0))
		}
		if got, want := q.(QDisc).String(), fmt.Sprintf("fifo queues %d limit 1000p", runtime.GOMAXPROCS(0)); got != want {
			t.Errorf("fifo described as %q, want %q", got, want)
		}
	})
	t.Run("tbf default child", func(t *testing.T) {
		c, _ := parse(t, "--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500")
		q, err := c.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		d := q.(*tbf.Discipline)
		// The tbf's default limit, 1000 full-size packets, bounds fq's
		// bytes as it bounded the FIFO's (tbf.ByteLimiter).
		link := qdisctest.NewLink(clock)
		wantLimit := uint32(tbf.DefaultLimitPackets * (link.MTU() + uint32(link.MaxHeaderLength())))
		if got := d.Config(); got.Rate != 1_250_000 || got.Burst != 12500 || got.Limit != wantLimit || d.Lanes() != 1 {
			t.Errorf("tbf config %+v with %d queues; want rate 1250000, burst 12500, limit %d, one queue", got, d.Lanes(), wantLimit)
		}
		d.Child(func(child qdisc.Queue) {
			if _, ok := child.(*fq.Queue); !ok {
				t.Errorf("the tbf's child is %T, want fq, the default", child)
			}
		})
	})
	t.Run("tbf from annotations", func(t *testing.T) {
		c, _ := parse(t, "--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-latency=50ms")
		if err := c.ApplyAnnotations(a("qdisc-tbf-rate", "5mbit", "qdisc-tbf-latency", "20ms")); err != nil {
			t.Fatal(err)
		}
		q, err := c.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		if got, want := q.(*tbf.Discipline).String(), "tbf rate 5Mbit burst 12500b lat 20ms; child fq limit 10000p flow_limit 1000p quantum 3028b initial_quantum 15140b refill_delay 40ms nopacing"; got != want {
			t.Errorf("qdisc %q, want %q", got, want)
		}
	})
	// What only the NIC can refuse, NewQueueingDiscipline refuses; the
	// rest Validate does, as the flags are parsed.
	for _, tc := range []struct {
		name    string
		args    []string
		atParse bool
		flag    string
	}{
		{"burst below the link's packets", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=1000"}, false, "--qdisc-tbf-burst: "},
		{"mtu below the link's packets", []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-peakrate=1gbit", "--qdisc-tbf-mtu=1000"}, false, "--qdisc-tbf-mtu: "},
		{"latency too long", []string{"--qdisc=tbf", "--qdisc-tbf-rate=100gbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-latency=1h"}, true, "--qdisc-tbf-latency: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, tc.args...)
			if tc.atParse {
				if err == nil || !strings.HasPrefix(err.Error(), tc.flag) {
					t.Errorf("parse: error %v, want one starting %q", err, tc.flag)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			q, err := c.NewQueueingDiscipline(qdisctest.NewLink(clock), clock)
			if err == nil {
				q.Close()
				t.Fatalf("built a qdisc; want an error naming %s", tc.flag)
			}
			if !strings.HasPrefix(err.Error(), tc.flag) {
				t.Errorf("error %q does not start with %q", err, tc.flag)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		warn bool
		flag string
	}{
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=3028"}, true, FlagTBFBurst},
		{[]string{"--qdisc=tbf", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=125000"}, false, ""},
		{[]string{"--qdisc=fifo"}, false, ""},
		// The ceiling beside another kind shapes no sandbox at start: it
		// is the ceiling for a pod that selects tbf, and says so.
		{[]string{"--qdisc=fifo", "--qdisc-tbf-rate=100mbit", "--qdisc-tbf-burst=125000"}, true, FlagTBFRate},
		{[]string{"--qdisc=netem", "--qdisc-tbf-pkt-rate=1000", "--qdisc-tbf-pkt-burst=10"}, true, FlagTBFRate},
	} {
		c, err := parse(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		w := c.Warnings()
		if (len(w) > 0) != tc.warn {
			t.Errorf("%q: warnings %q, want some: %v", tc.args, w, tc.warn)
		}
		for _, s := range w {
			if !strings.HasPrefix(s, "--"+tc.flag+": ") {
				t.Errorf("warning %q does not name --%s", s, tc.flag)
			}
		}
	}
}
