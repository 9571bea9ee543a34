package tbf

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Kind is tbf as a runtime knows it (qdisc.Register): tc-tbf's words
// (Parse), both paths (New; NewTo for the receive path), change in place
// (checked first by CheckChange), a pod's words held to the operator's
// (Config.Tighten), a Kubernetes bandwidth as a lower rate (Config.Fit),
// and a child queue a runtime grafts under its buckets (Graft: the
// runtime chooses its kind, child(""); one lane then, as the child
// spreads flows itself).
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
	Fit:         func(o Options, bandwidth uint64) (Options, error) { return Options(Config(o).Fit(bandwidth)), nil },
	CheckChange: func(q *Discipline, o Options) error { return q.CheckChange(Config(o)) },
	Graft:       graft,
}.Kind()

// graft returns o with the child a runtime grafts under the buckets
// (child(""): its kind is the runtime's choice) built for frames of mtu
// bytes, and one lane with it; the child's kind nil, or one whose Queue
// is nil (fifo), leaves the tbf's own byte FIFO and its lanes.
func graft(o Options, mtu uint32, child func(kind string) (qdisc.Child, error)) (Options, error) {
	c, err := child("")
	if err != nil {
		return Options{}, err
	}
	q, err := c.NewQueue(mtu)
	if err != nil {
		return Options{}, err
	}
	if q != nil {
		o.Child, o.Lanes = q, 1
	}
	return o, nil
}

func init() { qdisc.Register(Kind) }

var _ qdisc.Discipline = (*Discipline)(nil)
