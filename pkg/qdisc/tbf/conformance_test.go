package tbf_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf/tbftest"
)

const (
	mbit = tbftest.Mbit
	gbit = tbftest.Gbit
)

var nowNS = tbftest.NowNS

// discipline is a tbf as the lockstep harness drives it.
type discipline struct{ *tbf.Discipline }

func (d discipline) Write(pkt *stack.PacketBuffer) bool { return d.WritePacket(pkt) == nil }
func (d discipline) Limit() uint32                      { return d.Config().Limit }

func makeDiscipline(t *testing.T, cfg tbf.Config, clock tcpip.Clock, link *qdisctest.Link) tbftest.Shaper {
	t.Helper()
	d, err := tbf.New(link, clock, cfg)
	if err != nil {
		t.Fatalf("tbf.New(%+v): %v", cfg, err)
	}
	t.Cleanup(d.Close)
	return discipline{d}
}

// TestConformance holds the tbf to the Linux model (package tbftest): the
// same packets leave or drop at the same instants.
func TestConformance(t *testing.T) {
	for _, tc := range tbftest.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			recs := tbftest.RunConformance(t, makeDiscipline, tc.Cfg, tc.LinkMTU, tc.Arrivals)
			if len(recs) == 0 {
				t.Fatal("nothing was sent")
			}
		})
	}
}
