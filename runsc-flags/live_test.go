package runscflags_test

import (
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/ingress"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// liveNIC builds a NIC's shaping from flags as a runtime does, on a link
// of the given MTU, and closes it when the test ends.
func liveNIC(t *testing.T, name string, mtu uint32, flags map[string]string) *runscflags.NIC {
	t.Helper()
	return newLiveNIC(t, name, mtu, flags).NIC
}

// liveParts is a NIC built by newLiveNIC, with its parts.
type liveParts struct {
	*runscflags.NIC
	clock *faketime.ManualClock
	link  *qdisctest.Link // the NIC's link: the qdisc writes to it
	q     stack.QueueingDiscipline
	in    *ingress.Endpoint
}

// newLiveNIC is liveNIC, with the NIC's clock, link, qdisc and ingress
// shaper.
func newLiveNIC(t *testing.T, name string, mtu uint32, flags map[string]string) liveParts {
	t.Helper()
	cfg := configOf(t, flags)
	p := liveParts{clock: faketime.NewManualClock()}
	p.link = qdisctest.NewLink(p.clock)
	p.link.LinkMTU = mtu
	var err error
	if p.q, err = cfg.NewQueueingDiscipline(p.link, p.clock); err != nil {
		t.Fatal(err)
	}
	if p.in, err = cfg.NewIngress(p.link, p.clock); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.q != nil {
			p.q.Close()
		}
		if p.in != nil {
			p.in.Close()
		}
	})
	p.NIC = runscflags.NewNIC(name, cfg, p.link, p.clock, p.q, p.in)
	return p
}

// TestLiveChange changes NICs' shaping as `runsc qdisc change` does: what
// each shows after a change, and that a change one NIC refuses changes
// none.
func TestLiveChange(t *testing.T) {
	tbf := map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "100mbit", "qdisc-tbf-burst": "3028", "qdisc-tbf-latency": "50ms"}
	for _, tc := range []struct {
		name  string
		flags map[string]string
		args  []string
		want  []string // in what Show prints after the change
		err   string   // the refusal, "" for none
	}{
		{"tbf rate and burst", tbf, []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"},
			[]string{"qdisc tbf 8001: dev eth0 root refcnt 2 rate 10Mbit burst 12500b lat 50ms\n"}, ""},
		{"tbf packet rate added", tbf, []string{"--qdisc-tbf-pkt-rate=20000", "--qdisc-tbf-pkt-burst=32"},
			[]string{"pkt_rate 20000pps pkt_burst 32pkt"}, ""},
		{"tbf ceiling removed", tbf, []string{"--qdisc-tbf-rate=0"},
			[]string{"qdisc tbf 8001: dev eth0 root refcnt 2 rate none"}, ""},
		{"ceiling set on fifo", map[string]string{"qdisc": "fifo"}, []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"},
			[]string{"qdisc tbf 8001: dev eth0 root refcnt 2 rate 10Mbit burst 12500b", "qdisc fifo 8002: dev eth0 parent 8001:1 queues"}, ""},
		{"ceiling set on fq_codel", map[string]string{"qdisc": "fq_codel"}, []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"},
			[]string{"qdisc tbf 8001: dev eth0 root refcnt 2 rate 10Mbit burst 12500b", "qdisc fq_codel 8002: dev eth0 parent 8001:1 limit", "  maxpacket 0"}, ""},
		{"ingress set where none", map[string]string{"qdisc": "fifo"}, []string{"--qdisc-ingress-rate=10mbit", "--qdisc-ingress-burst=12500"},
			[]string{"qdisc ingress ffff: dev eth0 parent ffff:fff1 ----------------\n", "qdisc tbf 8002: dev eth0 parent ffff: rate 10Mbit burst 12500b"}, ""},
		{"ingress packet-only", map[string]string{"qdisc": "fifo"}, []string{"--qdisc-ingress-pkt-rate=20000", "--qdisc-ingress-pkt-burst=32"},
			[]string{"qdisc tbf 8002: dev eth0 parent ffff: pkt_rate 20000pps pkt_burst 32pkt"}, ""},
		{"burst below the MTU", tbf, []string{"--qdisc-tbf-burst=100"}, nil, "--qdisc-tbf-burst"},
		{"limit on a fifo's ceiling", map[string]string{"qdisc": "fifo"}, []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-limit=100000"}, nil, "--qdisc-tbf-limit"},
		{"the qdisc's kind", tbf, []string{"--qdisc=fifo"}, nil, "--qdisc cannot change"},
		// Linux keeps 1ms in 1024 ns units: tc shows it as 999us.
		{"fq_codel's knobs", map[string]string{"qdisc": "fq_codel"}, []string{"--qdisc-fq-codel-target=1ms", "--qdisc-fq-codel-limit=100", "--qdisc-fq-codel-ecn=false", "--qdisc-fq-codel-ce-threshold=2ms"},
			[]string{"qdisc fq_codel 8001: dev eth0 root refcnt 2 limit 100p flows 1024 quantum 1514 target 999us ce_threshold 2ms interval 100ms memory_limit 32Mb drop_batch 64\n"}, ""},
		{"fq_codel's knobs under a tbf", map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "10mbit", "qdisc-tbf-burst": "12500", "qdisc-tbf-child": "fq_codel"}, []string{"--qdisc-fq-codel-quantum=300", "--qdisc-tbf-rate=20mbit"},
			[]string{"qdisc tbf 8001: dev eth0 root refcnt 2 rate 20Mbit burst 12500b\n", "qdisc fq_codel 8002: dev eth0 parent 8001:1 limit 10240p flows 1024 quantum 300 "}, ""},
		{"fq_codel's flows", map[string]string{"qdisc": "fq_codel"}, []string{"--qdisc-fq-codel-flows=16"}, nil, "--qdisc-fq-codel-flows cannot change on a running sandbox"},
		{"fq_codel's knobs without fq_codel", tbf, []string{"--qdisc-fq-codel-target=1ms"}, nil, "no fq_codel to change"},
		{"no such flag", tbf, []string{"--qdisc-tbf-speed=1"}, nil, "no such qdisc flag"},
		{"not a flag", tbf, []string{"10mbit"}, nil, "--flag=value"},
		{"none", map[string]string{"qdisc": "none"}, []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500"}, nil, "no qdisc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := liveNIC(t, "eth0", 1500, tc.flags)
			before := n.Show()
			_, err := runscflags.Change([]*runscflags.NIC{n}, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Change(%v) = %v, want an error containing %q", tc.args, err, tc.err)
				}
				if after := n.Show(); after != before {
					t.Errorf("a refused change changed the NIC:\nbefore %s\nafter  %s", before, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("Change(%v): %v", tc.args, err)
			}
			got := n.Show()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("after Change(%v), Show:\n%s\nwant %q", tc.args, got, w)
				}
			}
		})
	}
}

// TestLiveChangeAllOrNone: a change valid on one NIC and refused on the
// other (a burst below the second's larger MTU) changes neither, and the
// error names the NIC and the flag.
func TestLiveChangeAllOrNone(t *testing.T) {
	tbf := map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "100mbit", "qdisc-tbf-burst": "12500"}
	small := liveNIC(t, "eth0", 1500, tbf)
	jumbo := liveNIC(t, "eth1", 9000, tbf)
	nics := []*runscflags.NIC{small, jumbo}
	before := []string{small.Show(), jumbo.Show()}
	_, err := runscflags.Change(nics, []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=3028"})
	if err == nil || !strings.Contains(err.Error(), `NIC "eth1"`) || !strings.Contains(err.Error(), "--qdisc-tbf-burst") {
		t.Fatalf("Change: %v; want a refusal naming eth1 and --qdisc-tbf-burst", err)
	}
	for i, n := range nics {
		if got := n.Show(); got != before[i] {
			t.Errorf("%s changed though the change was refused:\nbefore %s\nafter  %s", n.Name, before[i], got)
		}
	}
	cfgs, err := runscflags.Change(nics, []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=9014"})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nics {
		if cfgs[i].TBFRate != 1_250_000 || !strings.Contains(n.Show(), "tbf 8001: dev "+n.Name+" root refcnt 2 rate 10Mbit burst 9014b") {
			t.Errorf("%s after the change: %+v\n%s", n.Name, cfgs[i], n.Show())
		}
	}
}

// TestLiveArgs: the flags a checkpoint saves give the changed ceilings
// back on a NIC built from the flags the sandbox was started with.
func TestLiveArgs(t *testing.T) {
	start := map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "100mbit", "qdisc-tbf-burst": "3028", "qdisc-tbf-latency": "50ms"}
	changed := liveNIC(t, "eth0", 1500, start)
	if _, err := runscflags.Change([]*runscflags.NIC{changed}, []string{"--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-ingress-pkt-rate=1000", "--qdisc-ingress-pkt-burst=8"}); err != nil {
		t.Fatal(err)
	}
	cfg := changed.Config()
	restored := liveNIC(t, "eth0", 1500, start)
	if _, err := runscflags.Change([]*runscflags.NIC{restored}, cfg.LiveArgs()); err != nil {
		t.Fatalf("Change(LiveArgs() = %v): %v", cfg.LiveArgs(), err)
	}
	if got, want := restored.Show(), changed.Show(); got != want {
		t.Errorf("restored from LiveArgs %v:\n%s\nwant\n%s", cfg.LiveArgs(), got, want)
	}
}
