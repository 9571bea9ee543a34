package fqcodel

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Kind is fq_codel as a runtime knows it (qdisc.Register): tc-fq_codel's
// words (Parse), both paths, change in place, and a pod's words held to
// the operator's (Config.Tighten). It has no ceiling for a Kubernetes
// bandwidth to lower.
var Kind = qdisc.Kind{
	Name:    "fq_codel",
	Usage:   "Fair queueing with CoDel in tc-fq_codel's words: limit, flows, target, interval, quantum, memory_limit, drop_batch, ecn or noecn, ce_threshold.",
	Example: "target 5ms interval 100ms",
	Parse: func(words string) (qdisc.Options, error) {
		c, err := Parse(words)
		if err != nil {
			return nil, err
		}
		return Options(c), nil
	},
	New: func(lower stack.LinkEndpoint, clock tcpip.Clock, o qdisc.Options) (qdisc.Discipline, error) {
		return qdisc.AsDiscipline(New(lower, clock, Config(o.(Options))))
	},
	NewTo: func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, o qdisc.Options) (qdisc.Discipline, error) {
		return qdisc.AsDiscipline(NewTo(out, link, clock, Config(o.(Options))))
	},
	Change: func(q qdisc.Discipline, o qdisc.Options) error { return q.(*Discipline).Change(Config(o.(Options))) },
	Tighten: func(operator, pod qdisc.Options) (qdisc.Options, error) {
		c, err := Config(operator.(Options)).Tighten(Config(pod.(Options)))
		if err != nil {
			return nil, err
		}
		return Options(c), nil
	},
}

func init() { qdisc.Register(Kind) }

var _ qdisc.Discipline = (*Discipline)(nil)
