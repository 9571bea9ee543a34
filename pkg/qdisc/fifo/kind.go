package fifo

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// DefaultLimit is the packets a lane holds unless told: runsc's 1000.
const DefaultLimit = 1000

// Options are a fifo's words: "limit 1000", the packets each lane holds
// (tc-pfifo's limit), and "queues 2", its lanes (0: one per GOMAXPROCS,
// as runsc builds fifo).
type Options struct {
	Limit, Queues int
}

// String writes o in Parse's words.
func (o Options) String() string {
	s := "limit " + strconv.Itoa(o.limit())
	if o.Queues != 0 {
		s += " queues " + strconv.Itoa(o.Queues)
	}
	return s
}

// limit is the packets each lane holds.
func (o Options) limit() int {
	if o.Limit == 0 {
		return DefaultLimit
	}
	return o.Limit
}

// queues is the lanes to build.
func (o Options) queues() int {
	if o.Queues == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return o.Queues
}

// maxCount bounds limit and queues: past it the lanes' rings would not
// fit memory.
const maxCount = 1 << 20

// Parse reads a fifo's words: "limit N" (N packets, "1000p" as tc-pfifo
// prints it) and "queues N"; "fifo" or "pfifo" first is ignored.
func Parse(words string) (Options, error) {
	var o Options
	w := strings.Fields(words)
	for i := 0; i < len(w); i++ {
		if (w[i] == "fifo" || w[i] == "pfifo") && i == 0 {
			continue
		}
		key := w[i]
		if key != "limit" && key != "queues" {
			return Options{}, fmt.Errorf("fifo: unknown word %q: want limit (packets a lane) or queues (lanes)", key)
		}
		if i+1 == len(w) {
			return Options{}, fmt.Errorf("fifo: %q needs a value", key)
		}
		i++
		n, err := strconv.Atoi(strings.TrimSuffix(w[i], "p"))
		if err != nil || n < 1 || n > maxCount {
			return Options{}, fmt.Errorf("fifo: %s %q: give a whole number from 1 to %d", key, w[i], maxCount)
		}
		if key == "limit" {
			o.Limit = n
		} else {
			o.Queues = n
		}
	}
	return o, nil
}

// Kind is fifo as a runtime knows it (qdisc.Register): runsc's default
// qdisc, on either path. A pod may only shorten its queues. It takes a
// ceiling over its lanes in place (Ceiling: SetCeiling) and, grafted
// under a shaper, is the shaper's own byte FIFO (Queue: nil), as Linux's
// tbf keeps a bfifo unless a child is grafted.
var Kind = qdisc.Typed[Options, *Discipline]{
	Name:    "fifo",
	Usage:   "First in, first out, one queue a lane: limit N (packets a lane, 1000), queues N (lanes, one per CPU).",
	Example: "limit 1000",
	Parse:   Parse,
	New: func(lower stack.LinkEndpoint, clock tcpip.Clock, o Options) (*Discipline, error) {
		return NewWithClock(lower, clock, o.queues(), o.limit()), nil
	},
	NewTo: func(out stack.LinkWriter, link stack.LinkEndpoint, clock tcpip.Clock, o Options) (*Discipline, error) {
		return NewTo(out, link, clock, o.queues(), o.limit()), nil
	},
	Tighten: func(op, pod Options) (Options, error) {
		if pod.limit() > op.limit() {
			return Options{}, fmt.Errorf("fifo: limit %d is above the operator's %d; give %d or less", pod.limit(), op.limit(), op.limit())
		}
		pod.Queues = op.Queues
		return pod, nil
	},
	Queue: func(Options, uint32) (qdisc.Queue, error) { return nil, nil },
	Ceiling: func(q *Discipline, gate qdisc.Gate, maxSize uint32) error {
		q.SetCeiling(gate, maxSize)
		return nil
	},
}.Kind()

func init() { qdisc.Register(Kind) }

var _ qdisc.Discipline = (*Discipline)(nil)
