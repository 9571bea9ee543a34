package tbf

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Kind is tbf as a runtime knows it (qdisc.Register): tc-tbf's words
// (Parse), both paths (New; NewTo for the receive path), change in place,
// a pod's words held to the operator's (Config.Tighten) and a Kubernetes
// bandwidth as a lower rate (Config.Fit).
var Kind = qdisc.Kind{
	Name:    "tbf",
	Usage:   "A token bucket filter in tc-tbf's words: rate, burst, latency or limit, peakrate and mtu, mpu, overhead, linklayer.",
	Example: "rate 10mbit burst 32k latency 25ms",
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
	Fit: func(o qdisc.Options, bandwidth uint64) (qdisc.Options, error) {
		return Options(Config(o.(Options)).Fit(bandwidth)), nil
	},
}

func init() { qdisc.Register(Kind) }

var _ qdisc.Discipline = (*Discipline)(nil)
