package runscflags_test

import (
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	runscflags "github.com/netqdisc/netqdisc/runsc-flags"
)

// TestIngressKinds: --qdisc-ingress=KIND with --qdisc-ingress-KIND's
// words builds the receive path with that kind and those words (its
// String names the kind and shows the words), and every packet a link
// delivers reaches the stack above, intact and in order (one flow's),
// with every reference released once the receive path is closed.
func TestIngressKinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		kind string   // what the receive path's qdisc's String starts with
		says []string // and what else it says, of the words given
	}{
		{
			name: "fifo",
			args: []string{"--qdisc-ingress=fifo", "--qdisc-ingress-fifo=limit 10"},
			kind: "fifo ",
			says: []string{"limit 10p"},
		},
		{
			name: "fifo, its defaults",
			args: []string{"--qdisc-ingress=fifo"},
			kind: "fifo ",
			says: []string{"limit 1000p"},
		},
		{
			name: "fq_codel",
			args: []string{"--qdisc-ingress=fq_codel", "--qdisc-ingress-fq-codel=limit 100 target 2ms"},
			kind: "fq_codel ",
			says: []string{"limit 100p", "target 2ms"},
		},
		{
			name: "fq_codel, its defaults",
			args: []string{"--qdisc-ingress=fq_codel"},
			kind: "fq_codel ",
			says: []string{"limit 10240p", "target 5ms"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseArgs(tc.args...)
			if err != nil {
				t.Fatalf("%q: %v", tc.args, err)
			}
			clock := faketime.NewManualClock()
			link, up := qdisctest.NewLink(clock), qdisctest.NewLink(clock)
			e, err := c.NewIngress(link, clock)
			if err != nil {
				t.Fatalf("%q: NewIngress: %v", tc.args, err)
			}
			defer e.Close()
			e.Attach(up)
			w := e.Whole()
			if w == nil {
				t.Fatalf("%q: the receive path has no qdisc of its own (Whole() is nil); want %s", tc.args, tc.kind)
			}
			if s := w.String(); !strings.HasPrefix(s, tc.kind) {
				t.Errorf("%q: the receive path's qdisc is %q; want %s", tc.args, s, strings.TrimSpace(tc.kind))
			}
			for _, s := range tc.says {
				if !strings.Contains(w.String(), s) {
					t.Errorf("%q: the receive path's qdisc is %q; want it to say %q", tc.args, w.String(), s)
				}
			}

			// No more than the smallest limit above (fifo's 10 a lane), so
			// that none is dropped however slowly the lane drains.
			const n = 10
			var pkts []*stack.PacketBuffer
			for i := range n {
				pkt := qdisctest.MakePacket(200+i, 7, uint64(i)) // one flow
				pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
				pkts = append(pkts, pkt)
				e.DeliverNetworkPacket(header.IPv4ProtocolNumber, pkt)
			}
			qdisctest.WaitQuiescent(t, e)
			recs := up.Records()
			if len(recs) != n {
				t.Errorf("%q: %d packets reached the stack; want all %d", tc.args, len(recs), n)
			}
			for i, r := range recs {
				if r.Seq != uint64(i) {
					t.Errorf("%q: delivery %d is packet %d; want %d, in order", tc.args, i, r.Seq, i)
					break
				}
			}
			if err := up.Err(); err != nil {
				t.Errorf("%q: a packet reached the stack changed: %v", tc.args, err)
			}
			if p, _ := link.Count(); p != 0 {
				t.Errorf("%q: %d packets were written back to the link; want none", tc.args, p)
			}
			if s := e.Stats(); s.Packets != n || s.Drops != 0 || s.BacklogPackets != 0 {
				t.Errorf("%q: Stats %+v; want %d sent, none dropped or queued", tc.args, s, n)
			}
			e.Close()
			qdisctest.CheckReleased(t, pkts)
		})
	}
}

// TestIngressKindRefused: a --qdisc-ingress that names no registered
// kind is refused, listing the choices; one that names a kind while the
// receive path's tbf flags shape it with tbf is refused naming both
// flags, so that the operator knows which to drop; words for a kind not
// in force, or that the kind does not read, are refused naming their
// flag.
func TestIngressKindRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{
			args: []string{"--qdisc-ingress=nosuch"},
			says: []string{"--qdisc-ingress=nosuch", "no such qdisc", "none", "fifo", "fq_codel", "tbf"},
		},
		{
			args: []string{"--qdisc-ingress=fifo", "--qdisc-ingress-rate=1mbit"},
			says: []string{"--qdisc-ingress=fifo", "--qdisc-ingress-rate"},
		},
		{
			args: []string{"--qdisc-ingress=fq_codel", "--qdisc-ingress-rate=1mbit", "--qdisc-ingress-burst=10k"},
			says: []string{"--qdisc-ingress=fq_codel", "--qdisc-ingress-rate"},
		},
		{
			args: []string{"--qdisc-ingress=fifo", "--qdisc-ingress-fifo=limit 0"},
			says: []string{"qdisc-ingress-fifo", `limit "0"`},
		},
		{
			args: []string{"--qdisc-ingress=fifo", "--qdisc-ingress-fifo=burst 10"},
			says: []string{"qdisc-ingress-fifo", `unknown word "burst"`},
		},
		{
			args: []string{"--qdisc-ingress=fifo", "--qdisc-ingress-fq-codel=limit 100"},
			says: []string{"--qdisc-ingress-fq-codel", "--qdisc-ingress=fq_codel"},
		},
		{
			args: []string{"--qdisc-ingress-fifo=limit 10"},
			says: []string{"--qdisc-ingress-fifo", "--qdisc-ingress=fifo"},
		},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c, err := parseArgs(tc.args...)
			if err == nil {
				// A runtime that sets the Config by other means meets the
				// same check when it builds the receive path.
				clock := faketime.NewManualClock()
				e, nerr := c.NewIngress(qdisctest.NewLink(clock), clock)
				if nerr == nil {
					e.Close()
				}
				err = nerr
			}
			if err == nil {
				t.Fatalf("%q was taken; want an error saying %q", tc.args, tc.says)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q: %q; want an error saying %q", tc.args, err, s)
				}
			}
		})
	}
}

// TestKindOfTheTablesKinds: the kinds the table shapes with flags of
// their own (tbf, fq_codel, cake) are the registry's too, with their
// options as the flags give them: a runtime reads cake's tin metrics from
// the NIC as it reads any kind's.
func TestKindOfTheTablesKinds(t *testing.T) {
	for _, tc := range []struct {
		flags map[string]string
		d     runscflags.Ceiling
		kind  string
		words string // what the kind's options say
	}{
		{map[string]string{"qdisc": "tbf", "qdisc-tbf-rate": "10mbit", "qdisc-tbf-burst": "32kb"}, runscflags.EgressCeiling, "tbf", "rate 1250000bps burst 32768b"},
		{map[string]string{"qdisc-ingress-rate": "1mbit", "qdisc-ingress-burst": "10kb"}, runscflags.IngressCeiling, "tbf", "rate 125000bps burst 10240b"},
		{map[string]string{"qdisc": "fq_codel", "qdisc-fq-codel-limit": "500"}, runscflags.EgressCeiling, "fq_codel", "limit 500"},
		{map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 10mbit besteffort"}, runscflags.EgressCeiling, "cake", "bandwidth 10Mbit besteffort"},
	} {
		c := configOf(t, tc.flags)
		k, o, ok := c.KindOf(tc.d)
		if !ok || k.Name != tc.kind || !strings.Contains(o.String(), tc.words) {
			t.Errorf("%v: KindOf = %s %v, %v; want %s with %q", tc.flags, k.Name, o, ok, tc.kind, tc.words)
		}
	}
	if _, _, ok := configOf(t, map[string]string{"qdisc": "none"}).KindOf(runscflags.EgressCeiling); ok {
		t.Error("KindOf with --qdisc=none: a kind; want none")
	}

	p := newLiveNIC(t, "eth0", 1500, map[string]string{"qdisc": "cake", "qdisc-cake": "bandwidth 10mbit besteffort"})
	egress, _ := p.Samples()
	if egress.Kind != "cake" || len(egress.Samples) == 0 {
		t.Fatalf("Samples: %+v; want cake's tin counters", egress)
	}
	for _, s := range egress.Samples {
		if s.Member != "0" {
			t.Errorf("sample %+v: want tin 0 only, of besteffort's one tin", s)
		}
	}
}
