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
var Kind = qdisc.Typed[Options, *Discipline]{
	Name:    "tbf",
	Usage:   "A token bucket filter in tc-tbf's words: rate, burst, latency or limit, peakrate and mtu, mpu, overhead, linklayer.",
	Example: "rate 10mbit burst 32k latency 25ms",
	Parse: func(words string) (Options, error) {
		c, err := Parse(words)
		return Options(c), err
	},
	New: func(lower stack.LinkEndpoint, clock tcpip.Clock, o Options) (*Discipline, error) {
		return New(lower, clock, Config(o))
	},
	NewTo: func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, o Options) (*Discipline, error) {
		return NewTo(out, link, clock, Config(o))
	},
	Change: func(q *Discipline, o Options) error { return q.Change(Config(o)) },
	Tighten: func(operator, pod Options) (Options, error) {
		c, err := Config(operator).Tighten(Config(pod))
		return Options(c), err
	},
	Fit: func(o Options, bandwidth uint64) (Options, error) { return Options(Config(o).Fit(bandwidth)), nil },
}.Kind()

func init() { qdisc.Register(Kind) }

var _ qdisc.Discipline = (*Discipline)(nil)
