package codel_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/codel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// eventKind is what CoDel did to a packet on its way out.
type eventKind int

const (
	drop eventKind = iota
	mark
)

func (k eventKind) String() string { return [...]string{"drop", "mark"}[k] }

// event is a packet dropped or marked, by sequence number.
type event struct {
	kind eventKind
	seq  uint64
}

func (e event) String() string { return fmt.Sprintf("%v %d", e.kind, e.seq) }

// tpkt is a test packet: its size, when it was queued (codel time), and
// its ECN codepoint (ect: ECT(0), ECT(1) or CE; ce: CE).
type tpkt struct {
	seq     uint64
	size    uint32
	enq     uint32
	ect, ce bool
	log     *[]event // where MarkCE records itself
}

func (p *tpkt) Len() uint32          { return p.size }
func (p *tpkt) Enqueued() codel.Time { return codel.Time(p.enq) }
func (p *tpkt) MarkCE() bool {
	if !p.ect {
		return false
	}
	p.ce = true
	*p.log = append(*p.log, event{mark, p.seq})
	return true
}

// fifo is the queue the package's CoDel manages in the tests: it records
// the drops (and, through its packets, the marks) in order.
type fifo struct {
	q       []*tpkt
	backlog uint32
	log     []event
}

func (f *fifo) Dequeue() (*tpkt, bool) {
	if len(f.q) == 0 {
		return nil, false
	}
	p := f.q[0]
	f.q = f.q[1:]
	f.backlog -= p.size
	return p, true
}

func (f *fifo) Drop(p *tpkt)    { f.log = append(f.log, event{drop, p.seq}) }
func (f *fifo) Backlog() uint32 { return f.backlog }

// harness runs the package's CoDel and the model side by side on the same
// arrivals and departures, at times of a fake clock in nanoseconds.
type harness struct {
	t   *testing.T
	now int64
	seq uint64

	par codel.Params
	v   codel.Vars
	st  codel.Stats
	q   fifo

	m *refCoDel
	// out is what left, as (time since start, event) for the scenarios'
	// own checks; start is the clock at the start.
	out   []timedEvent
	start int64
}

type timedEvent struct {
	at time.Duration
	ev event
}

func newHarness(t *testing.T, start int64, target, interval time.Duration, mtu uint32, ecn bool) *harness {
	// The kernel converts with ns >> CODEL_SHIFT (10).
	tg, iv := uint32(target>>10), uint32(interval>>10)
	return &harness{
		t: t, now: start, start: start,
		par: codel.Params{Target: codel.Time(tg), Interval: codel.Time(iv), MTU: mtu, ECN: ecn},
		m:   &refCoDel{target: tg, interval: iv, mtu: mtu, ecn: ecn},
	}
}

func ctime(ns int64) uint32 { return uint32(uint64(ns) >> 10) }

// enqueue queues a packet of size bytes at the current time.
func (h *harness) enqueue(size uint32, ect bool) {
	h.seq++
	p := &tpkt{seq: h.seq, size: size, enq: ctime(h.now), ect: ect, log: &h.q.log}
	h.q.q = append(h.q.q, p)
	h.q.backlog += size
	mp := *p
	mp.log = nil
	h.m.q = append(h.m.q, &mp)
	h.m.backlog += size
}

// dequeue runs codel.Dequeue and the model at the current time and fails
// unless they drop, mark and hand over the same packets, and keep the same
// count, dropping state and statistics. It reports whether a packet left.
func (h *harness) dequeue() bool {
	t := h.t
	t.Helper()
	h.q.log = h.q.log[:0]
	p, ok := codel.Dequeue[*tpkt](&h.q, &h.v, &h.par, &h.st, codel.TimeOf(h.now))
	want, wantEv := h.m.dequeue(ctime(h.now))
	if h.m.unsure != "" {
		t.Fatalf("t=%v: the model's Newton step may be one off Linux's: %s", time.Duration(h.now-h.start), h.m.unsure)
	}
	when := fmt.Sprintf("t=%v (dequeue %d)", time.Duration(h.now-h.start), h.seq)
	if !slices.Equal(h.q.log, wantEv) {
		t.Fatalf("%s: CoDel did %v; Linux does %v", when, h.q.log, wantEv)
	}
	switch {
	case ok != (want != nil):
		t.Fatalf("%s: handed over a packet: %v; Linux: %v", when, ok, want != nil)
	case ok && (p.seq != want.seq || p.ce != want.ce):
		t.Fatalf("%s: handed over packet %d (CE %v); Linux packet %d (CE %v)", when, p.seq, p.ce, want.seq, want.ce)
	case h.v.Count != h.m.count || h.v.Dropping != h.m.dropping:
		t.Fatalf("%s: count %d, dropping %v; Linux count %d, dropping %v", when, h.v.Count, h.v.Dropping, h.m.count, h.m.dropping)
	case h.st != codel.Stats{MaxPacket: uint32(h.m.maxpacket), ECNMarks: h.m.marks, Drops: h.m.drops, DropBytes: h.m.dropBytes}:
		t.Fatalf("%s: stats %+v; Linux maxpacket %d, ecn_mark %d, drop_count %d, drop_len %d", when, h.st, h.m.maxpacket, h.m.marks, h.m.drops, h.m.dropBytes)
	}
	for _, e := range h.q.log {
		h.out = append(h.out, timedEvent{time.Duration(h.now - h.start), e})
	}
	return ok
}

// standing keeps a standing queue of depth packets of 1500 bytes: every
// period one arrives and one leaves, for d. All are ECT if ect.
func (h *harness) standing(depth int, period, d time.Duration, ect bool) {
	for range depth {
		h.enqueue(1500, ect)
	}
	for end := h.now + int64(d); h.now < end; h.now += int64(period) {
		h.enqueue(1500, ect)
		h.dequeue()
	}
}

// drain empties the queue, one packet every period.
func (h *harness) drain(period time.Duration) {
	for h.dequeue() {
		h.now += int64(period)
	}
}

// kinds counts the drops and marks.
func (h *harness) kinds() (drops, marks int) {
	for _, e := range h.out {
		if e.ev.kind == drop {
			drops++
		} else {
			marks++
		}
	}
	return drops, marks
}

// TestScenarios drives the package's CoDel and the model through scenarios
// whose outcome follows from codel_impl.h by hand, and checks both that
// outcome and that the two agree at every dequeue. Target 5 ms, interval
// 100 ms (codel_params_init), a 1514-byte MTU; packets of 1500 bytes.
func TestScenarios(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name  string
		ecn   bool
		run   func(h *harness)
		check func(t *testing.T, h *harness)
	}{{
		// codel_should_drop: backlog <= mtu is never dropped from, however
		// long the packet waited.
		name: "one packet queued at a time: no drop",
		run: func(h *harness) {
			for range 500 {
				h.enqueue(1514, false)
				h.now += int64(time.Second)
				h.dequeue()
			}
		},
		check: wantKinds(0, 0),
	}, {
		// A sojourn below target is never dropped, whatever the backlog.
		name:  "sojourn below target: no drop",
		run:   func(h *harness) { h.standing(4, ms, 2*time.Second, false) },
		check: wantKinds(0, 0),
	}, {
		// 20 packets queued at 0, one in and one out every ms: the
		// sojourn reaches target at 5 ms, so the first drop is at the
		// first dequeue more than an interval later (106 ms), the second
		// an interval later (count 1, rec_inv_sqrt 1-2^-16), the third
		// half an interval later (count 2: one Newton step from 1 gives
		// 1/2, not 1/sqrt(2)).
		name: "standing queue: drops at 106 ms, +100 ms, +50 ms",
		run:  func(h *harness) { h.standing(20, ms, 400*ms, false) },
		check: func(t *testing.T, h *harness) {
			if len(h.out) < 3 {
				t.Fatalf("%d drops, want at least 3", len(h.out))
			}
			first, gap1, gap2 := h.out[0].at, h.out[1].at-h.out[0].at, h.out[2].at-h.out[1].at
			near := func(got, want time.Duration) bool { return got >= want-ms && got <= want+ms }
			if !near(first, 106*ms) || !near(gap1, 100*ms) || !near(gap2, 50*ms) {
				t.Errorf("drops at %v, then +%v, +%v; want about 106ms, +100ms, +50ms", first, gap1, gap2)
			}
		},
	}, {
		// With ECN on, ECN-capable packets are marked at the same instants
		// and none is dropped.
		name: "standing queue, ECT, ECN on: marks, no drops",
		ecn:  true,
		run:  func(h *harness) { h.standing(20, ms, time.Second, true) },
		check: func(t *testing.T, h *harness) {
			if d, m := h.kinds(); d != 0 || m < 5 {
				t.Errorf("%d drops, %d marks; want 0 drops, some marks", d, m)
			}
		},
	}, {
		// Not-ECT packets are dropped even with ECN on.
		name:  "standing queue, Not-ECT, ECN on: drops",
		ecn:   true,
		run:   func(h *harness) { h.standing(20, ms, time.Second, false) },
		check: func(t *testing.T, h *harness) { wantSomeDrops(t, h) },
	}, {
		// ECN off drops ECN-capable packets.
		name:  "standing queue, ECT, ECN off: drops",
		run:   func(h *harness) { h.standing(20, ms, time.Second, true) },
		check: func(t *testing.T, h *harness) { wantSomeDrops(t, h) },
	}, {
		// Going bad again within 16 intervals of the last drop resumes
		// from count - lastcount; later it starts from 1.
		name: "re-entry within 16 intervals resumes the count",
		run: func(h *harness) {
			h.standing(30, ms, 2*time.Second, false)
			h.drain(ms)
			h.now += int64(200 * ms)
			h.standing(30, ms, 200*ms, false)
		},
		check: func(t *testing.T, h *harness) {
			if h.v.Count <= 1 {
				t.Errorf("count %d after re-entry 200 ms on: want count - lastcount of the last state (> 1)", h.v.Count)
			}
		},
	}, {
		name: "re-entry after 16 intervals starts from 1",
		run: func(h *harness) {
			h.standing(30, ms, 2*time.Second, false)
			h.drain(ms)
			h.now += int64(2 * time.Second)
			h.standing(30, ms, 150*ms, false)
		},
		check: func(t *testing.T, h *harness) {
			if h.v.Count != 1 || !h.v.Dropping {
				t.Errorf("count %d (dropping %v) after re-entry 2 s on: want 1, dropping", h.v.Count, h.v.Dropping)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			// The same, with codel time (ns >> 10, 32 bits) wrapping
			// around 2^42 ns into the run: the outcome must not change.
			var outs [2][]timedEvent
			for i, start := range []int64{int64(time.Second), 1<<42 - int64(150*ms)} {
				h := newHarness(t, start, 5*ms, 100*ms, 1514, tc.ecn)
				tc.run(h)
				tc.check(t, h)
				outs[i] = h.out
			}
			if !slices.EqualFunc(outs[0], outs[1], func(a, b timedEvent) bool {
				return a.ev == b.ev && (a.at-b.at).Abs() < 2*time.Microsecond
			}) {
				t.Errorf("across the clock's wrap-around: %v; from 1 s: %v", outs[1], outs[0])
			}
		})
	}
}

func wantKinds(drops, marks int) func(*testing.T, *harness) {
	return func(t *testing.T, h *harness) {
		if d, m := h.kinds(); d != drops || m != marks {
			t.Errorf("%d drops, %d marks; want %d, %d", d, m, drops, marks)
		}
	}
}

func wantSomeDrops(t *testing.T, h *harness) {
	if d, m := h.kinds(); d < 5 || m != 0 {
		t.Errorf("%d drops, %d marks; want drops, no marks", d, m)
	}
}

// TestRandom runs the package's CoDel and the model through long seeded
// random sequences of arrivals (any size from 0 to 9000 bytes, a mix of
// ECN codepoints) and departures at random gaps, and fails at the first
// dequeue where they differ. 150000 steps a case in the long run
// (qdisctest.Long), the first 40000 of them by default.
func TestRandom(t *testing.T) {
	steps := 40000
	if qdisctest.Long() {
		steps = 150000
	}
	for _, tc := range []struct {
		name             string
		target, interval time.Duration
		mtu              uint32
		ecn              bool
		start            int64
		maxGap           time.Duration
		pArrive          float64
	}{
		{"defaults", 5 * time.Millisecond, 100 * time.Millisecond, 1514, false, int64(time.Second), 400 * time.Microsecond, 0.52},
		{"ECN", 5 * time.Millisecond, 100 * time.Millisecond, 1514, true, int64(time.Second), 400 * time.Microsecond, 0.52},
		{"short interval, across the clock wrap", time.Millisecond, 10 * time.Millisecond, 1514, true, 1<<42 - int64(time.Second), 100 * time.Microsecond, 0.55},
		{"jumbo MTU, bursty", 5 * time.Millisecond, 100 * time.Millisecond, 9014, false, int64(time.Second), 2 * time.Millisecond, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 4))
			h := newHarness(t, tc.start, tc.target, tc.interval, tc.mtu, tc.ecn)
			for range steps {
				h.now += rng.Int64N(int64(tc.maxGap))
				if rng.Float64() < tc.pArrive {
					size := uint32(64 + rng.IntN(1451))
					if rng.IntN(20) == 0 {
						size = uint32(rng.IntN(9001))
					}
					h.enqueue(size, rng.IntN(3) != 0)
				} else {
					h.dequeue()
				}
			}
			d, m := h.kinds()
			t.Logf("%d packets: %d dropped, %d marked", h.seq, d, m)
			if d+m == 0 {
				t.Errorf("nothing dropped or marked: the sequence did not exercise CoDel")
			}
		})
	}
}
