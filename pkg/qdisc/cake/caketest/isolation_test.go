package caketest

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestHostIsolation saturates a 100mbit shaper with host A's one flow and
// host B's ten, every flow kept backlogged (ECN-capable, so COBALT marks
// and nothing is dropped), and measures A's share of the bytes sent.
// cake_get_flow_quantum divides a flow's quantum by the larger bulk flow
// count of its source and destination hosts (in the dual and triple
// modes): with B's flows to ten different servers, B's source load is 10
// and each of its flows gets 1514/10, A's flow 1514: half each. In flows
// mode every flow gets 1514: A has 1/11. In triple-isolate with all
// eleven flows to one server, that server's load (11) divides every
// flow's quantum alike: 1/11 again, while dual-srchost ignores the
// destination: half. Each case sends 20000 packets in the long run
// (qdisctest.Long), 5000 by default (the shares then within 0.0002 of the
// long run's).
func TestHostIsolation(t *testing.T) {
	packets := 5000
	if qdisctest.Long() {
		packets = 20000
	}
	for _, tc := range []struct {
		name      string
		mode      FlowMode
		sharedDst bool
		lo, hi    float64
	}{
		{"triple-isolate", FlowTriple, false, 0.45, 0.55},
		{"dual-srchost", FlowDualSrc, false, 0.45, 0.55},
		{"dual-srchost, one server", FlowDualSrc, true, 0.45, 0.55},
		{"flows", FlowFlows, false, 0.08, 0.10},
		{"triple-isolate, one server", FlowTriple, true, 0.08, 0.10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			p.Rate = 12500000
			p.TinMode = BestEffort
			p.FlowMode = tc.mode
			m, err := New(p, 0)
			if err != nil {
				t.Fatal(err)
			}
			type fl struct {
				src, dst string
				queued   int
			}
			flows := []*fl{{src: "10.0.0.1", dst: "192.168.0.1"}}
			for i := range 10 {
				dst := fmt.Sprintf("192.168.0.%d", 2+i)
				if tc.sharedDst {
					dst = "192.168.0.1"
				}
				flows = append(flows, &fl{src: "10.0.0.2", dst: dst})
			}
			owner := map[uint64]int{}
			var id uint64
			now := int64(1e9)
			var bytesA, bytesAll uint64
			for sent := 0; sent < packets; {
				for i, f := range flows {
					for f.queued < 4 {
						id++
						owner[id] = i
						ev := m.Enqueue(now, pkt{id: id, src: f.src, dst: f.dst, sport: uint16(1000 + i), dport: 80,
							ecn: 2, payload: 1460, macLen: 14}.ipv4())
						if len(ev) != 0 {
							t.Fatalf("enqueue: %v", ev)
						}
						f.queued++
					}
				}
				pk, ev := m.Dequeue(now)
				for _, e := range ev {
					if e.Kind != MarkCE {
						t.Fatalf("event %v", e)
					}
				}
				if pk == nil {
					if now = m.NextTime(); now < 0 {
						t.Fatal("packets queued but no watchdog")
					}
					continue
				}
				i := owner[pk.ID]
				flows[i].queued--
				sent++
				if sent > 1000 {
					bytesAll += uint64(pk.MacLen + len(pk.Data))
					if i == 0 {
						bytesA += uint64(pk.MacLen + len(pk.Data))
					}
				}
			}
			share := float64(bytesA) / float64(bytesAll)
			t.Logf("host A's share %.4f", share)
			if share < tc.lo || share > tc.hi {
				t.Errorf("host A's share %.3f, want %.2f to %.2f", share, tc.lo, tc.hi)
			}
		})
	}
}

// TestDiffserv4Tins checks cake_select_tin with the diffserv4 table: each
// DSCP's tin (0 best effort, 1 bulk, 2 video, 3 voice), and that wash
// clears the DSCP (keeping ECN, the IPv4 checksum right) after the tin
// was chosen from it.
func TestDiffserv4Tins(t *testing.T) {
	for _, tc := range []struct {
		name string
		dscp uint8
		arp  bool
		tin  int
	}{
		{"CS0", 0, false, 0}, {"LE", 1, false, 1}, {"TOS2", 2, false, 0}, {"TOS4", 4, false, 2},
		{"CS1", 8, false, 1}, {"AF11", 10, false, 0}, {"CS2", 16, false, 2}, {"AF21", 18, false, 2},
		{"CS3", 24, false, 2}, {"CS4", 32, false, 3}, {"AF41", 34, false, 2}, {"CS5", 40, false, 3},
		{"VA", 44, false, 3}, {"EF", 46, false, 3}, {"CS6", 48, false, 3}, {"CS7", 56, false, 3},
		{"ARP is CS7", 0, true, 3},
	} {
		for _, wash := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s wash=%v", tc.name, wash), func(t *testing.T) {
				p := DefaultParams()
				p.TinMode = Diffserv4
				p.Wash = wash
				m, err := New(p, 0)
				if err != nil {
					t.Fatal(err)
				}
				in := pkt{id: 1, src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, dscp: tc.dscp, ecn: 1, payload: 100}.ipv4()
				if tc.arp {
					in = Packet{ID: 1, Proto: ProtoARP, Data: make([]byte, 28), MacLen: 14}
				}
				m.Enqueue(1e9, in)
				got := -1
				for _, ts := range m.Stats().Tins {
					if ts.Packets == 1 {
						got = ts.Tin
					}
				}
				if got != tc.tin {
					t.Errorf("tin %d, want %d", got, tc.tin)
				}
				out, _ := m.DequeueAll(1e9)
				if len(out) != 1 {
					t.Fatalf("%d departures", len(out))
				}
				if tc.arp {
					return
				}
				h := out[0].Data
				wantDS := tc.dscp<<2 | 1
				if wash {
					wantDS = 1
				}
				if h[1] != wantDS || !headerOK(h) {
					t.Errorf("TOS %#x (checksum ok %v), want %#x", h[1], headerOK(h), wantDS)
				}
			})
		}
	}
}

// TestMemoryLimit fills a 10000-byte memory limit with two flows, X (7
// packets of 1000 bytes) and Y (3), then adds to Y: each packet past the
// limit makes cake_drop take the head of the queue with the most bytes
// backlogged, whichever flow brought the overflow.
func TestMemoryLimit(t *testing.T) {
	p := DefaultParams()
	p.TinMode = BestEffort
	p.FlowMode = FlowFlows
	p.Memory = 10000
	m, err := New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	x := func(id uint64) Packet {
		return pkt{id: id, src: "10.0.0.1", dst: "10.0.0.2", sport: 1, dport: 2, payload: 960}.ipv4()
	}
	y := func(id uint64) Packet {
		return pkt{id: id, src: "10.0.0.1", dst: "10.0.0.3", sport: 1, dport: 2, payload: 960}.ipv4()
	}
	for i := range 7 {
		if ev := m.Enqueue(1e9, x(uint64(i))); len(ev) != 0 {
			t.Fatal(ev)
		}
	}
	for i := range 3 {
		if ev := m.Enqueue(1e9, y(100+uint64(i))); len(ev) != 0 {
			t.Fatal(ev)
		}
	}
	// 10000 bytes: at the limit, not over it.
	for _, step := range []struct {
		id      uint64
		dropped uint64
	}{
		{103, 0},   // X 7000, Y 4000: X's head
		{104, 1},   // X 6000, Y 5000: X's next
		{105, 100}, // X 5000, Y 6000: Y's head
	} {
		ev := m.Enqueue(1e9, y(step.id))
		if len(ev) != 1 || ev[0].Kind != DropOverlimit || ev[0].ID != step.dropped || ev[0].Len != 1000 {
			t.Fatalf("enqueue %d: events %v, want drop-overlimit of %d", step.id, ev, step.dropped)
		}
	}
	s := m.Stats()
	if s.MemoryUsed != 11000 || s.MemoryNow != 10000 || s.Drops != 3 || s.BacklogPackets != 10 || s.BacklogBytes != 10000 {
		t.Errorf("memory used %d now %d, drops %d, backlog %d packets %d bytes; want 11000 10000 3 10 10000",
			s.MemoryUsed, s.MemoryNow, s.Drops, s.BacklogPackets, s.BacklogBytes)
	}
	out, _ := m.DequeueAll(1e9)
	var ids []uint64
	for _, o := range out {
		ids = append(ids, o.ID)
	}
	slices.Sort(ids)
	if want := []uint64{2, 3, 4, 5, 6, 101, 102, 103, 104, 105}; !slices.Equal(ids, want) {
		t.Errorf("left %v, want %v", ids, want)
	}
}

// portHasher hashes every flow to 8 + 1024*source port: all of them to
// queue 8, the first way of the set of queues 8 to 15.
type portHasher struct{}

func (portHasher) Hash(p *Packet) Hashes {
	return Hashes{Flow: 8 + 1024*uint32(binary.BigEndian.Uint16(p.Data[20:22]))}
}

// TestSetAssociative follows cake_hash's 8-way lookup with flows that all
// reduce to queue 8: the first eight take queues 8 to 15 (eight misses);
// the ninth finds no free way and takes queue 8 over (a collision); flow
// 1 again finds its tag in the set's second way (an indirect hit); flow 0
// again finds its tag gone and collides too. Queue 8 then holds three
// packets (flows 0, 8, 0).
func TestSetAssociative(t *testing.T) {
	p := DefaultParams()
	p.FlowMode = FlowFlows
	p.TinMode = BestEffort
	p.Hasher = portHasher{}
	m, err := New(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, port := range []uint16{0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 0} {
		m.Enqueue(1e9, pkt{id: uint64(i), src: "10.0.0.1", dst: "10.0.0.2", sport: port, dport: 80, payload: 100}.ipv4())
	}
	s := m.Stats().Tins[0]
	if s.WayMisses != 8 || s.WayCollisions != 2 || s.WayIndirectHits != 1 || s.SparseFlows != 8 {
		t.Errorf("way_miss %d way_cols %d way_inds %d sp_flows %d; want 8 2 1 8", s.WayMisses, s.WayCollisions, s.WayIndirectHits, s.SparseFlows)
	}
	if n := len(m.tins[0].flows[8].queue); n != 3 {
		t.Errorf("queue 8 holds %d packets, want 3", n)
	}
	if n := len(m.tins[0].flows[9].queue); n != 2 {
		t.Errorf("queue 9 holds %d packets, want 2", n)
	}
}
