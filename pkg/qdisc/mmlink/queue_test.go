package mmlink

import (
	"slices"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

const ms = int64(1_000_000)

// rig is an mmlink fed packets at times the test sets, holding every
// packet it made so that each one's references are checked at the end.
type rig struct {
	t   *testing.T
	q   *Queue
	all []*stack.PacketBuffer
	seq uint64
}

// newRig returns a rig over a link of trace times (ms) and limits,
// started at 0: its references are checked after Purge when the test
// ends.
func newRig(t *testing.T, times []uint32, limit, bytes uint32) *rig {
	t.Helper()
	tr, err := NewTrace("test", times)
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewQueue(Config{Trace: tr, Limit: limit, Bytes: bytes}, 1500, 0)
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

// send enqueues a packet of ip bytes (no link header) at now and reports
// whether it was taken; a refused packet's reference is the caller's, and
// is released here, once.
func (r *rig) send(ip int, now int64) bool {
	r.seq++
	p := qdisctest.MakePacket(ip, 1, r.seq)
	r.all = append(r.all, p)
	took := r.q.Enqueue(p.IncRef(), uint32(ip), now)
	if !took {
		p.DecRef()
	}
	return took
}

// departure is a packet that left, and when.
type departure struct {
	seq uint64
	at  int64
}

// run dequeues at now, and at each NextEvent after, until nothing is
// held or past end, as the lane does, and returns what left when.
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
		next := r.q.NextEvent()
		if next <= now {
			r.t.Fatalf("at %d: NextEvent %d is not later", now, next)
		}
		now = next
	}
	return out
}

// TestDepartures: each packet leaves at the opportunity that carries
// its last byte, exactly then, as mahimahi's LinkQueue has it: one
// 1500-byte IP packet an opportunity; smaller ones share one (each
// costing its bytes and 4); a larger one spans several; the trace
// repeats with its last time as its period; several opportunities at one
// ms are several; an opportunity at the very time a packet arrives is
// not its.
func TestDepartures(t *testing.T) {
	type pkt struct {
		ip int
		at int64
	}
	burst := func(n, ip int) []pkt { return slices.Repeat([]pkt{{ip, 0}}, n) }
	for _, tc := range []struct {
		name  string
		trace []uint32
		sent  []pkt
		want  []departure
	}{
		{"one MTU packet an opportunity", []uint32{1, 2, 3, 4, 5}, burst(3, 1500),
			[]departure{{1, 1 * ms}, {2, 2 * ms}, {3, 3 * ms}}},
		{"the trace repeats every last time", []uint32{1, 3}, burst(5, 1500),
			[]departure{{1, 1 * ms}, {2, 3 * ms}, {3, 4 * ms}, {4, 6 * ms}, {5, 7 * ms}}},
		{"at the wrap a time 0 is a second opportunity", []uint32{0, 2}, burst(4, 1500),
			[]departure{{1, 2 * ms}, {2, 2 * ms}, {3, 4 * ms}, {4, 4 * ms}}},
		{"several at one ms", []uint32{5, 5, 5, 10}, burst(4, 1500),
			[]departure{{1, 5 * ms}, {2, 5 * ms}, {3, 5 * ms}, {4, 10 * ms}}},
		{"four of 372 bytes share one", []uint32{1}, burst(5, 372), // 4 * (372+4) = 1504
			[]departure{{1, 1 * ms}, {2, 1 * ms}, {3, 1 * ms}, {4, 1 * ms}, {5, 2 * ms}}},
		{"a packet carried across two", []uint32{1}, burst(3, 1000), // 1004: 1004+500, 504+1000, 4
			[]departure{{1, 1 * ms}, {2, 2 * ms}, {3, 3 * ms}}},
		{"a large packet spans", []uint32{1}, []pkt{{2800, 0}, {100, 0}}, // two segments on a 1500-byte link: 2808 = 1504+1304; 104 fits in the 200 left
			[]departure{{1, 2 * ms}, {2, 2 * ms}}},
		{"a large packet fills them", []uint32{1}, []pkt{{3000, 0}, {100, 0}}, // 3008 = 2*1504
			[]departure{{1, 2 * ms}, {2, 3 * ms}}},
		{"arriving at an opportunity misses it", []uint32{1}, []pkt{{1500, 1 * ms}, {1500, 1*ms + 1}},
			[]departure{{1, 2 * ms}, {2, 3 * ms}}},
		{"arriving a ns before takes it", []uint32{1}, []pkt{{1500, 1*ms - 1}},
			[]departure{{1, 1 * ms}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.trace, 100, 0)
			for _, p := range tc.sent {
				if !r.send(p.ip, p.at) {
					t.Fatalf("packet of %d bytes at %d refused", p.ip, p.at)
				}
			}
			if got := r.run(tc.sent[len(tc.sent)-1].at, 100*ms); !slices.Equal(got, tc.want) {
				t.Errorf("departures %v, want %v", got, tc.want)
			}
		})
	}
}

// TestIdleOpportunitiesAreLost: opportunities that find the queue empty
// are lost, not saved up: packets that come after 10 idle ms leave one
// an opportunity from then, and the 10 are counted idle.
func TestIdleOpportunitiesAreLost(t *testing.T) {
	r := newRig(t, []uint32{1}, 100, 0)
	at := 10*ms + ms/2
	for range 3 {
		r.send(1500, at)
	}
	want := []departure{{1, 11 * ms}, {2, 12 * ms}, {3, 13 * ms}}
	if got := r.run(at, 100*ms); !slices.Equal(got, want) {
		t.Errorf("departures %v, want %v", got, want)
	}
	if r.q.opportunities != 13 || r.q.idle != 10 || r.q.unused != 10*OpportunityBytes {
		t.Errorf("opportunities %d idle %d unused %d; want 13, 10 and %d", r.q.opportunities, r.q.idle, r.q.unused, 10*OpportunityBytes)
	}
	// Skipping a long idle time is not running it: a year of idle
	// opportunities is passed at once.
	const year = int64(365 * 24 * 3600 * 1e9)
	r.send(1500, year)
	if got := r.run(year, year+2*ms); len(got) != 1 || got[0].at != year+ms {
		t.Errorf("after a year idle: %v, want packet 4 at %d", got, year+ms)
	}
}

// TestDropTail: past the limit in packets, or in bytes (as the
// opportunities count them), a packet is refused and counted, its
// reference left to the caller (the rig releases it once and checks);
// the packet in transit is not counted, as in mahimahi.
func TestDropTail(t *testing.T) {
	for _, tc := range []struct {
		name         string
		limit, bytes uint32
		sent         []int
		at           []int64
		took         []bool
	}{
		{"limit", 2, 0, []int{1500, 1500, 1500}, []int64{0, 0, 0}, []bool{true, true, false}},
		{"bytes", 100, 3008, []int{1500, 1500, 1}, []int64{0, 0, 0}, []bool{true, true, false}},
		{"bytes, a smaller one fits", 100, 3100, []int{1500, 1500, 80, 20}, []int64{0, 0, 0, 0}, []bool{true, true, true, false}},
		// 3004 bytes: in transit from the opportunity at 1 ms to the one
		// at 2; at 1.5 ms nothing waits, so one more may.
		{"in transit is not counted", 1, 0, []int{3000, 1500, 1500}, []int64{0, ms + ms/2, ms + ms/2}, []bool{true, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, []uint32{1}, tc.limit, tc.bytes)
			drops := uint64(0)
			for i, ip := range tc.sent {
				if got := r.send(ip, tc.at[i]); got != tc.took[i] {
					t.Errorf("packet %d taken %v, want %v", i+1, got, tc.took[i])
				}
				if !tc.took[i] {
					drops++
				}
			}
			if r.q.Drops() != drops {
				t.Errorf("drops %d, want %d", r.q.Drops(), drops)
			}
		})
	}
}

// TestChange: a new trace starts from its beginning when it is put in
// force, the packets held staying; the same trace goes on where it was.
func TestChange(t *testing.T) {
	r := newRig(t, []uint32{10}, 100, 0)
	for range 3 {
		r.send(1500, 0)
	}
	if got := r.run(0, 10*ms); !slices.Equal(got, []departure{{1, 10 * ms}}) {
		t.Fatalf("before the change: %v", got)
	}
	same := r.q.Config()
	if err := r.q.Change(same, 15*ms); err != nil {
		t.Fatal(err)
	}
	if got := r.q.cur.at; got != 20*ms {
		t.Errorf("the same trace's next opportunity is at %d, want %d", got, 20*ms)
	}
	tr, err := NewTrace("fast", []uint32{1})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.q.Change(Config{Trace: tr, Limit: 100}, 15*ms); err != nil {
		t.Fatal(err)
	}
	want := []departure{{2, 16 * ms}, {3, 17 * ms}}
	if got := r.run(15*ms, 100*ms); !slices.Equal(got, want) {
		t.Errorf("after the change: %v, want %v", got, want)
	}
	if err := r.q.Change(Config{Trace: tr}, 0); err == nil {
		t.Error("a change to limit 0 was taken")
	}
}

// TestPeek: Peek shows what has left, for the next Dequeues, with the
// time it left (what a ceiling over the link books it from), and
// nothing before its time.
func TestPeek(t *testing.T) {
	r := newRig(t, []uint32{1}, 100, 0)
	r.send(700, 0)
	r.send(700, 0)
	r.send(1500, 0)
	var sizes [4]uint32
	var arrived [4]int64
	if n := r.q.Peek(ms-1, sizes[:], arrived[:]); n != 0 {
		t.Errorf("Peek before the opportunity shows %d", n)
	}
	if n := r.q.Peek(2*ms-1, sizes[:], arrived[:]); n != 2 || sizes[0] != 700 || sizes[1] != 700 || arrived[0] != ms || arrived[1] != ms {
		t.Errorf("Peek before 2 ms: %d packets %v, left at %v; want the two of 700, left at 1 ms", n, sizes[:n], arrived[:n])
	}
	if got := r.run(2*ms-1, 10*ms); len(got) != 3 || got[2].at != 2*ms {
		t.Errorf("departures %v", got)
	}
}
