package cake

import (
	"encoding/binary"
	"slices"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
)

// sack returns TCP options holding one SACK block.
func sack(start, end uint32) []byte {
	b := []byte{1, 1, 5, 10, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[4:], start)
	binary.BigEndian.PutUint32(b[8:], end)
	return b
}

// tstamp returns TCP options holding a timestamp.
func tsOpt(val, ecr uint32) []byte {
	b := []byte{1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[4:], val)
	binary.BigEndian.PutUint32(b[8:], ecr)
	return b
}

// TestAckFilter: the ACK filter drops a queued pure ACK that a later one
// of the same connection supersedes (in the default mode once two are
// eligible, the one nearest the head; aggressive, also a single one right
// before the new ACK), and keeps every ACK whose loss would lose
// something: data, a SACK block the new one does not cover, other flags,
// a newer timestamp, ECE or CWR that differ from the ACKs around it, an
// unknown option, another connection's.
func TestAckFilter(t *testing.T) {
	ack := func(seq uint64, n uint32) pk {
		return pk{sport: 5000, dport: 80, ack: n, seq: seq}
	}
	with := func(p pk, f func(*pk)) pk { f(&p); return p }
	for _, tc := range []struct {
		name string
		mode AckFilter
		pkts []pk
		kept []uint64 // the seqs that leave, in order
	}{
		{"off", NoAckFilter, []pk{ack(0, 1000), ack(1, 2000), ack(2, 3000)}, []uint64{0, 1, 2}},
		{"on: the oldest of two superseded", AckFilterOn, []pk{ack(0, 1000), ack(1, 2000), ack(2, 3000)}, []uint64{1, 2}},
		{"on: one alone is kept", AckFilterOn, []pk{ack(0, 1000), ack(1, 2000)}, []uint64{0, 1}},
		{"aggressive: one alone is dropped", AckFilterAggressive, []pk{ack(0, 1000), ack(1, 2000)}, []uint64{1}},
		{"aggressive, IPv6", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.v6 = true }), with(ack(1, 2000), func(p *pk) { p.v6 = true })}, []uint64{1}},
		{"a later ACK number is kept", AckFilterAggressive, []pk{ack(0, 3000), ack(1, 2000)}, []uint64{0, 1}},
		{"an equal ACK without more SACK is kept", AckFilterAggressive, []pk{ack(0, 2000), ack(1, 2000)}, []uint64{0, 1}},
		{"an equal ACK with more SACK supersedes", AckFilterAggressive, []pk{ack(0, 2000), with(ack(1, 2000), func(p *pk) { p.opts = sack(3000, 4000) })}, []uint64{1}},
		{"data is kept", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.payload = 100 }), ack(1, 2000)}, []uint64{0, 1}},
		{"a SACK block not covered is kept", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.opts = sack(5000, 6000) }), with(ack(1, 2000), func(p *pk) { p.opts = sack(7000, 8000) })}, []uint64{0, 1}},
		{"a SACK block covered is dropped", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.opts = sack(5000, 6000) }), with(ack(1, 2000), func(p *pk) { p.opts = sack(5000, 8000) })}, []uint64{1}},
		{"a D-SACK is kept", AckFilterAggressive, []pk{with(ack(0, 2000), func(p *pk) { p.opts = sack(500, 1000) }), with(ack(1, 3000), func(p *pk) { p.opts = sack(0, 1000) })}, []uint64{0, 1}},
		{"a newer timestamp is kept", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.opts = tsOpt(20, 5) }), with(ack(1, 2000), func(p *pk) { p.opts = tsOpt(10, 5) })}, []uint64{0, 1}},
		{"an older timestamp is dropped", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.opts = tsOpt(10, 5) }), with(ack(1, 2000), func(p *pk) { p.opts = tsOpt(20, 5) })}, []uint64{1}},
		{"PSH is kept", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.flags = header.TCPFlagAck | header.TCPFlagPsh }), ack(1, 2000)}, []uint64{0, 1}},
		{"ECE differing from the new ACK is kept", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.flags = header.TCPFlagAck | header.TCPFlagEce }), ack(1, 2000)}, []uint64{0, 1}},
		{"ECE then not: the ECE one is kept, on", AckFilterOn, []pk{with(ack(0, 1000), func(p *pk) { p.flags = header.TCPFlagAck | header.TCPFlagEce }), ack(1, 2000), ack(2, 3000)}, []uint64{0, 1, 2}},
		{"ECE then not: the ECE one is kept, aggressive", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.flags = header.TCPFlagAck | header.TCPFlagEce }), ack(1, 2000), ack(2, 3000)}, []uint64{0, 2}},
		{"an unknown option is kept", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.opts = []byte{1, 1, 30, 4, 0, 0, 0, 0} }), ack(1, 2000)}, []uint64{0, 1}},
		{"a lying option length ends the walk", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.opts = []byte{1, 1, 8, 40} }), ack(1, 2000)}, []uint64{1}},
		{"another connection's is kept", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.sport = 5001; p.hash = 7 }), with(ack(1, 2000), func(p *pk) { p.hash = 7 })}, []uint64{0, 1}},
		{"a SYN-ACK triggers nothing", AckFilterAggressive, []pk{ack(0, 1000), with(ack(1, 2000), func(p *pk) { p.flags = header.TCPFlagAck | header.TCPFlagSyn })}, []uint64{0, 1}},
		{"UDP is not filtered", AckFilterAggressive, []pk{with(ack(0, 1000), func(p *pk) { p.proto, p.payload = 17, 8 }), with(ack(1, 2000), func(p *pk) { p.proto, p.payload = 17, 8 })}, []uint64{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.AckFilter, cfg.Isolation = tc.mode, FlowBlind // one queue: the 5-tuple check is the filter's
			s := testSched(t, cfg)
			for _, p := range tc.pkts {
				enqueue(t, s, p, 0)
				checkInvariants(t, s)
			}
			var got []uint64
			for {
				pkt, _, ok := s.Dequeue(0)
				if !ok {
					break
				}
				if pkt.TransportProtocolNumber == header.UDPProtocolNumber {
					got = append(got, seqOf(pkt))
				} else {
					got = append(got, uint64(header.TCP(pkt.TransportHeader().Slice()).SequenceNumber()))
				}
				pkt.DecRef()
			}
			if !slices.Equal(got, tc.kept) {
				t.Errorf("left %v, want %v", got, tc.kept)
			}
			var ackDrops uint32
			for _, x := range s.XStats().Tins {
				ackDrops += x.AckDrops
			}
			if int(ackDrops) != len(tc.pkts)-len(tc.kept) || s.Drops() != uint64(ackDrops) {
				t.Errorf("ack_drop %d, drops %d; want %d", ackDrops, s.Drops(), len(tc.pkts)-len(tc.kept))
			}
		})
	}
}
