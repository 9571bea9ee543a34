package node

import (
	"encoding/binary"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
)

// FuzzBoard: a sandbox whose Sentry is compromised may write any word of
// what its descriptor reaches, its own seat. Whatever it writes there
// (data: word and value pairs, written between the allocator's steps)
// beside the issue's three honest sandboxes, all busy: nothing panics,
// each honest class's share stays within [its rate, its ceil], the
// honest shares sum to no more than the root, and the attacker's share
// is within its own rate and ceil.
func FuzzBoard(f *testing.F) {
	f.Add([]byte{})
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, wDemand), ^uint64(0)))
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, wSeq), 1<<63))
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, aShare), ^uint64(0)))
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, wLeft), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		classes := []htb.ClassConfig{sandbox(10, 10, 100, 0), sandbox(20, 20, 30, 1), sandbox(30, 30, 100, 0), sandbox(40, 5, 100, 0)}
		n := newTestNode(t, issueTree, classes, 1e9)
		attacker := n.seats[3].words
		now := int64(1e9)
		sent := make([]uint64, 3)
		for step := 0; step < 60; step++ {
			for i, m := range n.ms[:3] {
				s, err := m.Share(now, Counters{Bytes: sent[i], Busy: true})
				if err != nil {
					t.Fatal(err)
				}
				sent[i] += s / 100
			}
			for k := 0; k < 4 && len(data) >= 16; k++ {
				w := binary.LittleEndian.Uint64(data) % seatWords
				attacker[w] = binary.LittleEndian.Uint64(data[8:])
				data = data[16:]
			}
			n.a.Step(now)
			var sum uint64
			for i, c := range classes[:3] {
				s, _, _, _ := n.seats[i].allocated()
				if s < c.Rate || s > c.Ceil {
					t.Fatalf("step %d: class %x's share %d is outside [%d, %d]", step, c.ID, s, c.Rate, c.Ceil)
				}
				sum += s
			}
			if sum > 100*mbit {
				t.Fatalf("step %d: the honest classes' shares sum to %d, past the root's %d", step, sum, 100*mbit)
			}
			n.a.mu.Lock()
			if s := n.a.seats[3]; s != nil && (s.share < classes[3].Rate || s.share > classes[3].Ceil) {
				t.Fatalf("step %d: the attacker's share %d is outside its [%d, %d]", step, s.share, classes[3].Rate, classes[3].Ceil)
			}
			n.a.mu.Unlock()
			n.a.Show(now)
			now += int64(Period)
		}
	})
}
