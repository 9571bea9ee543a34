package caketest

import (
	"encoding/binary"
	"slices"
	"testing"
)

// departures runs the model from now, following the watchdog, until n
// packets have left, and returns their IDs and times (relative to start).
func departures(t *testing.T, m *Model, now int64, n int) (ids []uint64, at []int64) {
	t.Helper()
	start := now
	for len(ids) < n {
		out, _ := m.DequeueAll(now)
		for _, o := range out {
			ids = append(ids, o.ID)
			at = append(at, now-start)
		}
		if len(ids) >= n {
			break
		}
		if now = m.NextTime(); now < 0 {
			t.Fatalf("after %d departures: nothing queued to wait for", len(ids))
		}
	}
	return ids, at
}

// TestIngressAdvancesShaper: at 1mbit (8 ms per 1000 bytes) with room for
// three packets, a fourth overflows and cake_drop drops the first. In
// ingress mode the drop is charged to the shaper (cake_advance_shaper with
// drop set): the global clock to t0+8ms and the tin's to t0+8ms, but not
// the failsafe clock, which only sends count against. Worked through:
//   - t0: failsafe_next_packet (t0) is not after now, so the hard shaper
//     lets packet 1 go; the global clock goes to t0+16ms, the failsafe to
//     t0+12ms (1.5 times 8ms), the tin's stays at t0+8ms.
//   - The watchdog is set for min(16, 12) = t0+12ms: packet 2 goes; the
//     tin's clock was behind now, so it moves by 8ms to t0+16ms; the
//     global to t0+24ms and the failsafe to t0+24ms.
//   - t0+24ms: packet 3.
//
// Without ingress the drop costs nothing: t0, t0+8ms, t0+16ms.
func TestIngressAdvancesShaper(t *testing.T) {
	for _, tc := range []struct {
		ingress bool
		at      []int64
	}{
		{true, []int64{0, 12e6, 24e6}},
		{false, []int64{0, 8e6, 16e6}},
	} {
		p := DefaultParams()
		p.Rate = 125000
		p.TinMode = BestEffort
		p.Memory = 3000
		p.Ingress = tc.ingress
		m, err := New(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		const t0 = int64(1e9)
		var drops []uint64
		for i := range 4 {
			for _, e := range m.Enqueue(t0, pkt{id: uint64(i), src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, ecn: 2, payload: 960}.ipv4()) {
				drops = append(drops, e.ID)
			}
		}
		if !slices.Equal(drops, []uint64{0}) {
			t.Fatalf("ingress %v: dropped %v, want [0]", tc.ingress, drops)
		}
		ids, at := departures(t, m, t0, 3)
		if !slices.Equal(ids, []uint64{1, 2, 3}) || !slices.Equal(at, tc.at) {
			t.Errorf("ingress %v: departures %v at %v, want [1 2 3] at %v", tc.ingress, ids, at, tc.at)
		}
	}
}

// TestSplitGSO: a TCP GSO packet of 2*1448+100 bytes of payload (headers
// 14+20+20) is split into segments of 1448+54 = 1502, 1502 and 100+54 =
// 154 bytes, each a whole IPv4 packet (total length and checksum
// rewritten), counted as three packets. Without split-gso it stays one,
// which the qdisc's sent counter counts as gso_segs (3) packets.
func TestSplitGSO(t *testing.T) {
	in := pkt{id: 7, src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, flags: fACK, payload: 2*1448 + 100,
		macLen: 14, gsoSize: 1448, gsoSegs: 3}.ipv4()
	for _, split := range []bool{true, false} {
		p := DefaultParams()
		p.SplitGSO = split
		m, err := New(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ev := m.Enqueue(1e9, in); len(ev) != 0 {
			t.Fatal(ev)
		}
		out, _ := m.DequeueAll(1e9)
		var lens []int
		for i, o := range out {
			lens = append(lens, o.MacLen+len(o.Data))
			if o.ID != 7 || o.Seg != uint32(i) || !headerOK(o.Data) || int(binary.BigEndian.Uint16(o.Data[2:4])) != len(o.Data) {
				t.Errorf("split %v: segment %d: id %d seg %d, checksum ok %v, total length %d of %d",
					split, i, o.ID, o.Seg, headerOK(o.Data), binary.BigEndian.Uint16(o.Data[2:4]), len(o.Data))
			}
		}
		want := []int{1502, 1502, 154}
		if !split {
			want = []int{14 + 40 + 2996}
		}
		s := m.Stats()
		if !slices.Equal(lens, want) || s.Packets != 3 {
			t.Errorf("split %v: lengths %v, sent count %d; want %v, 3", split, lens, s.Packets, want)
		}
	}
}

// TestSparseFirst: DRR++ serves a flow that has just become active (new
// flows list) before the bulk flows: after flow A has used its first
// quantum (and so joined the old flows as bulk), a lone packet of flow B
// leaves next.
func TestSparseFirst(t *testing.T) {
	p := DefaultParams()
	p.FlowMode = FlowFlows
	p.TinMode = BestEffort
	m, err := New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := func(id uint64) Packet {
		return pkt{id: id, src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, ecn: 2, payload: 1460, macLen: 14}.ipv4()
	}
	for i := range 10 {
		m.Enqueue(1e9, a(uint64(i)))
	}
	// The quantum is 1513 or 1514 (dither): one 1514-byte packet uses it.
	if pk, _ := m.Dequeue(1e9); pk == nil || pk.ID != 0 {
		t.Fatalf("first departure %v", pk)
	}
	m.Enqueue(1e9, pkt{id: 100, src: "10.0.0.3", dst: "10.0.0.2", sport: 1, dport: 2, ecn: 2, payload: 100, macLen: 14}.ipv4())
	pk, _ := m.Dequeue(1e9)
	if pk == nil || pk.ID != 100 {
		t.Fatalf("departure after the sparse arrival: %v, want 100", pk)
	}
	s := m.Stats().Tins[0]
	if s.BulkFlows != 1 {
		t.Errorf("bulk flows %d, want 1 (A)", s.BulkFlows)
	}
}

// TestTinDRR: unshaped diffserv4 shares between backlogged tins by their
// quanta (cake_dequeue's DRR over tin_deficit): best effort (1024) against
// bulk (64): 16/17 of the bytes.
func TestTinDRR(t *testing.T) {
	p := DefaultParams()
	p.TinMode = Diffserv4
	m, err := New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(id uint64, dscp uint8) Packet {
		return pkt{id: id, src: "10.0.0.1", dst: "10.0.0.2", sport: uint16(1 + dscp), dport: 2, dscp: dscp, ecn: 2, payload: 1460, macLen: 14}.ipv4()
	}
	var id uint64
	queued := map[uint8]int{}
	owner := map[uint64]uint8{}
	var be, all int
	now := int64(1e9)
	for sent := 0; sent < 17000; sent++ {
		for _, dscp := range []uint8{0, 8} { // CS0: tin 0; CS1: tin 1
			for queued[dscp] < 4 {
				id++
				owner[id] = dscp
				m.Enqueue(now, mk(id, dscp))
				queued[dscp]++
			}
		}
		pk, _ := m.Dequeue(now)
		if pk == nil {
			t.Fatal("nothing sent")
		}
		queued[owner[pk.ID]]--
		all++
		if owner[pk.ID] == 0 {
			be++
		}
	}
	if share := float64(be) / float64(all); share < 0.93 || share > 0.95 {
		t.Errorf("best effort's share %.4f, want 16/17 = 0.941", share)
	}
}

// TestAutorateIngress follows cake_enqueue's capacity estimate for two
// 1000-byte arrivals on an unlimited cake, from the zeroed state:
//   - t0 = 1 s: the gap since last_packet_time (0) is 1 s (the cap), above
//     the average gap (0), so the average moves a quarter of the way:
//     250 ms; the gap is above it, so the window closes: 1000 bytes over
//     t0-0 = 1 s is 1000 B/s, and the peak estimate moves a quarter of the
//     way from 0: 250. last_reconfig_time is never set (0), so the rate
//     becomes 250*15/16 = 234 (floored) and cake_reconfigure runs.
//   - t0+2 s: gap 2 s, capped at 1 s, average 250 ms - 62.5 ms + 250 ms =
//     437.5 ms; window 1000 bytes over 2 s = 500 B/s; estimate 250 - 62 +
//     125 = 313; rate 313*15/16 = 293.
func TestAutorateIngress(t *testing.T) {
	p := DefaultParams()
	p.AutorateIngress = true
	p.TinMode = BestEffort
	m, err := New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		at       int64
		estimate uint64
		rate     uint64
	}{
		{1e9, 250, 234},
		{3e9, 313, 293},
	} {
		m.Enqueue(step.at, pkt{id: uint64(i), src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, payload: 960}.ipv4())
		m.DequeueAll(step.at)
		s := m.Stats()
		if s.CapacityEstimate != step.estimate || s.Tins[0].ThreshRate != step.rate {
			t.Errorf("after arrival %d: estimate %d, rate %d; want %d, %d", i, s.CapacityEstimate, s.Tins[0].ThreshRate, step.estimate, step.rate)
		}
	}
}
