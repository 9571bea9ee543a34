package mmlink

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Options are mmlink's words as a runtime holds them (qdisc.Options).
type Options Config

// String writes o in mmlink's words (Config.Words).
func (o Options) String() string { return Config(o).Words() }

// Kind is mmlink as a runtime knows it (qdisc.Register): its words, both
// paths, a change in place, and a ceiling over it (SetCeiling). Tighten is nil: the trace is the
// operator's, and a pod may not change it at all (a pod's words would
// name a file for the runtime to read, and a shorter queue is no more the
// pod's to choose than the link is).
var Kind = qdisc.Typed[Options, *Discipline]{
	Name:    "mmlink",
	Usage:   "A trace-driven link, mahimahi's mm-link: delivery opportunities at the times of a trace in mahimahi's format (a file, or the built-in lte or 3g), repeating, behind a drop-tail queue: " + Usage + ".",
	Example: "trace lte limit 100",
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
	Ceiling: func(q *Discipline, gate qdisc.Gate, maxSize uint32) error {
		q.SetCeiling(gate, maxSize)
		return nil
	},
}.Kind()

func init() { qdisc.Register(Kind) }
