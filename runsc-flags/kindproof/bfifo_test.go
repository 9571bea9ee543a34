package kindproof_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
)

// bfifo is the test's own kind: one queue that drops a packet that would
// take its backlog past limit bytes, as Linux's bfifo. All it knows of a
// runtime is its qdisc.Kind; everything else it gets from the registry.

// bfifoOptions are bfifo's words: "limit 3000" (bytes; "3000b" as tc
// prints it).
type bfifoOptions struct{ limit uint64 }

// bfifoDefault is the limit unless told: 1000 full-sized frames.
const bfifoDefault = 1000 * 1514

// String writes o in parseBfifo's words.
func (o bfifoOptions) String() string { return "limit " + strconv.FormatUint(o.limit, 10) }

// parseBfifo reads "limit N" (bytes, 1 to 2^32-1); "" is the default.
func parseBfifo(words string) (bfifoOptions, error) {
	o := bfifoOptions{limit: bfifoDefault}
	w := strings.Fields(words)
	for i := 0; i < len(w); i += 2 {
		if w[i] != "limit" {
			return bfifoOptions{}, fmt.Errorf("bfifo: unknown word %q: want limit BYTES", w[i])
		}
		if i+1 == len(w) {
			return bfifoOptions{}, errors.New("bfifo: limit needs a value in bytes")
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(w[i+1], "b"), 10, 32)
		if err != nil || n == 0 {
			return bfifoOptions{}, fmt.Errorf("bfifo: limit %q: give bytes from 1 to 4294967295", w[i+1])
		}
		o.limit = n
	}
	return o, nil
}

// bfifo is a running bfifo: one lane of package dispatch, bounded in
// bytes, which sends in order on either path.
type bfifo struct {
	lanes dispatch.Group
	limit atomic.Uint64
	// restored are the drops a checkpoint carried (Restore): Stats counts
	// them as Linux's counters would have, had the qdisc not stopped.
	restored atomic.Uint64
}

// newBfifo builds a bfifo writing to out; queueOnly for the receive path.
func newBfifo(out stack.LinkWriter, clock tcpip.Clock, o bfifoOptions, queueOnly bool) (*bfifo, error) {
	b := &bfifo{}
	limit := o.limit
	b.limit.Store(limit)
	b.lanes.Init(1, dispatch.Config{Lower: out, MaxPackets: 1 << 20, MaxBytes: limit, Clock: clock, QueueOnly: queueOnly})
	b.lanes.Start()
	return b, nil
}

func (b *bfifo) WritePacket(pkt *stack.PacketBuffer) tcpip.Error { return b.lanes.Lane(0).Enqueue(pkt) }
func (b *bfifo) Enqueue(pkt *stack.PacketBuffer, _ uint32) tcpip.Error {
	return b.lanes.Lane(0).Enqueue(pkt)
}
func (b *bfifo) Close()          { b.lanes.Close() }
func (b *bfifo) Quiescent() bool { return b.lanes.Quiescent() }
func (b *bfifo) Lanes() int      { return 1 }
func (b *bfifo) String() string  { return fmt.Sprintf("bfifo limit %db", b.limit.Load()) }

// Stats are the lane's, with the drops a checkpoint carried.
func (b *bfifo) Stats() qdisc.Stats {
	s := b.lanes.Stats()
	s.Drops += b.restored.Load()
	return s
}

// Show is `tc -s qdisc show`'s line: "bfifo limit 3000b", under the tbf
// of a ceiling over it (Ceiling).
func (b *bfifo) Show() qdisc.Showing {
	s := qdisc.Showing{Stats: b.Stats()}
	s.Kind, s.Options = qdisc.SplitKind(b.String())
	return qdisc.Gated(b.lanes.Gate(), s)
}

// change sets the limit in place: what is queued past a lower one stays.
func (b *bfifo) change(o bfifoOptions) {
	b.lanes.SetLimits(1<<20, o.limit)
	b.limit.Store(o.limit)
}

// bfifoKind registers bfifo: a pod may lower its limit, never raise it;
// it has no ceiling for a Kubernetes bandwidth (Fit nil: a tbf takes its
// place); its metric is the bytes queued and dropped; a checkpoint keeps
// its drops; its lane takes a ceiling's buckets in place (Ceiling).
var bfifoKind = qdisc.Typed[bfifoOptions, *bfifo]{
	Name:    "bfifo",
	Usage:   "A byte-limited drop-tail queue: limit BYTES.",
	Example: "limit 3000",
	Parse:   parseBfifo,
	New: func(lower stack.LinkEndpoint, clock tcpip.Clock, o bfifoOptions) (*bfifo, error) {
		return newBfifo(lower, clock, o, false)
	},
	NewTo: func(out stack.LinkWriter, _ stack.LinkEndpoint, clock tcpip.Clock, o bfifoOptions) (*bfifo, error) {
		return newBfifo(out, clock, o, true)
	},
	Change: func(q *bfifo, o bfifoOptions) error {
		q.change(o)
		return nil
	},
	Tighten: func(op, pod bfifoOptions) (bfifoOptions, error) {
		if pod.limit > op.limit {
			return bfifoOptions{}, fmt.Errorf("bfifo: limit %d is above the operator's %d; give %d or less", pod.limit, op.limit, op.limit)
		}
		return pod, nil
	},
	Metrics: []qdisc.Metric{
		{Name: "backlog_bytes", Member: "queue", Help: "Bytes queued."},
		{Name: "dropped_packets", Member: "queue", Help: "Packets dropped at the byte limit.", Cumulative: true},
	},
	Members: func(bfifoOptions) []string { return []string{"0"} },
	Samples: func(q *bfifo) []qdisc.Sample {
		s := q.Stats()
		return []qdisc.Sample{{Metric: "backlog_bytes", Member: "0", Value: s.BacklogBytes}, {Metric: "dropped_packets", Member: "0", Value: s.Drops}}
	},
	Save: func(q *bfifo) []byte { return binary.AppendUvarint(nil, q.Stats().Drops) },
	Restore: func(q *bfifo, state []byte) error {
		drops, n := binary.Uvarint(state)
		if n <= 0 || n != len(state) {
			return fmt.Errorf("bfifo: a checkpoint's state of %d bytes is not a count of drops", len(state))
		}
		q.restored.Store(drops)
		return nil
	},
	Ceiling: func(q *bfifo, gate qdisc.Gate, maxSize uint32) error {
		q.lanes.SetGate(gate, maxSize)
		return nil
	},
}.Kind()

func init() { qdisc.Register(bfifoKind) }
