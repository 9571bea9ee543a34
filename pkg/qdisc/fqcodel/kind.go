package fqcodel

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Kind is fq_codel as a runtime knows it (qdisc.Register): tc-fq_codel's
// words (Parse), both paths, change in place as fq_codel_change changes
// it (CheckChange first; Changed: a change's words change only what they
// name), a pod's words held to the operator's (Config.Tighten), a child
// under another kind's shaper (Queue: NewQueue), and a ceiling taken over
// its flows in place (Ceiling: SetCeiling). It has no ceiling of its own
// for a Kubernetes bandwidth to lower.
var Kind = qdisc.Typed[Options, *Discipline]{
	Name:    "fq_codel",
	Usage:   "Fair queueing with CoDel in tc-fq_codel's words: limit, flows, target, interval, quantum, memory_limit, drop_batch, ecn or noecn, ce_threshold.",
	Example: "target 5ms interval 100ms",
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
	CheckChange: func(q *Discipline, o Options) error { return q.CheckChange(Config(o)) },
	Changed: func(cur Options, words string) (Options, error) {
		c, err := Config(cur).Changed(words)
		return Options(c), err
	},
	Queue: func(o Options, mtu uint32) (qdisc.Queue, error) {
		q, err := NewQueue(Config(o), mtu, nil)
		if err != nil {
			return nil, err
		}
		return q, nil
	},
	Ceiling: func(q *Discipline, gate qdisc.Gate, maxSize uint32) error {
		q.SetCeiling(gate, maxSize)
		return nil
	},
}.Kind()

func init() { qdisc.Register(Kind) }

var _ qdisc.Discipline = (*Discipline)(nil)
