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
// network worse (Config.Tighten), a ceiling over it (SetCeiling), and
// netem grafted as a child under a shaper (newChild: an htb class's
// leaf, a tbf's child).
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
	Queue: newChild,
	Ceiling: func(q *Discipline, gate qdisc.Gate, maxSize uint32) error {
		q.SetCeiling(gate, maxSize)
		return nil
	},
}.Kind()

func init() { qdisc.Register(Kind) }

// newChild is netem as the queue under another kind's shaper (Kind.Queue),
// as `tc qdisc add dev eth0 parent 1:20 netem delay 100ms` grafts it under
// an htb class: a Queue with no clock of its own, timed by the now its
// parent passes to Enqueue, Peek and Dequeue (so not ArrivalBlind), whose
// NextEvent the parent waits for, as Linux's netem's watchdog reschedules
// the root qdisc when its packet is due. mtu is not needed. It takes the
// send path's zero path: where it corrupts a packet it takes the transport
// checksums as complete (it does not know the link's checksum offload).
// It orphans what it holds for a time, as netem at the root does
// (orphan.go): its parent's lane hands it the sender's packet.
func newChild(o Options, _ uint32) (qdisc.Queue, error) {
	q, err := NewQueue(Config(o))
	if err != nil {
		return nil, err
	}
	q.orphanOnEnqueue = true
	return q, nil
}
