package runscflags_test

import (
	"strings"
	"testing"

	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// configOf returns the Config the flags give, as a runtime that holds each
// flag in a field of its own would build it: with Set, one flag at a time.
func configOf(t *testing.T, flags map[string]string) *runscflags.Config {
	t.Helper()
	c, err := setEach(flags)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// setEach is configOf's Config, with Set's first error.
func setEach(flags map[string]string) (*runscflags.Config, error) {
	c := &runscflags.Config{}
	for _, f := range runscflags.Flags {
		v, ok := flags[f.Name]
		if !ok {
			v = f.Default
		}
		if err := c.Set(f.Name, v); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// TestKubernetesBesidePodFlags: Kubernetes' bandwidth annotations and the
// pod's dev.gvisor.flag.* annotations are one set (ApplyAnnotations, the
// one path): a bandwidth tightens what the pod's flags leave in force, is
// held to the operator's rate with a notice, is taken as given with
// --allow-flag-override, and selects tbf where there was none; one that is
// not a bandwidth refuses the set.
func TestKubernetesBesidePodFlags(t *testing.T) {
	operator := map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "100mbit", "qdisc-tbf-burst": "128kb"}
	override := map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "100mbit", "qdisc-tbf-burst": "128kb", "allow-flag-override": "true"}
	podRate := "dev.gvisor.flag.qdisc-tbf-rate" // the pod's flag: 50mbit
	for _, tc := range []struct {
		name        string
		operator    map[string]string
		annotations map[string]string
		rate        uint64 // the tbf's, bytes/s
		notice      string // what Notices says, "" for nothing
		err         string
	}{
		{
			name:        "tighter than the pod's flag",
			operator:    operator,
			annotations: map[string]string{runscflags.AnnotationKubeEgress: "20M", podRate: "50mbit"},
			rate:        2_500_000,
		},
		{
			name:        "below the operator's ceiling, above the pod's flag",
			operator:    operator,
			annotations: map[string]string{runscflags.AnnotationKubeEgress: "80M", podRate: "50mbit"},
			rate:        6_250_000,
		},
		{
			name:        "above the operator's ceiling",
			operator:    operator,
			annotations: map[string]string{runscflags.AnnotationKubeEgress: "200M", podRate: "50mbit"},
			rate:        6_250_000,
			notice:      "above the operator's ceiling --qdisc-tbf-rate=12500000 bytes/s (100Mbit); the pod gets the ceiling",
		},
		{
			name:        "with --allow-flag-override, as the annotation says",
			operator:    override,
			annotations: map[string]string{runscflags.AnnotationKubeEgress: "200M", podRate: "50mbit"},
			rate:        25_000_000,
		},
		{
			name:        "selects tbf where there was none",
			annotations: map[string]string{runscflags.AnnotationKubeEgress: "10M"},
			rate:        1_250_000,
		},
		{
			name:        "not a bandwidth",
			operator:    operator,
			annotations: map[string]string{runscflags.AnnotationKubeEgress: "fast", podRate: "50mbit"},
			err:         "kubernetes.io/egress-bandwidth",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := configOf(t, tc.operator)
			before := c.String()
			err := c.ApplyAnnotations(tc.annotations)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got error %v, want one saying %q", err, tc.err)
				}
				if c.String() != before {
					t.Errorf("the refused set changed the Config from %q to %q", before, c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.QDisc != "tbf" || c.TBFRate != tc.rate {
				t.Errorf("got %v, want tbf at %d bytes/s", c, tc.rate)
			}
			notices := strings.Join(c.Notices, "\n")
			if tc.notice == "" && notices != "" || !strings.Contains(notices, tc.notice) {
				t.Errorf("Notices say %q, want %q", notices, tc.notice)
			}
		})
	}
}
