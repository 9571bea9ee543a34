package fq_test

import (
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fq"
)

// FuzzFQ drives fq with enqueues on a few flows (and floods of new ones),
// dequeues, peeks and time steps read from the input, and holds it to
// what a user depends on: each flow's packets leave in the order they
// came, Len is what was enqueued and neither dequeued nor counted as
// dropped (refused at a flow's limit, or from the longest flow's head at
// Limit) and never past Limit, and every reference taken is released
// exactly once (the rig checks them after Purge).
func FuzzFQ(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x80, 0x81, 0xc0, 4, 5, 0x80, 0x80, 0x80, 0xe0})
	f.Add([]byte{1, 1, 1, 1, 1, 1, 2, 0x80, 3, 0x80, 0xa0, 0x80, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, ops []byte) {
		r := newRig(t, fq.Config{Limit: 16, FlowLimit: 5, Quantum: 700, InitialQuantum: 1400})
		last := map[uint32]uint64{}
		queued := 0
		sizes, at := make([]uint32, 2), make([]int64, 2)
		for i, op := range ops {
			switch {
			case op < 0x80: // enqueue on flow op%8+1, or a new flow
				hash := uint32(op%8) + 1
				if op >= 0x60 {
					hash = 1000 + uint32(i)
				}
				before := r.q.Drops()
				took := r.send(hash, 60+int(op)*10)
				dropped := int(r.q.Drops() - before)
				if !took && dropped != 1 {
					t.Fatalf("op %d: a refused packet counted as %d drops", i, dropped)
				}
				queued += 1 - dropped
			case op < 0xa0: // dequeue
				p, _, ok := r.q.Dequeue(r.now)
				if ok != (queued > 0) {
					t.Fatalf("op %d: Dequeue ok=%v with %d queued", i, ok, queued)
				}
				if !ok {
					continue
				}
				queued--
				seq := seqOf(p)
				if seq <= last[p.Hash] {
					t.Fatalf("op %d: flow %d sent packet %d after %d", i, p.Hash, seq, last[p.Hash])
				}
				last[p.Hash] = seq
				p.DecRef()
			case op < 0xc0: // peek
				if n := r.q.Peek(r.now, sizes, at); (n == 1) != (queued > 0) {
					t.Fatalf("op %d: Peek %d with %d queued", i, n, queued)
				}
			default: // time passes
				r.now += int64(op-0xc0) * int64(200*time.Millisecond)
			}
			if n, _ := r.q.Len(); n != queued || n > 16 {
				t.Fatalf("op %d: Len %d, want %d and at most the limit 16", i, n, queued)
			}
		}
	})
}
