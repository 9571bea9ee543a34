package dispatch_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/packetbuf"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// sortingQueue is a qdisc.Sorter over a byte fifo: Sort gives a packet its
// sequence number times 10, after waiting on entered/release when they
// are set, and EnqueueSorted records the keys it is given.
type sortingQueue struct {
	packetbuf.Queue
	entered, release chan struct{} // +checklocksignore: set before use
	keys             []uint32      // +checklocksignore: under the lane's lock
}

var _ qdisc.Sorter = (*sortingQueue)(nil)

func (q *sortingQueue) Sort(pkt *stack.PacketBuffer) uint32 {
	if q.entered != nil {
		q.entered <- struct{}{}
		<-q.release
	}
	return uint32(qdisctest.Seq(pkt)) * 10
}

func (q *sortingQueue) EnqueueSorted(pkt *stack.PacketBuffer, size uint32, now int64, key uint32) bool {
	q.keys = append(q.keys, key)
	return q.Queue.Enqueue(pkt, size, now)
}

// TestSortBeforeTheLock: a Sorter's Sort runs before its lane's lock is
// taken (the lane's lock can be taken while a producer is in Sort), and
// EnqueueSorted gets what Sort returned for the packet.
func TestSortBeforeTheLock(t *testing.T) {
	q := &sortingQueue{entered: make(chan struct{}), release: make(chan struct{})}
	q.Queue.Init(100, 0)
	link := qdisctest.NewLink(nil)
	var g dispatch.Group
	g.Init(1, dispatch.Config{Lower: link, Queue: q, MaxPackets: 1})
	g.Start()
	t.Cleanup(g.Close)

	done := make(chan tcpip.Error)
	go func() {
		pkt := qdisctest.MakePacket(100, 0, 7)
		defer pkt.DecRef()
		done <- g.Lane(0).Enqueue(pkt)
	}()
	<-q.entered // the producer is in Sort
	locked := make(chan struct{})
	go func() {
		g.Lane(0).Locked(func() {})
		close(locked)
	}()
	select {
	case <-locked:
	case <-time.After(10 * time.Second):
		close(q.release)
		t.Fatal("the lane's lock could not be taken while a producer was in Sort: Sort runs under it")
	}
	close(q.release)
	if err := <-done; err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	qdisctest.WaitQuiescent(t, &g)
	var keys []uint32
	g.Lane(0).Locked(func() { keys = q.keys })
	if len(keys) != 1 || keys[0] != 70 {
		t.Errorf("EnqueueSorted got keys %v, want [70] (Sort's answer for packet 7)", keys)
	}
	if n := len(link.Records()); n != 1 {
		t.Errorf("the link got %d packets, want 1", n)
	}
}
