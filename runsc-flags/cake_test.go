package runscflags_test

import (
	"strings"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/cake"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// errorSays fails t unless err says each of says.
func errorSays(t *testing.T, err error, says []string) {
	t.Helper()
	for _, s := range says {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("error %v; want one saying %q", err, s)
		}
	}
}

// fromMap is the Config flags give, set one flag at a time as a runtime
// does (setEach), then validated.
func fromMap(flags map[string]string) (*runscflags.Config, error) {
	c, err := setEach(flags)
	if err != nil {
		return nil, err
	}
	return c, c.Validate()
}

// TestCakeFlags: --qdisc=cake builds cake as --qdisc-cake's words say
// (cake's defaults without them), --qdisc-ingress-cake cake on the receive
// path with its ingress keyword, and what does not fit is refused naming
// the flag.
func TestCakeFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags map[string]string
		want  string // the egress qdisc's description
		in    string // the ingress shaper's, "" for no cake there
		err   string
	}{
		{"defaults", map[string]string{"qdisc": "cake"}, "cake bandwidth unlimited diffserv3 triple-isolate", "", ""},
		{"a server", map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 100mbit dual-dsthost diffserv4 ack-filter"},
			"cake bandwidth 100Mbit diffserv4 dual-dsthost", "", ""},
		{"both directions", map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 100mbit", "qdisc-ingress-cake": "bandwidth 20mbit dual-srchost"},
			"cake bandwidth 100Mbit", "cake bandwidth 20Mbit diffserv3 dual-srchost", ""},
		{"words without the qdisc", map[string]string{"qdisc-cake": "bandwidth 10mbit"}, "", "", "--qdisc-cake gives cake's settings and needs --qdisc=cake"},
		{"a bad word", map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 10mbit dual-host"}, "", "", "dual-host"},
		{"two shapers on receive", map[string]string{"qdisc-ingress-cake": "bandwidth 10mbit", "qdisc-ingress-rate": "10mbit", "qdisc-ingress-burst": "12500"},
			"", "", "--qdisc-ingress-cake and --qdisc-ingress-rate both shape"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fromMap(tc.flags)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := newLiveNIC(t, "eth0", 1500, tc.flags)
			if got := p.q.(*cake.Discipline).String(); !strings.HasPrefix(got, tc.want) {
				t.Errorf("the qdisc is %q; want %q", got, tc.want)
			}
			if tc.in != "" {
				c, _ := p.in.Whole().(*cake.Discipline)
				if c == nil || !strings.HasPrefix(c.String(), tc.in) || !c.Config().Ingress {
					t.Errorf("the receive path's shaper is %v; want %q with ingress", p.in, tc.in)
				}
			}
		})
	}
}

// TestCakeAnnotations: a pod's dev.gvisor.flag.qdisc-cake may only make
// the operator's cake stricter (cake.Config.Tighten): a lower bandwidth
// and its own isolation pass; a higher bandwidth, or unlimited, is refused
// naming the annotation, the operator's words and --allow-flag-override.
func TestCakeAnnotations(t *testing.T) {
	operator := map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 100mbit triple-isolate"}
	for _, tc := range []struct {
		value string
		want  string // the words in force after, "" when refused
		says  []string
	}{
		{"bandwidth 50mbit dual-dsthost", "bandwidth 50Mbit diffserv3 dual-dsthost", nil},
		{"bandwidth 200mbit", "", []string{"dev.gvisor.flag.qdisc-cake", "bandwidth", "--allow-flag-override"}},
		{"unlimited", "", []string{"dev.gvisor.flag.qdisc-cake", "bandwidth", "--allow-flag-override"}},
	} {
		t.Run(tc.value, func(t *testing.T) {
			c, err := fromMap(operator)
			if err != nil {
				t.Fatal(err)
			}
			err = c.ApplyAnnotations(map[string]string{runscflags.AnnotationPrefix + runscflags.FlagCake: tc.value})
			if tc.want == "" {
				errorSays(t, err, tc.says)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(c.Cake, tc.want) {
				t.Errorf("--qdisc-cake in force: %q; want %q", c.Cake, tc.want)
			}
		})
	}
}

// TestCakeKubernetes: kubernetes.io/egress-bandwidth and
// ingress-bandwidth lower cake's bandwidth in their direction where they
// are below it (or it is unlimited), keeping the rest of cake; above it
// the operator's stays.
func TestCakeKubernetes(t *testing.T) {
	for _, tc := range []struct {
		egress, ingress string // the annotations
		cake, inCake    string // the words in force after, prefixes
	}{
		{"10M", "20M", "bandwidth 10Mbit diffserv3 dual-dsthost", "bandwidth 20Mbit"},
		{"1G", "1G", "bandwidth 100Mbit diffserv3 dual-dsthost", "bandwidth 50Mbit"},
	} {
		t.Run(tc.egress+"/"+tc.ingress, func(t *testing.T) {
			c, err := fromMap(map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 100mbit dual-dsthost", "qdisc-ingress-cake": "bandwidth 50mbit"})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.ApplyAnnotations(map[string]string{runscflags.AnnotationKubeEgress: tc.egress, runscflags.AnnotationKubeIngress: tc.ingress}); err != nil {
				t.Fatal(err)
			}
			if c.QDisc != "cake" || !strings.HasPrefix(c.Cake, tc.cake) || !strings.HasPrefix(c.IngressCake, tc.inCake) {
				t.Errorf("after the annotations: --qdisc=%v --qdisc-cake=%q --qdisc-ingress-cake=%q; want cake, %q, %q", c.QDisc, c.Cake, c.IngressCake, tc.cake, tc.inCake)
			}
		})
	}
}

// TestCakeLive: `runsc qdisc change --qdisc-cake=...` changes the running
// cake in place, reading the words over those in force (bandwidth 50mbit
// keeps the isolation), on both paths; Show prints cake's statistics, per
// tin; a checkpoint keeps the change; a change of cake on a NIC without it
// is refused.
func TestCakeLive(t *testing.T) {
	p := newLiveNIC(t, "eth0", 1500, map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 100mbit dual-dsthost", "qdisc-ingress-cake": "bandwidth 20mbit"})
	if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{"--qdisc-cake=bandwidth 50mbit", "--qdisc-ingress-cake=bandwidth 10mbit"}); err != nil {
		t.Fatal(err)
	}
	q := p.q.(*cake.Discipline)
	if c := q.Config(); c.Bandwidth != 6_250_000 || c.Isolation != cake.DualDstHost {
		t.Errorf("after the change: %v; want bandwidth 50mbit, dual-dsthost kept", c)
	}
	if c := p.in.Whole().(*cake.Discipline).Config(); c.Bandwidth != 1_250_000 || !c.Ingress {
		t.Errorf("the receive path after the change: %v; want bandwidth 10mbit with ingress", c)
	}
	if !strings.Contains(p.NIC.Config().Cake, "50Mbit") {
		t.Errorf("the Config in force does not carry the change: %q", p.NIC.Config().Cake)
	}
	show := p.NIC.Show()
	for _, s := range []string{"qdisc cake 8001: dev eth0 root refcnt 2 bandwidth 50Mbit", "Best Effort", "thresh", "qdisc ingress ffff: dev eth0 parent ffff:fff1", "qdisc cake 8002: dev eth0 parent ffff: bandwidth 10Mbit"} {
		if !strings.Contains(show, s) {
			t.Errorf("Show does not say %q:\n%s", s, show)
		}
	}
	// A checkpoint keeps the change: a NIC built from the same flags,
	// restored, shapes as this one does.
	again := newLiveNIC(t, "eth0", 1500, map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 100mbit dual-dsthost", "qdisc-ingress-cake": "bandwidth 20mbit"})
	if err := again.Restore(p.State(true)); err != nil {
		t.Fatal(err)
	}
	if a, b := again.q.(*cake.Discipline).Config(), q.Config(); a != b {
		t.Errorf("restored: %v; want %v", a, b)
	}
	if a, b := again.in.Whole().(*cake.Discipline).Config(), p.in.Whole().(*cake.Discipline).Config(); a != b {
		t.Errorf("restored on receive: %v; want %v", a, b)
	}
	tbf := newLiveNIC(t, "eth1", 1500, map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "10mbit", "qdisc-tbf-burst": "12500"})
	if _, err := runscflags.Change([]*runscflags.NIC{tbf.NIC}, []string{"--qdisc-cake=bandwidth 5mbit"}); err == nil || !strings.Contains(err.Error(), "needs --qdisc=cake") {
		t.Errorf("changing cake on a tbf: %v; want a refusal saying cake's words need --qdisc=cake", err)
	}
}
