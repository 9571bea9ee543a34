package netem

import (
	"slices"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestUntimedReadsNoClock: netem that holds packets for no time reads no
// clock for them (its lane gives it none: ArrivalBlind), and they leave in
// order at once; once a change puts a delay or a rate in force, it reads
// the clock for each packet it times, the packets held from before leave
// first, and the new ones at the time Linux gives them (the later of its
// delay and the last packet's time, plus its time on the link).
func TestUntimedReadsNoClock(t *testing.T) {
	for _, tc := range []struct {
		change string
		// next is when the packet queued after the change may leave.
		next int64
	}{
		{"delay 10ms", 70 * ms},
		{"rate 1mbit", 72 * ms}, // 1500 bytes: 12 ms at 1 Mbit/s
		{"delay 10ms rate 1mbit", 82 * ms},
	} {
		t.Run(tc.change, func(t *testing.T) {
			r := newRig(t, "limit 100")
			reads := 0
			clockNow := int64(0)
			r.q.clock = func() int64 { reads++; return clockNow }
			if !r.q.ArrivalBlind() {
				t.Fatal("netem's lane would read the clock for every packet")
			}
			for range 3 {
				r.sendAt(1500, qdisc.Unstamped)
			}
			if reads != 0 {
				t.Fatalf("%d clock reads for packets held for no time", reads)
			}
			c, err := ParseWith(tc.change, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.q.Change(c, 50*ms); err != nil {
				t.Fatal(err)
			}
			clockNow = 60 * ms
			r.sendAt(1500, qdisc.Unstamped)
			if reads != 1 {
				t.Fatalf("%d clock reads for a packet timed, want 1", reads)
			}
			got := r.run(60*ms, 60*ms)
			if want := []departure{{1, 60 * ms}, {2, 60 * ms}, {3, 60 * ms}}; !slices.Equal(got, want) {
				t.Errorf("departures %v, want the packets held from before at once: %v", got, want)
			}
			if next := r.q.NextEvent(); next != tc.next {
				t.Errorf("NextEvent %v ms, want %v ms", float64(next)/float64(ms), float64(tc.next)/float64(ms))
			}
		})
	}
}

// sendAt enqueues a packet of size bytes at now (qdisc.Unstamped: the
// lane read no clock) and reports whether it was taken.
func (r *rig) sendAt(size int, now int64) bool {
	r.seq++
	p := qdisctest.MakePacket(size, 1, r.seq)
	r.all = append(r.all, p)
	took := r.q.Enqueue(p.IncRef(), uint32(size), now)
	if !took {
		p.DecRef()
	}
	return took
}

// TestDequeueBatch: DequeueBatch hands over what as many Dequeues would,
// in order (two netems with the same seed and the same packets, one
// drained a batch at a time, one a packet at a time), a batch ending
// where the next Dequeue would hand over nothing, with the same
// NextEvent.
func TestDequeueBatch(t *testing.T) {
	for _, words := range []string{
		"limit 100",
		"delay 10ms 5ms loss 10% duplicate 10% seed 4",
		"delay 10ms reorder 30% gap 2 seed 5",
		"rate 1mbit slot 5ms 10ms packets 3 seed 6",
	} {
		t.Run(words, func(t *testing.T) {
			a, b := newRig(t, words), newRig(t, words)
			for i := range 60 {
				a.send(100+i*20, int64(i)*ms)
				b.send(100+i*20, int64(i)*ms)
			}
			for now := int64(0); now < 2000*ms; now += 3 * ms {
				var pkts stack.PacketBufferList
				sizes := make([]uint32, 7)
				n := a.q.DequeueBatch(now, &pkts, sizes)
				if n != pkts.Len() {
					t.Fatalf("at %d: %d said, %d in the list", now, n, pkts.Len())
				}
				for i, p := range pkts.AsSlice() {
					q, size, ok := b.q.Dequeue(now)
					if !ok || qdisctest.Seq(q) != qdisctest.Seq(p) || size != sizes[i] {
						t.Fatalf("at %d: batch packet %d is %d (%d bytes), Dequeue's %v (%d bytes, %v)", now, i, qdisctest.Seq(p), sizes[i], q, size, ok)
					}
					q.DecRef()
				}
				pkts.DecRef()
				if n < len(sizes) {
					if q, _, ok := b.q.Dequeue(now); ok {
						t.Fatalf("at %d: the batch ended at %d, but Dequeue hands over %d", now, n, qdisctest.Seq(q))
					}
					if a.q.NextEvent() != b.q.NextEvent() {
						t.Fatalf("at %d: NextEvent %d, Dequeue's %d", now, a.q.NextEvent(), b.q.NextEvent())
					}
				}
			}
		})
	}
}
