package runscflags_test

import (
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestFQCoDelLiveCheckpoint: fq_codel's knobs changed in place, alone or
// as a tbf's child, are what a restored NIC built from the same flags
// runs.
func TestFQCoDelLiveCheckpoint(t *testing.T) {
	child := func(p liveParts) fqcodel.Config {
		var c fqcodel.Config
		p.q.(fqcodel.Parent).Child(func(q qdisc.Queue) { c = q.(*fqcodel.Queue).Config() })
		return c
	}
	for _, tc := range []struct {
		name   string
		flags  map[string]string
		config func(liveParts) fqcodel.Config
	}{
		{"alone", map[string]string{"qdisc": "fq_codel"}, func(p liveParts) fqcodel.Config { return p.q.(*fqcodel.Discipline).Config() }},
		{"a tbf's child", map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "10mbit", "qdisc-tbf-burst": "12500", "qdisc-tbf-child": "fq_codel"}, child},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newLiveNIC(t, "eth0", 1500, tc.flags)
			args := []string{"--qdisc-fq-codel-target=2ms", "--qdisc-fq-codel-ce-threshold=1ms", "--qdisc-fq-codel-limit=500"}
			if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, args); err != nil {
				t.Fatalf("Change(%v): %v", args, err)
			}
			got := tc.config(p)
			if got.Target != 2*time.Millisecond || got.CEThreshold != time.Millisecond || got.Limit != 500 || got.Flows != fqcodel.DefaultFlows {
				t.Errorf("after the change: %+v", got)
			}
			again := newLiveNIC(t, "eth0", 1500, tc.flags)
			if err := again.Restore(p.State(true)); err != nil {
				t.Fatal(err)
			}
			if a := tc.config(again); a != got {
				t.Errorf("restored: %+v; want %+v", a, got)
			}
		})
	}
}
