package qdisctest

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
)

// StatsQdisc is a qdisc that reports statistics.
type StatsQdisc interface {
	stack.QueueingDiscipline
	Stats() qdisc.Stats
}

// CloseRace makes a qdisc with mk and has writers goroutines each write
// packets packets (each writer its own hash; sizes from 0 to 65535 bytes,
// mostly up to 1514, as raceSize spreads them) while Close runs, twice,
// from two goroutines. A packet the qdisc refuses as too large (larger
// than a tbf's bucket) or for want of room counts as refused-and-counted.
// It then checks what a user relies on:
//   - every packet's reference count is back to the writer's own 1;
//   - every WritePacket that started after Close returned answered
//     ErrClosedForSend;
//   - every packet the qdisc accepted was sent or dropped, exactly once:
//     Packets + Drops = accepted + refused-and-counted, with no backlog;
//   - no goroutine of the qdisc is left;
//   - a third Close returns.
func CloseRace(t *testing.T, mk func() StatsQdisc, writers, packets int) {
	t.Helper()
	before := runtime.NumGoroutine()
	q := mk()

	closed := make(chan struct{}) // closed when the first Close returned
	started := make(chan struct{})
	var startOnce sync.Once
	type result struct {
		pkts                   []*stack.PacketBuffer
		accepted, counted      int
		afterClose, wrongAfter int
	}
	results := make([]result, writers)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[w]
			for i := 0; i < packets; i++ {
				pkt := MakePacket(raceSize(w, i), uint32(w), uint64(w)<<32|uint64(i))
				r.pkts = append(r.pkts, pkt)
				select {
				case <-closed:
					r.afterClose++
					if _, ok := q.WritePacket(pkt).(*tcpip.ErrClosedForSend); !ok {
						r.wrongAfter++
					}
					continue
				default:
				}
				switch q.WritePacket(pkt).(type) {
				case nil:
					r.accepted++
				case *tcpip.ErrNoBufferSpace, *tcpip.ErrMessageTooLong:
					r.counted++
				}
				if i == packets/4 {
					startOnce.Do(func() { close(started) })
				}
				if i%8 == 0 {
					runtime.Gosched()
				}
			}
		}()
	}
	<-started
	var cwg sync.WaitGroup
	cwg.Add(2)
	go func() { defer cwg.Done(); q.Close(); close(closed) }()
	go func() { defer cwg.Done(); q.Close() }()
	cwg.Wait()
	wg.Wait()

	var accepted, counted, after int
	for w := range results {
		r := &results[w]
		accepted += r.accepted
		counted += r.counted
		after += r.afterClose
		if r.wrongAfter != 0 {
			t.Errorf("writer %d: %d of %d writes after Close did not answer ErrClosedForSend", w, r.wrongAfter, r.afterClose)
		}
		for _, pkt := range r.pkts {
			if n := pkt.ReadRefs(); n != 1 {
				t.Errorf("packet %#x: %d references after Close, want the writer's 1", Seq(pkt), n)
			}
			pkt.DecRef()
		}
	}
	st := q.Stats()
	if st.Packets+st.Drops != uint64(accepted+counted) || st.BacklogPackets != 0 || st.BacklogBytes != 0 {
		t.Errorf("accounting: %d accepted + %d refused, but Stats says %d sent + %d dropped, backlog %d packets; want every packet once\n%v",
			accepted, counted, st.Packets, st.Drops, st.BacklogPackets, st)
	}
	t.Logf("%d accepted, %d refused, %d after Close; %v", accepted, counted, after, st)
	q.Close()
	if err := waitGoroutines(before); err != nil {
		t.Error(err)
	}
}

// raceSize is the size of writer w's packet i: one in sixteen anything
// from 0 to 65535 bytes (empty packets and ones past any MTU or bucket
// included), the rest from 0 to 1514, so that most packets still pass a
// tbf and the race with Close is on queued packets.
func raceSize(w, i int) int {
	k := i*37 + w*101
	if i%16 == 15 {
		return (k * 7919) % 65536
	}
	return k % 1515
}

// waitGoroutines yields until no more goroutines run than before; a
// timer's callback goroutine may take a moment to return.
func waitGoroutines(before int) error {
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			return fmt.Errorf("%d goroutines left after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
	return nil
}
