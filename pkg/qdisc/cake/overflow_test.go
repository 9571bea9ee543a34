package cake

import (
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestMemlimitDropsFattest: past memlimit cake drops from the head of the
// fattest flow of any tin (cake_drop), so a flow that sends little keeps
// every packet while the flood's flow loses its oldest; the memory in use
// never stays above the limit.
func TestMemlimitDropsFattest(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Memlimit = MinMemlimit
	s := testSched(t, cfg)
	for i := range 3 {
		enqueue(t, s, pk{src: 1, sport: 1, payload: 100, seq: uint64(1000 + i), tos: 46 << 2}, 0) // a voice flow
	}
	for i := range 400 {
		enqueue(t, s, pk{src: 2, sport: 2, payload: 1400, seq: uint64(i)}, 0)
		checkInvariants(t, s)
		checkMemory(t, s)
	}
	if s.drops == 0 {
		t.Fatalf("no drops: %d bytes of memory queued, limit %d", s.bufferUsed, s.bufferLimit)
	}
	x := s.XStats()
	if x.Tins[1].Drops != uint32(s.drops) || x.Tins[2].Drops != 0 {
		t.Errorf("drops by tin %d (best effort) and %d (voice); want all %d from best effort", x.Tins[1].Drops, x.Tins[2].Drops, s.drops)
	}
	var voice, bulk []uint64
	for {
		pkt, _, ok := s.Dequeue(0)
		if !ok {
			break
		}
		if q := seqOf(pkt); q >= 1000 {
			voice = append(voice, q)
		} else {
			bulk = append(bulk, q)
		}
		pkt.DecRef()
	}
	if len(voice) != 3 {
		t.Errorf("the small flow kept %v, want all 3", voice)
	}
	if len(bulk) == 0 || bulk[0] != s.drops || uint64(len(bulk))+s.drops != 400 {
		t.Errorf("the flood kept %d packets from %v on, with %d dropped: want its oldest dropped", len(bulk), bulk[:min(1, len(bulk))], s.drops)
	}
}

// TestIngressAdvancesShaper: in ingress mode a packet cake drops still
// counts against the shaper (it crossed the link already), up to the
// failsafe clock, which counts only what was sent; in egress mode it
// does not. A pure ACK the aggressive filter drops: 40 bytes at 1000ns a
// byte.
func TestIngressAdvancesShaper(t *testing.T) {
	for _, tc := range []struct {
		ingress bool
		next    int64
	}{
		// Egress: one ACK sent, 40000ns; failsafe 60000.
		{false, 40000},
		// Ingress: the dropped ACK too, 80000ns, but the failsafe
		// (1.5 times what was sent) is due first.
		{true, 60000},
	} {
		cfg := DefaultConfig()
		cfg.Bandwidth, cfg.Ingress, cfg.AckFilter, cfg.Diffserv = 1_000_000, tc.ingress, AckFilterAggressive, BestEffort
		s := testSched(t, cfg)
		enqueue(t, s, pk{ack: 1000}, 0)
		enqueue(t, s, pk{ack: 2000}, 0)
		enqueue(t, s, pk{ack: 2000, payload: 100}, 0)
		pkt, _, ok := s.Dequeue(0)
		if !ok {
			t.Fatal("nothing sent")
		}
		pkt.DecRef()
		if _, _, ok := s.Dequeue(0); ok {
			t.Fatal("sent twice at once")
		}
		if got := s.NextEvent(); got != tc.next {
			t.Errorf("ingress %v: next departure %d, want %d", tc.ingress, got, tc.next)
		}
	}
}

// TestSplitGSO: with split-gso (the default) a host-GSO packet is queued
// as its segments, each charged as a packet; without, it is one packet
// charged every segment's headers (cake_overhead).
func TestSplitGSO(t *testing.T) {
	for _, split := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.SplitGSO, cfg.Bandwidth, cfg.Diffserv = split, 10_000_000, BestEffort // 100ns a byte
		s := testSched(t, cfg)
		pkt := qdisctest.GSOPacket(10*1000, 1000, 0, 1, 100)
		size := uint32(qdisctest.GSOHeaderLen*10 + 10*1000)
		if !s.Enqueue(pkt, size, 0) {
			t.Fatal("refused")
		}
		checkInvariants(t, s)
		n, bytes := s.Len()
		wantN := 1
		if split {
			wantN = 10
		}
		if n != wantN || bytes != uint64(size) {
			t.Errorf("split %v: %d packets of %d bytes queued, want %d of %d", split, n, bytes, wantN, size)
		}
		var at int64
		var sent int
		for s.qlen > 0 {
			p, sz, ok := s.Dequeue(at)
			if !ok {
				at = s.NextEvent()
				continue
			}
			if split && (sz != qdisctest.GSOHeaderLen+1000 || p.Size() != int(sz)) {
				t.Errorf("a segment of %d bytes (%d charged), want %d", p.Size(), sz, qdisctest.GSOHeaderLen+1000)
			}
			sent++
			p.DecRef()
		}
		// Every byte of every segment's headers paid for, split or not.
		if at != int64(size)*100*int64(wantN-1)/int64(wantN) || sent != wantN || s.NextEvent() != int64(size)*100 {
			t.Errorf("split %v: %d sent, the last at %dns, the shaper next free at %dns; want %d bytes charged", split, sent, at, s.NextEvent(), size)
		}
	}
}

// TestOverflowHeap: under a flood of packets of many sizes from many
// hosts into several tins, the overflow heap stays a max-heap of every
// flow's backlog once cake uses it, so each overflow drop takes the head
// of a fattest flow. The long run (qdisctest.Long) floods 5000 packets;
// by default 2000, each of the 300 hosts still sending six or more (the
// checks after every packet walk the heap and every flow).
func TestOverflowHeap(t *testing.T) {
	t.Parallel() // long under -race; shares nothing with the package's other tests
	cfg := DefaultConfig()
	cfg.Bandwidth, cfg.Memlimit, cfg.Diffserv = 125_000, MinMemlimit, Diffserv4
	s := testSched(t, cfg)
	n := 5000
	if !qdisctest.Long() {
		n = 2000
	}
	now := int64(0)
	for i := range n {
		p := pk{src: uint16(i % 300), sport: uint16(i % 7), payload: (i * 37) % 1400, tos: uint8(i%64) << 2}
		pkt := p.build()
		s.Enqueue(pkt, uint32(pkt.Size()), now)
		if i%3 == 0 {
			if p, _, ok := s.Dequeue(now); ok {
				p.DecRef()
			}
		}
		if k := heapViolation(s); s.overflowTimeout != 0 && k >= 0 {
			t.Fatalf("packet %d: the heap is wrong at %d", i, k)
		}
		checkInvariants(t, s)
		checkMemory(t, s)
		now += 1000
	}
	if s.drops == 0 {
		t.Fatal("no overflow drops")
	}
}

// heapViolation returns a heap position whose backlog exceeds its
// parent's, or -1.
func heapViolation(s *Sched) int {
	for i := 1; i < len(s.heap); i++ {
		if s.heapBacklog(i) > s.heapBacklog((i-1)/2) {
			return i
		}
	}
	return -1
}

// TestBlueUnresponsive: a flow that keeps overflowing cake's memory for
// longer than a target (cobalt_queue_full) is taken by BLUE as
// unresponsive, counted in un_flows, and BLUE then drops its packets at
// dequeue too; a flow that drains, once BLUE's probability decays, is
// counted no more.
func TestBlueUnresponsive(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Memlimit, cfg.Diffserv = MinMemlimit, BestEffort
	s := testSched(t, cfg)
	now := int64(0)
	for range 2000 {
		enqueue(t, s, pk{src: 2, sport: 2, payload: 1400}, now)
		now += 100_000 // 0.1ms: 200ms in all
	}
	if x := s.XStats().Tins[0]; x.UnresponsiveFlows != 1 {
		t.Fatalf("un_flows %d after 200ms of overflow, want 1", x.UnresponsiveFlows)
	}
	before := s.drops
	sent := 0
	for s.qlen > 0 {
		if p, _, ok := s.Dequeue(now); ok {
			p.DecRef()
			sent++
		}
	}
	if s.drops == before {
		t.Errorf("BLUE dropped nothing of %d packets at dequeue", sent)
	}
	// Empty, its BLUE probability decays by 1/4096 each time cake finds
	// it empty a target after the last (another flow keeps cake busy:
	// an empty cake looks at no flow): 16 decays for each of the
	// overflow's rises.
	for range 2000 {
		now += 5_000_001
		enqueue(t, s, pk{src: 3, sport: 3, payload: 100}, now)
		if p, _, ok := s.Dequeue(now); ok { // the decaying flow first
			p.DecRef()
		}
	}
	if x := s.XStats().Tins[0]; x.UnresponsiveFlows != 0 {
		t.Errorf("un_flows %d after the flow drained, want 0", x.UnresponsiveFlows)
	}
}
