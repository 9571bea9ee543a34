package netem

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

const ms = int64(time.Millisecond)

// rig is a netem fed packets at times the test sets, holding every packet
// it made so that each one's references are checked at the end.
type rig struct {
	t   *testing.T
	q   *Queue
	all []*stack.PacketBuffer
	seq uint64
}

// newRig returns a rig over netem with words (seed 1 unless they give
// one): its references are checked after Purge when the test ends.
func newRig(t *testing.T, words string) *rig {
	t.Helper()
	if !strings.Contains(words, "seed") {
		words += " seed 1"
	}
	c, err := ParseWith(words, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewQueue(c)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, q: q}
	t.Cleanup(func() {
		q.Purge()
		if n, b := q.Len(); n != 0 || b != 0 {
			t.Errorf("Len %d packets %d bytes after Purge", n, b)
		}
		for _, p := range r.all {
			if n := p.ReadRefs(); n != 1 {
				t.Errorf("packet %d holds %d references at the end, want the test's own 1", qdisctest.Seq(p), n)
			}
			p.DecRef()
		}
	})
	return r
}

// send enqueues a packet of size bytes at now and reports whether it was
// taken.
func (r *rig) send(size int, now int64) bool {
	r.seq++
	p := qdisctest.MakePacket(size, 1, r.seq)
	r.all = append(r.all, p)
	took := r.q.Enqueue(p.IncRef(), uint32(size), now)
	if !took { // refused: the reference given is still ours
		p.DecRef()
	}
	return took
}

// departure is a packet that left, and when.
type departure struct {
	seq uint64
	at  int64
}

// run dequeues at now, and at each NextEvent after, until the queue is
// empty or until end, and returns what left when.
func (r *rig) run(now, end int64) []departure {
	var out []departure
	for now <= end {
		p, _, ok := r.q.Dequeue(now)
		if ok {
			out = append(out, departure{qdisctest.Seq(p), now})
			p.DecRef()
			continue
		}
		if n, _ := r.q.Len(); n == 0 {
			break
		}
		if next := r.q.NextEvent(); next > now {
			now = next
		} else {
			r.t.Fatalf("at %d: nothing left with %d held and NextEvent %d", now, r.q.qlen, next)
		}
	}
	return out
}

// TestDelay: without jitter each packet leaves exactly its delay after it
// came, in order, and not a nanosecond before: the lane is told when.
func TestDelay(t *testing.T) {
	r := newRig(t, "delay 100ms")
	for i := range 5 {
		r.send(1000, int64(i)*ms)
	}
	if p, _, ok := r.q.Dequeue(100*ms - 1); ok {
		t.Fatalf("packet %d left before its 100 ms", qdisctest.Seq(p))
	}
	if got := r.q.NextEvent(); got != 100*ms {
		t.Errorf("NextEvent %d, want %d", got, 100*ms)
	}
	got := r.run(100*ms, time.Second.Nanoseconds())
	want := []departure{{1, 100 * ms}, {2, 101 * ms}, {3, 102 * ms}, {4, 103 * ms}, {5, 104 * ms}}
	if !slices.Equal(got, want) {
		t.Errorf("departures %v, want %v", got, want)
	}
}

// TestJitterReorders: with jitter and no rate, each packet leaves at its
// own delay, drawn uniformly within [delay-jitter, delay+jitter): packets
// pass one another, as Linux's tfifo has them, and each leaves at its
// time to send.
func TestJitterReorders(t *testing.T) {
	r := newRig(t, "delay 100ms 50ms")
	for i := range 200 {
		r.send(100, int64(i)*ms)
	}
	got := r.run(0, 10*time.Second.Nanoseconds())
	if len(got) != 200 {
		t.Fatalf("%d of 200 left", len(got))
	}
	passed := 0
	for i, d := range got {
		sent := int64(d.seq-1) * ms
		if delay := d.at - sent; delay < 50*ms || delay >= 150*ms {
			t.Errorf("packet %d waited %d ms, want within [50, 150)", d.seq, delay/ms)
		}
		if i > 0 && d.seq < got[i-1].seq {
			passed++
		}
		if i > 0 && d.at < got[i-1].at {
			t.Errorf("packet %d left at %d, before the one ahead of it at %d", d.seq, d.at, got[i-1].at)
		}
	}
	if passed == 0 {
		t.Error("no packet passed another: 50 ms of jitter on packets 1 ms apart reorders them")
	}
}

// TestRate: with a rate, each packet's time to send follows the last's
// by its time on the link, so a burst leaves paced at the rate; with a
// delay, paced after it (Linux's rule: the later of the last packet's
// time and its own delay).
func TestRate(t *testing.T) {
	for _, tc := range []struct {
		words string
		first int64
	}{
		{"rate 1mbit", 12 * ms},
		{"delay 100ms rate 1mbit", 112 * ms},
	} {
		t.Run(tc.words, func(t *testing.T) {
			r := newRig(t, tc.words)
			for range 5 {
				r.send(1500, 0) // 12 ms each at 1 Mbit/s
			}
			got := r.run(0, time.Second.Nanoseconds())
			for i, d := range got {
				if want := tc.first + int64(i)*12*ms; d.at != want {
					t.Errorf("packet %d left at %v, want %v", d.seq, time.Duration(d.at), time.Duration(want))
				}
			}
		})
	}
}

// TestLossAndDuplicate: loss 100% drops every packet, counted; duplicate
// 100% sends each twice (a duplicate is not duplicated again); every
// reference is released once (the rig checks).
func TestLossAndDuplicate(t *testing.T) {
	r := newRig(t, "loss 100%")
	for range 10 {
		if !r.send(100, 0) {
			t.Fatal("a lost packet refused: netem takes it and drops it")
		}
	}
	if n, _ := r.q.Len(); n != 0 || r.q.Drops() != 10 {
		t.Errorf("Len %d, Drops %d; want 0 and 10", n, r.q.Drops())
	}
	d := newRig(t, "duplicate 100%")
	for range 5 {
		d.send(100, 0)
	}
	got := d.run(0, 0)
	seen := map[uint64]int{}
	for _, x := range got {
		seen[x.seq]++
	}
	for s := uint64(1); s <= 5; s++ {
		if seen[s] != 2 {
			t.Errorf("packet %d left %d times, want twice", s, seen[s])
		}
	}
}

// TestReorderGap: with reorder 100% and gap 3, every third packet is sent
// at once, ahead of the delayed ones, each put in front of those sent
// ahead before it (Linux's __qdisc_enqueue_head), and counted as a
// requeue; the others wait their delay.
func TestReorderGap(t *testing.T) {
	r := newRig(t, "delay 10ms reorder 100% gap 3")
	for range 6 {
		r.send(100, 0)
	}
	got := r.run(0, time.Second.Nanoseconds())
	want := []departure{{6, 0}, {3, 0}, {1, 10 * ms}, {2, 10 * ms}, {4, 10 * ms}, {5, 10 * ms}}
	if !slices.Equal(got, want) {
		t.Errorf("departures %v, want %v", got, want)
	}
	if r.q.Requeues() != 2 {
		t.Errorf("requeues %d, want 2", r.q.Requeues())
	}
}

// TestLimit: past limit packets held a packet is refused and counted.
func TestLimit(t *testing.T) {
	r := newRig(t, "limit 3 delay 1s")
	took := 0
	for range 5 {
		if r.send(100, 0) {
			took++
		}
	}
	if took != 3 || r.q.Drops() != 2 {
		t.Errorf("took %d, dropped %d; want 3 and 2", took, r.q.Drops())
	}
}

// TestSlot: with slot 10ms packets 2, packets due leave two at a time,
// a slot every 10 ms.
func TestSlot(t *testing.T) {
	r := newRig(t, "slot 10ms packets 2")
	for range 5 {
		r.send(100, 0)
	}
	got := r.run(0, time.Second.Nanoseconds())
	want := []departure{{1, 0}, {2, 0}, {3, 10 * ms}, {4, 10 * ms}, {5, 20 * ms}}
	if !slices.Equal(got, want) {
		t.Errorf("departures %v, want %v", got, want)
	}
}

// TestSeedRepeats: the same seed and the same packets give the same
// departures and losses; another seed does not.
func TestSeedRepeats(t *testing.T) {
	run := func(seed string) []departure {
		r := newRig(t, "delay 50ms 20ms 25% distribution normal loss 10% duplicate 5% seed "+seed)
		for i := range 300 {
			r.send(500, int64(i)*ms)
		}
		return r.run(0, 10*time.Second.Nanoseconds())
	}
	a, b, c := run("7"), run("7"), run("8")
	if !slices.Equal(a, b) {
		t.Error("seed 7 twice gave different runs")
	}
	if slices.Equal(a, c) {
		t.Error("seeds 7 and 8 gave the same run")
	}
}

// TestShow: the qdisc in force shows as tc shows it, with its seed.
func TestShow(t *testing.T) {
	c, err := Parse("delay 100ms 10ms 25% loss 1% seed 42")
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewQueue(c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.String(), "netem limit 1000 delay 100ms  10ms 25% loss 1% seed 42"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestLossAverageBurst: "loss average 2% burst 5" loses 2% of the
// packets, in runs of 5 on average (within 5% of each over 200,000).
func TestLossAverageBurst(t *testing.T) {
	r := newRig(t, "loss average 2% burst 5")
	lost, bursts, run := 0, 0, 0
	for range 200_000 {
		before := r.q.Drops()
		r.send(100, 0)
		if r.q.Drops() > before {
			lost++
			run++
		} else if run > 0 {
			bursts++
			run = 0
		}
		if p, _, ok := r.q.Dequeue(0); ok {
			p.DecRef()
		}
	}
	rate, mean := float64(lost)/200_000, float64(lost)/float64(max(bursts, 1))
	if rate < 0.019 || rate > 0.021 || mean < 4.75 || mean > 5.25 {
		t.Errorf("lost %.4f in runs of %.2f, want 0.02 in runs of 5 (within 5%%)", rate, mean)
	}
}
