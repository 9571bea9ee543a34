package tbf_test

import (
	"errors"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fq"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestKindGraft: tbf's Graft asks the runtime for the child it chooses
// (child("")) and builds it for the link's frame under the buckets, as
// `tc qdisc add dev eth0 parent 1: KIND` grafts one: fq_codel or fq
// become the tbf's one queue (one lane: the child spreads flows
// itself), which the tbf New builds shows as its child; fifo, or no
// kind, leaves the tbf's own byte FIFO and its lanes; a child that
// cannot be built is the error, and nothing is grafted.
func TestKindGraft(t *testing.T) {
	kind := func(k qdisc.Kind) *qdisc.Kind { return &k }
	base := tbf.Options{Rate: 1250000, Burst: 32768, Lanes: 4}
	for _, tc := range []struct {
		name  string
		child qdisc.Child
		lanes int    // the tbf's lanes
		shows string // the child tc shows under it, "" for none
		says  string // for a refusal, what it says
	}{
		{name: "fq_codel", child: qdisc.Child{Kind: kind(fqcodel.Kind), Options: fqcodel.Options{Limit: 100}}, lanes: 1, shows: "fq_codel"},
		{name: "fq", child: qdisc.Child{Kind: kind(fq.Kind), Options: fq.Options{}}, lanes: 1, shows: "fq"},
		{name: "fifo", child: qdisc.Child{Kind: kind(fifo.Kind), Options: fifo.Options{}}, lanes: 4},
		{name: "none", child: qdisc.Child{}, lanes: 4},
		{name: "tbf under tbf", child: qdisc.Child{Kind: kind(tbf.Kind), Options: base}, says: "tbf cannot be grafted"},
		{name: "fq_codel of too many flows", child: qdisc.Child{Kind: kind(fqcodel.Kind), Options: fqcodel.Options{Flows: fqcodel.MaxFlows + 1}}, says: "flows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			o, err := tbf.Kind.Graft(base, 1514, func(k string) (qdisc.Child, error) {
				asked = append(asked, k)
				return tc.child, nil
			})
			if len(asked) != 1 || asked[0] != "" {
				t.Errorf("Graft asked for %q; want the runtime's choice, once (\"\")", asked)
			}
			if tc.says != "" {
				if err == nil || o != nil || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("Graft = %v, %v; want nil and an error saying %q", o, err, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatalf("Graft: %v", err)
			}
			clock := faketime.NewManualClock()
			q, err := tbf.Kind.New(qdisctest.NewLink(clock), clock, o)
			if err != nil {
				t.Fatalf("New(grafted): %v", err)
			}
			defer q.Close()
			if q.Lanes() != tc.lanes {
				t.Errorf("the tbf has %d lanes; want %d", q.Lanes(), tc.lanes)
			}
			s := q.Show()
			switch {
			case tc.shows == "" && len(s.Children) != 0:
				t.Errorf("Show() = %+v; want no child", s)
			case tc.shows != "" && (len(s.Children) != 1 || s.Children[0].Kind != tc.shows):
				t.Errorf("Show() = %+v; want %s under the tbf", s, tc.shows)
			}
		})
	}
	refuse := errors.New("no child here")
	if o, err := tbf.Kind.Graft(base, 1514, func(string) (qdisc.Child, error) { return qdisc.Child{}, refuse }); o != nil || !errors.Is(err, refuse) {
		t.Errorf("Graft with the runtime refusing = %v, %v; want nil and its error", o, err)
	}
}

// TestKindCheckChange: tbf's CheckChange refuses, naming the setting by
// its qdisc.SettingError, what Change would refuse on the running tbf
// (its lanes), and changes nothing, so that a runtime checks every NIC
// before it changes any.
func TestKindCheckChange(t *testing.T) {
	clock := faketime.NewManualClock()
	o := tbf.Options{Rate: 1250000, Burst: 32768}
	q, err := tbf.Kind.New(qdisctest.NewLink(clock), clock, o)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	faster := o
	faster.Rate *= 2
	if err := tbf.Kind.CheckChange(q, faster); err != nil {
		t.Errorf("CheckChange(a faster rate): %v", err)
	}
	wider := o
	wider.Lanes = 3
	err = tbf.Kind.CheckChange(q, wider)
	var se qdisc.SettingError
	if !errors.As(err, &se) {
		t.Fatalf("CheckChange(3 lanes) = %v; want a qdisc.SettingError", err)
	}
	if kind, name, msg := se.Setting(); kind != "tbf" || name != "lanes" || !strings.Contains(msg, "lanes") {
		t.Errorf("Setting() = %q %q %q; want tbf's lanes", kind, name, msg)
	}
	if got := q.(*tbf.Discipline).Config(); got.Rate != o.Rate {
		t.Errorf("CheckChange changed the rate to %d", got.Rate)
	}
}
