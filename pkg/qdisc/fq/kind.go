package fq

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Options are fq's words as a runtime holds them (qdisc.Options).
type Options Config

// String writes o in tc-fq's words (Config.Words).
func (o Options) String() string { return Config(o).Words() }

// Kind is fq as a runtime knows it (qdisc.Register): tc-fq's words, both
// paths, change in place, a pod's words held to the operator's, and a
// child under another kind's shaper (Queue: NewQueue, a tbf's default).
var Kind = qdisc.Typed[Options, *Discipline]{
	Name:    "fq",
	Usage:   "Fair queueing by flow, Linux's fq without pacing, in tc-fq's words: limit, flow_limit, quantum, initial_quantum, refill_delay, nopacing.",
	Example: "flow_limit 100 quantum 3028",
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
	Queue: func(o Options, mtu uint32) (qdisc.Queue, error) {
		q, err := NewQueue(Config(o), mtu, nil)
		if err != nil {
			return nil, err
		}
		return q, nil
	},
}.Kind()

func init() { qdisc.Register(Kind) }
