package cake

import (
	"math"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// saturate keeps every flow of flows backlogged (two packets queued each)
// while it dequeues n packets from s at time now, shaped or not, and
// returns the bytes each flow sent.
func saturate(t *testing.T, s *Sched, flows []pk, n int, step int64) []uint64 {
	t.Helper()
	sent := make([]uint64, len(flows))
	for i, p := range flows {
		p.seq = uint64(i)
		enqueue(t, s, p, 0)
		enqueue(t, s, p, 0)
	}
	now := int64(0)
	for k := 0; k < n; k++ {
		pkt, size, ok := s.Dequeue(now)
		if !ok {
			now = s.NextEvent()
			k--
			continue
		}
		i := seqOf(pkt)
		pkt.DecRef()
		sent[i] += uint64(size)
		p := flows[i]
		p.seq = i
		enqueue(t, s, p, now)
		now += step
	}
	checkInvariants(t, s)
	return sent
}

// fairnessPackets is how many packets TestHostFairness and
// TestServerFairness send in each case: 22000 in the long run
// (qdisctest.Long), 5500 by default, where every share is still within
// 0.002 of the one wanted (0.0005 in the long run), against a tolerance
// of 0.03.
func fairnessPackets() int {
	if qdisctest.Long() {
		return 22000
	}
	return 5500
}

// firstShare is the first flow's share of the bytes sent.
func firstShare(sent []uint64) float64 {
	var total uint64
	for _, b := range sent {
		total += b
	}
	return float64(sent[0]) / float64(total)
}

// TestHostFairness: a host with one flow against a host with ten, each
// sending to a host of its own, over a saturated period. With
// triple-isolate (the default) and the dual modes the one-flow host gets
// about half the bytes (cake_get_flow_quantum divides each flow's quantum
// by its host's bulk flows), as with one queue a host (srchost, dsthost,
// hosts); with flows, or one queue for all (flowblind), each flow gets a
// share, so the one-flow host gets about 1/11. When both send to one
// destination, triple-isolate is fair to that host's flows too: 1/11.
// Shaped and unlimited alike, on the send and receive paths, with and
// without TCP's hashes. Each case sends fairnessPackets: 22000 in the
// long run, 5500 by default.
func TestHostFairness(t *testing.T) {
	t.Parallel() // long under -race; shares nothing with the package's other tests
	for _, tc := range []struct {
		name   string
		iso    Isolation
		rate   uint64
		share  float64 // the one-flow host's
		queues uint32  // bulk queues: flows, or hosts for srchost
		hashed bool    // packets carry TCP's hash (pkt.Hash)
		rx     bool    // headers in the data, as on the receive path
		oneDst bool    // both hosts send to one destination
	}{
		{"triple-isolate, one destination", TripleIsolate, 0, 1.0 / 11, 11, false, false, true},
		{"triple-isolate, TCP's hashes", TripleIsolate, 0, 0.5, 11, true, false, false},
		{"triple-isolate, receive path", TripleIsolate, 0, 0.5, 11, false, true, false},
		{"triple-isolate, receive path, TCP's hashes", TripleIsolate, 0, 0.5, 11, true, true, false},
		{"triple-isolate unlimited", TripleIsolate, 0, 0.5, 11, false, false, false},
		{"triple-isolate shaped", TripleIsolate, 1_250_000, 0.5, 11, false, false, false},
		{"dual-srchost", DualSrcHost, 0, 0.5, 11, false, false, false},
		{"srchost: one queue a host", SrcHost, 0, 0.5, 2, false, false, false},
		{"flows", Flows, 0, 1.0 / 11, 11, false, false, false},
		{"dsthost: one queue a destination", DstHost, 0, 0.5, 2, false, false, false},
		{"hosts: one queue a pair", Hosts, 0, 0.5, 2, false, false, false},
		{"dual-dsthost", DualDstHost, 0, 0.5, 11, false, false, false},
		{"flowblind: one queue, first come first served", FlowBlind, 0, 1.0 / 11, 1, false, false, false},
		{"flows shaped", Flows, 1_250_000, 1.0 / 11, 11, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Isolation, cfg.Bandwidth, cfg.Diffserv = tc.iso, tc.rate, BestEffort
			s := testSched(t, cfg)
			flows := []pk{{src: 1, dst: 1, sport: 1000, dport: 80, payload: 1000}}
			for i := range 10 {
				flows = append(flows, pk{src: 2, dst: 2, sport: uint16(2000 + i), dport: 80, payload: 1000})
			}
			for i := range flows {
				if tc.oneDst {
					flows[i].dst = 1
				}
				flows[i].notParsed = tc.rx
				if tc.hashed {
					flows[i].hash = uint32(flows[i].sport)
				}
			}
			sent := saturate(t, s, flows, fairnessPackets(), 0)
			if share := firstShare(sent); math.Abs(share-tc.share) > 0.03 {
				t.Errorf("the one-flow host sent %.3f of the bytes, want %.3f (+-0.03): %v", share, tc.share, sent)
			}
			if x := s.XStats(); x.Tins[0].BulkFlows != tc.queues {
				t.Errorf("bulk flows %d, want %d", x.Tins[0].BulkFlows, tc.queues)
			}
		})
	}
}

// TestServerFairness: one host (a server, the sandbox) sends to two, one
// flow to client A and ten to client B, as TestCakeHostFairness does on
// real peers. cake_get_flow_quantum divides a flow's quantum by the
// larger of its source's and its destination's bulk flow counts where
// the mode counts them: with triple-isolate every flow's source is the
// server with 11, so each flow gets a share and A about 1/11, as with
// flows; dual-dsthost counts destinations alone, and A gets half. (The
// mirror of TestHostFairness's "one destination" case.) Each case sends
// fairnessPackets: 22000 in the long run, 5500 by default.
func TestServerFairness(t *testing.T) {
	for _, tc := range []struct {
		iso   Isolation
		share float64 // client A's
	}{
		{TripleIsolate, 1.0 / 11},
		{DualDstHost, 0.5},
		{DstHost, 0.5},
		{Flows, 1.0 / 11},
		{DualSrcHost, 1.0 / 11},
	} {
		t.Run(tc.iso.String(), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Isolation, cfg.Bandwidth, cfg.Diffserv = tc.iso, 12_500_000, BestEffort
			s := testSched(t, cfg)
			flows := []pk{{src: 1, dst: 1, sport: 80, dport: 1000, payload: 1000, hash: 1}}
			for i := range 10 {
				flows = append(flows, pk{src: 1, dst: 2, sport: 80, dport: uint16(2000 + i), payload: 1000, hash: uint32(2 + i)})
			}
			sent := saturate(t, s, flows, fairnessPackets(), 0)
			if share := firstShare(sent); math.Abs(share-tc.share) > 0.03 {
				t.Errorf("client A got %.3f of the bytes, want %.3f (+-0.03): %v", share, tc.share, sent)
			}
		})
	}
}

// TestSparseFlowFirst: a flow that sends little (a ping) is served before
// the bulk flows' next packets (DRR++: new flows first).
func TestSparseFlowFirst(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Diffserv = BestEffort
	s := testSched(t, cfg)
	for i := range 4 {
		for range 20 {
			enqueue(t, s, pk{src: 1, sport: uint16(1000 + i), payload: 1400, seq: uint64(i)}, 0)
		}
	}
	for range 10 {
		pkt, _, _ := s.Dequeue(0)
		pkt.DecRef()
	}
	enqueue(t, s, pk{src: 1, proto: 17, sport: 9, payload: 56, seq: 99}, 0)
	pkt, _, _ := s.Dequeue(0)
	defer pkt.DecRef()
	if seqOf(pkt) != 99 {
		t.Fatalf("after the new sparse packet, flow %d's left first", seqOf(pkt))
	}
}
