package runscflags

import (
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestFlowQueuesKeepTheFIFOBound: a pod that puts fq or fq_codel in place
// of the operator's byte FIFO under the tbf keeps the FIFO's bound, 1000
// full-size packets, where neither set one: on a host-GSO link fq's own
// default would be 1000 packets of 64 KiB, 43 times the FIFO's. A bound
// the pod gives, the operator's override and the operator's own fq are
// left as they are.
func TestFlowQueuesKeepTheFIFOBound(t *testing.T) {
	fifoOp := []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=12500", "--qdisc-tbf-child=fifo"}
	for _, tc := range []struct {
		name      string
		operator  []string
		set       map[string]string
		wantLimit uint32 // the tbf's, on a host-GSO link
		wantMem   uint64 // fq_codel's memory limit flag (0: unset)
		notice    bool
	}{
		{"fq over the fifo", fifoOp, a("qdisc-tbf-child", "fq"), DefaultQueueBytes, 0, true},
		{"fq_codel over the fifo", fifoOp, a("qdisc-tbf-child", "fq_codel"), 0, DefaultQueueBytes, true},
		{"fq over the fifo, with the pod's limit", fifoOp, map[string]string{AnnotationPrefix + FlagTBFChild: "fq", AnnotationPrefix + FlagTBFLimit: "100000"}, 100000, 0, false},
		{"fq_codel over the fifo, with the pod's memory limit", fifoOp, map[string]string{AnnotationPrefix + FlagTBFChild: "fq_codel", AnnotationPrefix + FlagFQCoDelMemLimit: "1000000"}, 0, 1000000, false},
		{"fq over the fifo, the operator's override", append(fifoOp, "--allow-flag-override"), a("qdisc-tbf-child", "fq"), tbf.DefaultLimitPackets * (65536 + 14), 0, false},
		{"the operator's fq", fifoOp[:3], a("qdisc-tbf-rate", "5mbit"), tbf.DefaultLimitPackets * (65536 + 14), 0, false},
		{"the fifo kept", fifoOp, a("qdisc-tbf-rate", "5mbit"), DefaultQueueBytes, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := annotate(t, tc.operator, tc.set, nil)
			if c.FQMemoryLimit != tc.wantMem {
				t.Errorf("--%s=%d, want %d", FlagFQCoDelMemLimit, c.FQMemoryLimit, tc.wantMem)
			}
			noticed := strings.Contains(strings.Join(c.Notices, "\n"), "keeps its bound")
			if noticed != tc.notice {
				t.Errorf("notices %q: a notice of the bound kept is %v, want %v", c.Notices, noticed, tc.notice)
			}
			if tc.wantLimit == 0 {
				return
			}
			clock := faketime.NewManualClock()
			link := qdisctest.NewLink(clock)
			link.GSO, link.GSOMax = stack.HostGSOSupported, 65536
			q, err := c.NewQueueingDiscipline(link, clock)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			if got := q.(*tbf.Discipline).Config().Limit; got != tc.wantLimit {
				t.Errorf("the tbf's limit is %d bytes, want %d", got, tc.wantLimit)
			}
		})
	}
}
