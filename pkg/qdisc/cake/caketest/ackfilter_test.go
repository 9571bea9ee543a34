package caketest

import (
	"slices"
	"testing"
)

// TestAckFilter enqueues, into one queue (flowblind), the packets of each
// case in order and checks which the ACK filter drops. Each expectation
// follows cake_ack_filter: the new packet (the tail) must have ACK and not
// SYN; an older packet is eligible if it is a pure ACK of the same
// 5-tuple (no data, no flag but ACK/ECE/CWR, only SACK, timestamp and MD5
// options, timestamps not after the new one's), its cumulative ACK not
// after the new one's, and the new one SACKs at least what it SACKs and,
// with the same ACK, strictly more. A change of ECE/CWR between eligible
// ACKs restarts the search. Conservative mode drops the first eligible
// ACK once it finds two; aggressive also drops a single one that sits
// right before the new packet with the same ECE/CWR.
func TestAckFilter(t *testing.T) {
	ack := func(id uint64, n uint32, flags uint8, opts ...[]byte) pkt {
		return pkt{id: id, src: "10.0.0.1", dst: "10.0.0.2", sport: 1000, dport: 80, ack: n, flags: flags, opts: slices.Concat(opts...)}
	}
	data := func(id uint64, n uint32) pkt {
		d := ack(id, n, fACK)
		d.payload = 100
		return d
	}
	withPort := func(d pkt, port uint16) pkt { d.sport = port; return d }
	mss := []byte{2, 4, 0x05, 0xb4}
	for _, tc := range []struct {
		name    string
		mode    AckFilter
		pkts    []pkt
		dropped []uint64
	}{
		{"conservative: one older ACK is kept", AckFilterOn,
			[]pkt{ack(1, 1000, fACK), ack(2, 2000, fACK)}, nil},
		{"conservative: two older ACKs, the first goes", AckFilterOn,
			[]pkt{ack(1, 1000, fACK), ack(2, 2000, fACK), ack(3, 3000, fACK)}, []uint64{1}},
		{"conservative: a steady ACK stream keeps two", AckFilterOn,
			[]pkt{ack(1, 1000, fACK), ack(2, 2000, fACK), ack(3, 3000, fACK), ack(4, 4000, fACK)}, []uint64{1, 2}},
		{"aggressive: the older ACK goes", AckAggressive,
			[]pkt{ack(1, 1000, fACK), ack(2, 2000, fACK)}, []uint64{1}},
		{"aggressive: not adjacent (data between)", AckAggressive,
			[]pkt{ack(1, 1000, fACK), data(2, 1000), ack(3, 2000, fACK)}, nil},
		{"conservative: data is never eligible", AckFilterOn,
			[]pkt{ack(1, 1000, fACK), data(2, 1000), ack(3, 2000, fACK), ack(4, 3000, fACK)}, []uint64{1}},
		{"aggressive: older SACK not covered by the new ACK", AckAggressive,
			[]pkt{ack(1, 1000, fACK, optSACK(5000, 6000)), ack(2, 2000, fACK)}, nil},
		{"aggressive: same ACK, the new one SACKs more", AckAggressive,
			[]pkt{ack(1, 1000, fACK, optSACK(5000, 6000)), ack(2, 1000, fACK, optSACK(5000, 7000))}, []uint64{1}},
		{"aggressive: same ACK, same SACK (a duplicate) is kept", AckAggressive,
			[]pkt{ack(1, 1000, fACK, optSACK(5000, 6000)), ack(2, 1000, fACK, optSACK(5000, 6000))}, nil},
		{"aggressive: a DSACK is kept", AckAggressive,
			[]pkt{ack(1, 1000, fACK, optSACK(500, 1000)), ack(2, 2000, fACK, optSACK(500, 1000))}, nil},
		{"aggressive: duplicate ACKs are kept", AckAggressive,
			[]pkt{ack(1, 1000, fACK), ack(2, 1000, fACK)}, nil},
		{"aggressive: ECE on the older only", AckAggressive,
			[]pkt{ack(1, 1000, fACK|fECE), ack(2, 2000, fACK)}, nil},
		{"aggressive: ECE on both", AckAggressive,
			[]pkt{ack(1, 1000, fACK|fECE), ack(2, 2000, fACK|fECE)}, []uint64{1}},
		{"conservative: ECE changes between eligible ACKs", AckFilterOn,
			[]pkt{ack(1, 1000, fACK), ack(2, 2000, fACK|fECE), ack(3, 3000, fACK|fECE)}, nil},
		{"aggressive: an MSS option keeps it", AckAggressive,
			[]pkt{ack(1, 1000, fACK, mss), ack(2, 2000, fACK)}, nil},
		{"aggressive: older timestamps", AckAggressive,
			[]pkt{ack(1, 1000, fACK, optTS(100, 50)), ack(2, 2000, fACK, optTS(200, 60))}, []uint64{1}},
		{"aggressive: a later timestamp keeps it", AckAggressive,
			[]pkt{ack(1, 1000, fACK, optTS(300, 50)), ack(2, 2000, fACK, optTS(200, 60))}, nil},
		{"aggressive: PSH keeps it", AckAggressive,
			[]pkt{ack(1, 1000, fACK|fPSH), ack(2, 2000, fACK)}, nil},
		{"aggressive: a higher older ACK is kept", AckAggressive,
			[]pkt{ack(1, 2000, fACK), ack(2, 1000, fACK)}, nil},
		{"aggressive: another connection", AckAggressive,
			[]pkt{withPort(ack(1, 1000, fACK), 1001), ack(2, 2000, fACK)}, nil},
		{"aggressive: a SYN-ACK triggers nothing", AckAggressive,
			[]pkt{ack(1, 1000, fACK), ack(2, 2000, fACK|fSYN)}, nil},
		{"off", AckNone,
			[]pkt{ack(1, 1000, fACK), ack(2, 2000, fACK), ack(3, 3000, fACK)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.FlowMode = FlowNone
			p.TinMode = BestEffort
			p.AckFilter = tc.mode
			m, err := New(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			var dropped []uint64
			for _, d := range tc.pkts {
				for _, e := range m.Enqueue(1e9, d.ipv4()) {
					if e.Kind != DropAckFilter {
						t.Fatalf("event %v", e)
					}
					dropped = append(dropped, e.ID)
				}
			}
			if !slices.Equal(dropped, tc.dropped) {
				t.Errorf("dropped %v, want %v", dropped, tc.dropped)
			}
			s := m.Stats()
			if int(s.Tins[0].AckDrops) != len(tc.dropped) || s.BacklogPackets != uint32(len(tc.pkts)-len(tc.dropped)) {
				t.Errorf("ack_drop %d, queued %d; want %d, %d", s.Tins[0].AckDrops, s.BacklogPackets, len(tc.dropped), len(tc.pkts)-len(tc.dropped))
			}
			// What is left leaves in order, without the dropped ones.
			out, _ := m.DequeueAll(1e9) // no wait: COBALT stays out of it
			var ids []uint64
			for _, o := range out {
				ids = append(ids, o.ID)
			}
			var want []uint64
			for _, d := range tc.pkts {
				if !slices.Contains(tc.dropped, d.id) {
					want = append(want, d.id)
				}
			}
			if !slices.Equal(ids, want) {
				t.Errorf("departures %v, want %v", ids, want)
			}
		})
	}
}
