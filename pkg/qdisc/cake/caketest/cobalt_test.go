package caketest

import (
	"math"
	"slices"
	"testing"
)

// TestCoDelSchedule drives one unresponsive flow (not ECN-capable) on an
// unshaped cake: 300 packets queued at t0, one dequeue a millisecond from
// T0 = t0+6ms, so every packet has waited more than the 5 ms target.
//
// Worked from cobalt_should_drop. The flow is fresh: count 0 and
// rec_inv_sqrt 0 (cobalt_vars_init zeroes them).
//   - At T0 the sojourn (6ms) is over target: dropping starts with
//     drop_next = cobalt_control(now, 100ms, rec_inv_sqrt=0) = T0, count 1;
//     no drop yet (count was 0).
//   - At T0+1ms the schedule is due: drop (count 2, rec_inv_sqrt =
//     cache[2] = 3037000500), drop_next = T0 + 100e6*3037000500>>32 =
//     T0 + 70710678 (100ms/sqrt 2). The next packet goes out.
//   - At T0+71ms (the first millisecond at or after 70.710678): drop, count
//     3, cache[3] = 2479700525: + 57735026 (100ms/sqrt 3) = T0+128445704.
//   - At T0+129ms: drop, count 4, cache[4] = 2147483647: + 49999999 =
//     T0+178445703.
//   - At T0+179ms: drop, count 5, cache[5] = 1920767767: + 44721359 =
//     T0+223167062.
//   - At T0+224ms: drop.
//
// So a fresh flow's first drop comes one dequeue after the queue is first
// seen over target (not an interval later: rec_inv_sqrt is still 0 then),
// and then interval/sqrt(count) apart.
func TestCoDelSchedule(t *testing.T) {
	p := DefaultParams()
	p.TinMode = BestEffort
	p.FlowMode = FlowFlows
	m, err := New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1e9)
	for i := range 300 {
		m.Enqueue(t0, pkt{id: uint64(i), src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, payload: 960}.ipv4())
	}
	T0 := t0 + 6e6
	var drops []int64
	delivered := 0
	for k := int64(0); k < 230; k++ {
		now := T0 + k*1e6
		pk, ev := m.Dequeue(now)
		if pk == nil {
			t.Fatalf("nothing at %d ms", k)
		}
		delivered++
		for _, e := range ev {
			if e.Kind != DropCoDel {
				t.Fatalf("event %v, want only CoDel drops", e)
			}
			drops = append(drops, (now-T0)/1e6)
		}
	}
	want := []int64{1, 71, 129, 179, 224}
	if !slices.Equal(drops, want) {
		t.Errorf("drops at ms %v after T0, want %v", drops, want)
	}
	f := &m.tins[0].flows[m.curFlow]
	if f.cvars.count != 6 {
		t.Errorf("count %d, want 6", f.cvars.count)
	}
	if s := m.Stats(); s.Tins[0].Drops != 5 || s.Drops != 5 || s.Packets != 230 {
		t.Errorf("stats: tin drops %d, drops %d, sent %d; want 5, 5, 230", s.Tins[0].Drops, s.Drops, s.Packets)
	}
}

// TestCoDelMarks is TestCoDelSchedule with ECT(0) packets: the same
// schedule marks instead of dropping, and the marked packets carry CE
// with a valid IPv4 checksum.
func TestCoDelMarks(t *testing.T) {
	p := DefaultParams()
	p.TinMode = BestEffort
	m, err := New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1e9)
	for i := range 100 {
		m.Enqueue(t0, pkt{id: uint64(i), src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, ecn: 2, payload: 960}.ipv4())
	}
	T0 := t0 + 6e6
	var marks []int64
	for k := int64(0); k < 80; k++ {
		now := T0 + k*1e6
		pk, ev := m.Dequeue(now)
		if pk == nil {
			t.Fatalf("nothing at %d ms", k)
		}
		ce := pk.Data[1]&3 == ecnCE
		if !headerOK(pk.Data) {
			t.Fatalf("packet %d: bad IPv4 checksum after marking", pk.ID)
		}
		if ce != (len(ev) == 1 && ev[0].Kind == MarkCE && ev[0].ID == pk.ID) {
			t.Fatalf("packet %d: CE %v but events %v", pk.ID, ce, ev)
		}
		if ce {
			marks = append(marks, k)
		}
	}
	if want := []int64{1, 71}; !slices.Equal(marks, want) {
		t.Errorf("marks at ms %v, want %v", marks, want)
	}
	if s := m.Stats(); s.Tins[0].Marks != 2 || s.Drops != 0 {
		t.Errorf("marks %d drops %d, want 2 and 0", s.Tins[0].Marks, s.Drops)
	}
}

// TestInvSqrt checks the Newton step past the cache: from count 16 on,
// one step from the previous value per count, as COBALT takes them as
// count climbs, stays within 0.2% of 2^32/sqrt(count): the worst is the
// first, 1071990595 for count 16 from cache[15] (0.163% below 2^30).
func TestInvSqrt(t *testing.T) {
	v := cobaltVars{count: 15}
	v.invSqrt()
	if v.recInvSqrt != 1108955788 {
		t.Fatalf("cache[15] = %d", v.recInvSqrt)
	}
	for c := uint32(16); c < 5000; c++ {
		v.count = c
		v.invSqrt()
		exact := math.Pow(2, 32) / math.Sqrt(float64(c))
		if r := float64(v.recInvSqrt) / exact; r < 0.998 || r > 1.002 {
			t.Fatalf("count %d: rec_inv_sqrt %d, 2^32/sqrt = %.0f", c, v.recInvSqrt, exact)
		}
	}
}

// TestBlue floods one flow past a small memory limit. Every overflow
// (cake_drop -> cobalt_queue_full) more than target (5ms) after the last
// raises p_drop by 1/256 (2^24); overflows within target of it do not.
// BLUE then drops at dequeue when get_random_u32 < p_drop.
func TestBlue(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rnd      uint32
		wantBlue bool
	}{
		{"random below p_drop drops", 0, true},
		{"random above p_drop passes", math.MaxUint32, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.TinMode = BestEffort
			p.Memory = 10000
			p.Rand = func() uint32 { return tc.rnd }
			m, err := New(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			const t0 = int64(1e9)
			id := uint64(0)
			// Rounds 10ms apart: 15 packets of 1000 bytes, 5 over the limit.
			for round := range 4 {
				now := t0 + int64(round)*10e6
				var overflow int
				for range 15 {
					for _, e := range m.Enqueue(now, pkt{id: id, src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, payload: 960}.ipv4()) {
						if e.Kind == DropOverlimit {
							overflow++
						}
					}
					id++
				}
				if round == 0 && overflow != 5 {
					t.Fatalf("round 0: %d overflow drops, want 5", overflow)
				}
				f := &m.tins[0].flows[m.tins[0].newFlows[0]]
				if want := uint32(round+1) << 24; f.cvars.pDrop != want {
					t.Fatalf("round %d: p_drop %#x, want %#x", round, f.cvars.pDrop, want)
				}
			}
			if s := m.Stats(); s.Tins[0].UnresponsiveFlows != 1 {
				t.Errorf("un_flows %d, want 1", s.Tins[0].UnresponsiveFlows)
			}
			// The next dequeue: the sojourn (below target for none: the
			// last round waited 0) leaves CoDel alone; BLUE decides.
			pk, ev := m.Dequeue(t0 + 30e6)
			gotBlue := len(ev) > 0 && ev[0].Kind == DropBlue
			if gotBlue != tc.wantBlue || pk == nil {
				t.Errorf("events %v, packet %v; want a BLUE drop: %v", ev, pk != nil, tc.wantBlue)
			}
		})
	}
}

// TestCoDelFirstDropAfterInterval: a flow whose COBALT state has been
// through a drop and back to rest holds rec_inv_sqrt = cache[0] = ~0, and
// then its first drop comes an interval (less a nanosecond) after it is
// first seen over target, as CoDel's does. Worked through:
//   - Priming: 3 packets at t0; at T0 = t0+6ms the first goes (dropping
//     starts, drop_next = T0 since rec_inv_sqrt is 0), at T0+1ms the
//     second is dropped (count 2, drop_next T0+70710678) and the third
//     goes.
//   - t1 = T0+1s: one packet, dequeued at once (under target): the overdue
//     schedule walks count down to 0, setting rec_inv_sqrt to cache[1]
//     then cache[0] (both ~0); with count 0, drop_next = t1+100ms.
//   - t2 = t1+50ms: 300 packets; from T2 = t2+6ms one dequeue a ms. At T2
//     the queue is over target: drop_next = T2 + 100e6*(2^32-1)>>32 =
//     T2+99999999 (and stays: the old drop_next, t1+100ms, is still
//     ahead). First drop at T2+100ms; then count 2: +70710678 =
//     T2+170710677, a drop at T2+171ms; count 3: +57735026 =
//     T2+228445703, a drop at T2+229ms.
func TestCoDelFirstDropAfterInterval(t *testing.T) {
	p := DefaultParams()
	p.TinMode = BestEffort
	m, err := New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(id uint64) Packet {
		return pkt{id: id, src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, payload: 960}.ipv4()
	}
	var dropped []uint64
	collect := func(ev []Event) {
		for _, e := range ev {
			dropped = append(dropped, e.ID)
		}
	}
	const t0 = int64(1e9)
	for i := range 3 {
		m.Enqueue(t0, mk(uint64(i)))
	}
	T0 := t0 + 6e6
	_, ev := m.DequeueAll(T0)
	collect(ev)
	_, ev = m.DequeueAll(T0 + 1e6)
	collect(ev)
	if !slices.Equal(dropped, []uint64{1}) {
		t.Fatalf("priming dropped %v, want [1]", dropped)
	}
	t1 := T0 + 1e9
	m.Enqueue(t1, mk(3))
	_, ev = m.DequeueAll(t1)
	collect(ev)
	f := &m.tins[0].flows[m.curFlow]
	if f.cvars.count != 0 || f.cvars.recInvSqrt != ^uint32(0) || f.cvars.dropNext != t1+100e6 {
		t.Fatalf("at rest: count %d rec_inv_sqrt %#x drop_next %d; want 0, ~0, t1+100ms", f.cvars.count, f.cvars.recInvSqrt, f.cvars.dropNext-t1)
	}
	t2 := t1 + 50e6
	for i := range 300 {
		m.Enqueue(t2, mk(100+uint64(i)))
	}
	T2 := t2 + 6e6
	var at []int64
	for k := int64(0); k <= 230; k++ {
		pk, ev := m.Dequeue(T2 + k*1e6)
		if pk == nil {
			t.Fatalf("nothing at %d ms", k)
		}
		for range ev {
			at = append(at, k)
		}
	}
	if want := []int64{100, 171, 229}; !slices.Equal(at, want) {
		t.Errorf("drops at ms %v after T2, want %v", at, want)
	}
}
