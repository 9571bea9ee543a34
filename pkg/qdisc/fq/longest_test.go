package fq

import (
	"math/rand/v2"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestLongestHeap: through random enqueues (past the limits, so that the
// longest flow is dropped from), host-GSO packets cut as they leave,
// dequeues, peeks and a purge, the
// heap holds exactly the flows that hold packets, each flow's bytes are
// what it holds, and its top holds the most.
func TestLongestHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	q, err := NewQueue(Config{Limit: 40, FlowLimit: 30}, 1514, nil)
	if err != nil {
		t.Fatal(err)
	}
	q.SetByteLimit(60000)
	q.SplitGSOAt(3000)
	sizes, at := make([]uint32, 1), make([]int64, 1)
	var seq uint64
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op == 0:
			seq++
			p := qdisctest.GSOPacket(8*1448, 1448, uint32(rng.IntN(12))+1, seq, 0)
			q.Enqueue(p, uint32(p.Size()), int64(step))
		case op < 6:
			seq++
			size := 60 + rng.IntN(1455)
			q.Enqueue(qdisctest.MakePacket(size, uint32(rng.IntN(12))+1, seq), uint32(size), int64(step))
		case op < 9:
			if p, _, ok := q.Dequeue(int64(step)); ok {
				p.DecRef()
			}
		default:
			q.Peek(int64(step), sizes, at)
		}
		checkLongest(t, q, step)
	}
	if q.splits == 0 || q.drops == 0 {
		t.Errorf("%d GSO packets cut and %d dropped: want the heap checked through both", q.splits, q.drops)
	}
	q.Purge()
	checkLongest(t, q, -1)
}

// checkLongest fails t unless q's heap is in order and holds exactly its
// flows with packets, at the places they record.
func checkLongest(t *testing.T, q *Queue, step int) {
	t.Helper()
	var most uint64
	in := 0
	for i := range q.flows {
		f := &q.flows[i]
		var bytes uint64
		for _, e := range f.packets[f.head:] {
			bytes += uint64(e.size)
		}
		if bytes != f.bytes {
			t.Fatalf("step %d: flow %d counts %d bytes, holds %d", step, i, f.bytes, bytes)
		}
		if (f.len() > 0) != (f.heapPos != 0) {
			t.Fatalf("step %d: flow %d holds %d packets, heap place %d", step, i, f.len(), f.heapPos)
		}
		if f.heapPos != 0 {
			in++
			if q.longest.heap[f.heapPos-1] != int32(i) {
				t.Fatalf("step %d: flow %d's heap place %d holds flow %d", step, i, f.heapPos, q.longest.heap[f.heapPos-1])
			}
			most = max(most, f.bytes)
		}
	}
	if in != len(q.longest.heap) {
		t.Fatalf("step %d: heap of %d, %d flows hold packets", step, len(q.longest.heap), in)
	}
	for i := 1; i < len(q.longest.heap); i++ {
		if q.flows[q.longest.heap[i]].bytes > q.flows[q.longest.heap[(i-1)/2]].bytes {
			t.Fatalf("step %d: heap out of order at %d", step, i)
		}
	}
	if top := q.longest.top(); top != none && q.flows[top].bytes != most {
		t.Fatalf("step %d: top holds %d bytes, the longest %d", step, q.flows[top].bytes, most)
	}
}
