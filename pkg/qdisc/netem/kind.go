package netem

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// Options are netem's words as a runtime holds them (qdisc.Options).
type Options Config

// String writes o in tc-netem's words (Config.Words).
func (o Options) String() string { return Config(o).Words() }

// Kind is netem as a runtime knows it (qdisc.Register): tc-netem's words,
// both paths, change in place, a pod's words that only make its own
// network worse (Config.Tighten), and a ceiling over it (SetCeiling).
var Kind = qdisc.Typed[Options, *Discipline]{
	Name:    "netem",
	Usage:   "Network emulator, Linux's netem, in tc-netem's words: limit, delay TIME [JITTER [CORRELATION]], distribution, loss [random|state|gemodel|average P burst N], duplicate, reorder, gap, rate, corrupt, slot, seed, ecn.",
	Example: "delay 100ms 10ms loss 1%",
	Parse: func(words string) (Options, error) {
		c, err := Parse(words)
		return Options(c), err
	},
	ParsePod: func(words string) (Options, error) {
		c, err := ParsePod(words)
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
	Ceiling: func(q *Discipline, gate qdisc.Gate, maxSize uint32) error {
		q.SetCeiling(gate, maxSize)
		return nil
	},
}.Kind()

func init() { qdisc.Register(Kind) }
