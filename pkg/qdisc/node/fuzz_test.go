package node

import (
	"encoding/binary"
	"testing"
)

// FuzzBoard: a sandbox whose Sentry is compromised may write any word of
// the board. Whatever it writes (data: offset and value pairs over a
// board of the node, with its three sandboxes), Open, Tree,
// Snapshot and Show do not panic, and a Member's share is never below
// its rate (its guarantee does not depend on the board).
func FuzzBoard(f *testing.F) {
	f.Add([]byte{})
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 4), 0xffffffffffffffff))           // the tree's length
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, headerWords+treeWords+1), 0xffff)) // a slot's class
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 2), 1<<40))                        // the slots
	f.Fuzz(func(t *testing.T, data []byte) {
		ms := members(t, [3]uint8{}, 1e9)
		b := ms[0].board
		for len(data) >= 16 {
			off := binary.LittleEndian.Uint64(data) % uint64(len(b.words))
			b.words[off] = binary.LittleEndian.Uint64(data[8:])
			data = data[16:]
		}
		mem := unsafeBytes(b.words)
		if o, err := Open(mem); err == nil {
			o.Tree()
			o.Snapshot(1e9, int64(Stale))
			o.Show(1e9)
		}
		b.Tree()
		b.Snapshot(1e9, int64(Stale))
		b.Show(1e9)
		for _, m := range ms {
			s, _ := m.Share(1e9+int64(Period), Counters{Busy: true, Bytes: 1 << 20, Packets: 1 << 10})
			if s < m.class.Rate {
				t.Fatalf("class %x's share %d is below its rate %d", m.class.ID, s, m.class.Rate)
			}
		}
	})
}
