package fqcodel_test

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

// traffic is a random mix of arrivals and departures: each step, after a
// gap of up to maxGap, a packet arrives with probability pArrive (on one of
// flows flows, sizes 64..1514) or the head leaves; peek makes some
// departures a Peek first, as a tbf parent does; ecn gives the packets
// IPv4 and IPv6 headers of every ECN codepoint (ecnKinds).
type traffic struct {
	steps   int
	maxGap  time.Duration
	pArrive float64
	flows   int
	peek    bool
	ecn     bool
}

// TestConformance runs Scheduler and the Linux model through the same
// arrivals and departures: every departure is the same packet, marked CE
// or not as in Linux, every enqueue drops as many, and the counters
// agree. The model's defaults are the kernel's (linuxConfig), not the
// package's. Each case runs its 30000 to 60000 steps in the long run
// (qdisctest.Long), the first quarter of them by default.
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  fqcodel.Config
		tr   traffic
	}{
		{"defaults, a standing queue: CoDel drops", fqcodel.Config{}, traffic{steps: 60000, maxGap: 200 * time.Microsecond, pArrive: 0.6, flows: 8}},
		{"one flow overloaded", fqcodel.Config{}, traffic{steps: 40000, maxGap: 300 * time.Microsecond, pArrive: 0.7, flows: 1}},
		{"many flows, few buckets", fqcodel.Config{Flows: 16}, traffic{steps: 40000, maxGap: 200 * time.Microsecond, pArrive: 0.6, flows: 200}},
		{"packet limit: drops from the fattest flow", fqcodel.Config{Limit: 100, DropBatch: 8}, traffic{steps: 30000, maxGap: 100 * time.Microsecond, pArrive: 0.8, flows: 5}},
		{"memory limit", fqcodel.Config{MemoryLimit: 64 << 10}, traffic{steps: 30000, maxGap: 100 * time.Microsecond, pArrive: 0.8, flows: 5}},
		{"short target and interval", fqcodel.Config{Target: time.Millisecond, Interval: 10 * time.Millisecond, Quantum: 300}, traffic{steps: 40000, maxGap: 100 * time.Microsecond, pArrive: 0.6, flows: 4}},
		{"peeked by a parent", fqcodel.Config{Limit: 300}, traffic{steps: 40000, maxGap: 200 * time.Microsecond, pArrive: 0.6, flows: 6, peek: true}},
		// ECN on (the default): ECT(0), ECT(1) and CE packets, IPv4 and
		// IPv6, are marked CE where Not-ECT ones are dropped.
		{"ECN: ECT marked, Not-ECT dropped", fqcodel.Config{}, traffic{steps: 60000, maxGap: 200 * time.Microsecond, pArrive: 0.6, flows: 8, ecn: true}},
		{"ECN, peeked, packet limit", fqcodel.Config{Limit: 200, DropBatch: 8}, traffic{steps: 40000, maxGap: 150 * time.Microsecond, pArrive: 0.65, flows: 5, peek: true, ecn: true}},
		{"noecn: every codepoint dropped", fqcodel.Config{NoECN: true}, traffic{steps: 40000, maxGap: 200 * time.Microsecond, pArrive: 0.6, flows: 8, ecn: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !qdisctest.Long() {
				tc.tr.steps /= 4
			}
			runConformance(t, tc.cfg, tc.tr, 1)
		})
	}
}

func runConformance(t *testing.T, cfg fqcodel.Config, tr traffic, seed int64) {
	const mtu = 1514
	q, err := fqcodel.NewScheduler(cfg, mtu)
	if err != nil {
		t.Fatal(err)
	}
	m := newLinuxFQCoDel(cfg, mtu)
	kinds := map[uint64]int{} // each ECN packet's kind, by seq
	rng := rand.New(rand.NewSource(seed))
	now := int64(time.Second)
	seq := uint64(0)
	var sent, dropped int
	for step := 0; step < tr.steps; step++ {
		now += rng.Int63n(int64(tr.maxGap))
		if rng.Float64() < tr.pArrive {
			seq++
			flow := rng.Intn(tr.flows)
			hash := uint32(flow) * 2654435761 // spread over the flow table
			size := uint32(64 + rng.Intn(1451))
			pkt, ect := qdisctest.MakePacket(int(size), hash, seq), false
			if tr.ecn {
				kind := rng.Intn(len(ecnKinds))
				pkt.DecRef()
				pkt, ect = ecnPacket(seq, size, hash, kind), ecnKinds[kind].ect
				kinds[seq] = kind
			}
			mem := uint32(pkt.MemSize())
			got := q.Enqueue(pkt, size, hash, now)
			want := m.enqueue(mpkt{seq: seq, size: size, mem: mem, ect: ect}, hash, now)
			if got != len(want) {
				t.Fatalf("step %d: enqueue of packet %d dropped %d packets, Linux %d", step, seq, got, len(want))
			}
			dropped += got
		} else {
			var pkt *stack.PacketBuffer
			var gotSeq uint64
			var ok bool
			var want *mpkt
			if tr.peek && rng.Intn(2) == 0 {
				_, _, o := q.Peek(now)
				if ok = o; ok {
					gotSeq = q.PeekedSeq()
				}
				want, _ = m.peek(now)
			} else {
				p, _, o := q.Dequeue(now)
				if ok = o; ok {
					gotSeq, pkt = qdisctest.Seq(p), p
				}
				want, _ = m.dequeue(now)
			}
			if ok != (want != nil) || (ok && gotSeq != want.seq) {
				w := "nothing"
				if want != nil {
					w = fmt.Sprint("packet ", want.seq)
				}
				t.Fatalf("step %d (t=%v): dequeued %v (%v), Linux %s", step, time.Duration(now), gotSeq, ok, w)
			}
			if pkt != nil {
				if kind, ok := kinds[gotSeq]; ok {
					checkCE(t, pkt, ecnKinds[kind], want.ce)
					delete(kinds, gotSeq)
				}
				pkt.DecRef()
				sent++
			}
		}
		if m.unsure != "" {
			t.Fatalf("step %d: the model's Newton step may be one off Linux's: %s", step, m.unsure)
		}
		if n, b := q.Len(); n != m.qlen || b != uint64(m.backlog) {
			t.Fatalf("step %d: %d packets, %d bytes queued; Linux %d, %d", step, n, b, m.qlen, m.backlog)
		}
	}
	x := q.XStats()
	if x.DropOverlimit != uint64(m.dropOverlimit) || x.CoDelDrops != uint64(m.codelDrops) || x.MaxPacket != m.maxpacket || x.NewFlowCount != uint64(m.newFlowCount) || x.ECNMark != uint64(m.ecnMarks) {
		t.Errorf("xstats %+v; Linux: drop_overlimit %d, codel drops %d, maxpacket %d, new_flow_count %d, ecn_mark %d", x, m.dropOverlimit, m.codelDrops, m.maxpacket, m.newFlowCount, m.ecnMarks)
	}
	t.Logf("%d packets: %d sent, %d dropped at enqueue, %d by CoDel, %d marked; %d flows seen new", seq, sent, dropped, x.CoDelDrops, x.ECNMark, x.NewFlowCount)
	if x.CoDelDrops == 0 && dropped == 0 {
		t.Errorf("nothing dropped: the traffic did not exercise the queue")
	}
	if tr.ecn && !cfg.NoECN && x.ECNMark == 0 {
		t.Errorf("nothing marked: the traffic did not exercise ECN")
	}
	if tr.ecn && cfg.NoECN && x.ECNMark != 0 {
		t.Errorf("%d marks with noecn", x.ECNMark)
	}
	q.Purge()
}
