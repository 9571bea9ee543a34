package caketest

import (
	"slices"
	"testing"
)

// TestIPv6 runs IPv6 packets through the paths that read headers: the
// diffserv3 tin from the traffic class (EF: tin 2) with wash clearing the
// DSCP and keeping ECN, COBALT marking CE in the traffic class, and the
// ACK filter comparing IPv6 addresses.
func TestIPv6(t *testing.T) {
	p := DefaultParams()
	p.Wash = true
	p.FlowMode = FlowFlows
	m, err := New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	const t0 = int64(1e9)
	for i := range 3 {
		m.Enqueue(t0, pkt{id: uint64(i), src: "2001:db8::1", dst: "2001:db8::2", sport: 1, dport: 2, dscp: 46, ecn: 2, payload: 500}.ipv6(0))
	}
	if s := m.Stats(); s.Tins[2].Tin != 2 || s.Tins[2].Packets != 3 {
		t.Fatalf("EF packets not in tin 2: %+v", s.Tins)
	}
	// A fresh flow over target: the first dequeue starts dropping, the
	// second marks (see TestCoDelSchedule).
	T0 := t0 + 6e6
	first, _ := m.Dequeue(T0)
	second, ev := m.Dequeue(T0 + 1e6)
	if first == nil || second == nil || len(ev) != 1 || ev[0].Kind != MarkCE {
		t.Fatalf("departures %v %v, events %v", first, second, ev)
	}
	tc := func(p *Packet) uint8 { return p.Data[0]<<4 | p.Data[1]>>4 }
	if tc(first) != 2 || tc(second) != 3 || first.Data[0]>>4 != 6 || second.Data[1]&0xf != 0 {
		t.Errorf("traffic classes %#x and %#x, want 0x02 (washed, ECT(0)) and 0x03 (CE)", tc(first), tc(second))
	}

	p = DefaultParams()
	p.FlowMode = FlowNone
	p.AckFilter = AckAggressive
	m, err = New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	ack := func(id uint64, src string, n uint32) Packet {
		return pkt{id: id, src: src, dst: "2001:db8::2", sport: 1000, dport: 80, flags: fACK, ack: n}.ipv6(7)
	}
	var dropped []uint64
	for _, pk := range []Packet{ack(1, "2001:db8::1", 1000), ack(2, "2001:db8::1", 2000), ack(3, "2001:db8::3", 3000)} {
		for _, e := range m.Enqueue(t0, pk) {
			dropped = append(dropped, e.ID)
		}
	}
	// 2 supersedes 1; 3 is another source address.
	if !slices.Equal(dropped, []uint64{1}) {
		t.Errorf("dropped %v, want [1]", dropped)
	}
}
