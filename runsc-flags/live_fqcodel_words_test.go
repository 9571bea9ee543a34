package runscflags_test

import (
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestFQCoDelWordsChangeNamed: `runsc qdisc change` of fq_codel's words
// on a running fq_codel changes only what they name, as Linux's
// fq_codel_change applies `tc qdisc change ... fq_codel WORDS`: limit
// 2000 on an fq_codel started with 2048 flows and a 10 ms target is
// taken and leaves both; ecn after noecn turns ECN back on. That holds
// for --qdisc-fq-codel alone and as a tbf's child, and for the receive
// path's --qdisc-ingress-fq-codel. Words that name other flows are
// refused naming flows, and nothing changes.
func TestFQCoDelWordsChangeNamed(t *testing.T) {
	child := func(p liveParts) fqcodel.Config {
		var c fqcodel.Config
		p.q.(fqcodel.Parent).Child(func(q qdisc.Queue) { c = q.(*fqcodel.Queue).Config() })
		return c
	}
	egress := []string{"--qdisc-fq-codel-flows=2048", "--qdisc-fq-codel-target=10ms", "--qdisc-fq-codel-ecn=false"}
	for _, tc := range []struct {
		name   string
		args   []string
		flag   string // the words flag changed
		config func(liveParts) fqcodel.Config
	}{
		{"alone", append([]string{"--qdisc=fq_codel"}, egress...), "qdisc-fq-codel", func(p liveParts) fqcodel.Config { return p.q.(*fqcodel.Discipline).Config() }},
		{"a tbf's child", append([]string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-child=fq_codel"}, egress...), "qdisc-fq-codel", child},
		{"the receive path's", []string{"--qdisc-ingress=fq_codel", "--qdisc-ingress-fq-codel=flows 2048 target 10ms noecn"}, "qdisc-ingress-fq-codel",
			func(p liveParts) fqcodel.Config { return p.in.Whole().(*fqcodel.Discipline).Config() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := liveNICOf(t, tc.args...)
			before := tc.config(p)
			if before.Flows != 2048 || before.Target != 10*time.Millisecond || !before.NoECN {
				t.Fatalf("started as %+v; want 2048 flows, a 10ms target, noecn", before)
			}
			for _, step := range []struct {
				words  string
				change func(*fqcodel.Config)
			}{
				{"limit 2000", func(c *fqcodel.Config) { c.Limit = 2000 }},
				{"ecn interval 50ms", func(c *fqcodel.Config) { c.NoECN, c.Interval = false, 50*time.Millisecond }},
				{"", func(*fqcodel.Config) {}},
			} {
				arg := "--" + tc.flag + "=" + step.words
				if _, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{arg}); err != nil {
					t.Fatalf("Change(%s): %v", arg, err)
				}
				want := before
				step.change(&want)
				if got := tc.config(p); got != want {
					t.Errorf("after %s:\n%+v\nwant only what it names changed:\n%+v", arg, got, want)
				}
				before = want
			}

			arg := "--" + tc.flag + "=flows 512 limit 100"
			_, err := runscflags.Change([]*runscflags.NIC{p.NIC}, []string{arg})
			if err == nil || !strings.Contains(err.Error(), "flows") {
				t.Errorf("Change(%s): %v; want it refused naming flows", arg, err)
			}
			if got := tc.config(p); got != before {
				t.Errorf("after the refused %s:\n%+v\nwant it unchanged:\n%+v", arg, got, before)
			}
		})
	}
}

// liveNICOf is newLiveNIC of the Config args give (words flags of the
// registered kinds among them), on a link of MTU 1500.
func liveNICOf(t *testing.T, args ...string) liveParts {
	t.Helper()
	cfg, err := parseArgs(args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	p := liveParts{clock: faketime.NewManualClock()}
	p.link = qdisctest.NewLink(p.clock)
	p.link.LinkMTU = 1500
	if p.q, err = cfg.NewQueueingDiscipline(p.link, p.clock); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	if p.in, err = cfg.NewIngress(p.link, p.clock); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	t.Cleanup(func() {
		if p.q != nil {
			p.q.Close()
		}
		p.in.Close()
	})
	p.NIC = runscflags.NewNIC("eth0", cfg, p.link, p.clock, p.q, p.in)
	return p
}
