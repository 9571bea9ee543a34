package netem_test

import (
	"math"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/netem"
	"github.com/netqdisc/netqdisc/pkg/qdisc/netem/netemtest"
)

// configFrom makes a netem configuration from b (what fuzzing varies):
// delay and jitter with any table, random or Markov loss, duplication,
// reorder with a gap, a rate with overheads and cells, slots, corruption,
// a small limit and a seed. A byte past b's end is 0.
func configFrom(b []byte, seed uint64) netem.Config {
	at := func(i int) byte {
		if i < len(b) {
			return b[i]
		}
		return 0
	}
	pct := func(i int) netem.Percent { return netem.Percent(uint32(at(i)) * math.MaxUint32 / 255) }
	c := netem.Config{Limit: uint32(at(0)%64) + 1, Seed: &seed}
	c.Latency = time.Duration(at(1)) * time.Millisecond
	c.Jitter = time.Duration(at(2)) * 500 * time.Microsecond
	switch at(3) % 4 {
	case 1:
		c.Dist, c.DistName = netem.Normal(), "normal"
	case 2:
		c.Dist, c.DistName = netem.Pareto(), "pareto"
	case 3:
		c.Dist, c.DistName = netem.ParetoNormal(), "paretonormal"
	}
	c.Corr = &netem.Correlations{Delay: pct(4), Loss: pct(5), Duplicate: pct(6)}
	switch at(7) % 3 {
	case 0:
		c.Loss = pct(8) / 4
	case 1:
		c.LossModel = &netem.LossModel{P13: pct(8) / 8, P31: pct(9), P32: pct(10) / 2, P23: pct(11), P14: pct(12) / 8}
	case 2:
		c.LossModel = &netem.LossModel{GE: true, P: pct(8) / 8, R: pct(9), H: pct(10), K1: pct(11) / 8}
	}
	c.Duplicate = pct(13) / 4
	if g := at(14) % 6; g != 0 && c.Latency != 0 {
		c.Gap = uint32(g)
		c.Reorder = &netem.Chance{Probability: pct(15), Correlation: pct(16)}
	}
	if at(17)%2 == 1 {
		c.Rate = &netem.RateConfig{Rate: uint64(at(18))*10_000 + 1000, PacketOverhead: int32(int8(at(19))), CellSize: uint32(at(20) % 64), CellOverhead: int32(int8(at(21)) / 8)}
	}
	if at(22)%3 == 1 {
		c.Slot = &netem.Slot{MinDelay: time.Duration(at(23)) * 100 * time.Microsecond, MaxPackets: int32(at(25) % 5), MaxBytes: int32(at(26)) * 20}
		c.Slot.MaxDelay = c.Slot.MinDelay + time.Duration(at(24))*100*time.Microsecond
	}
	if at(27)%2 == 1 {
		c.Corrupt = &netem.Chance{Probability: pct(28), Correlation: pct(29)}
	}
	return c
}

// FuzzNetemLockstep holds netem's queue to netemtest's model of sch_netem.c,
// packet for packet, on a manual clock: over a configuration and a run of
// enqueues (packets with no headers, and host-GSO TCP packets that
// corruption cuts into their segments), time steps and dequeues read from
// the input, both take and refuse the same packets, count the same drops
// and requeues, hold as many, and send the same packets (or segments) at
// the same times (or say the same time for the next); a packet the model
// says is corrupted has exactly the model's bit flipped (flipped back, it
// is the packet sent, its checksums whole), every other is as sent; every
// reference is released once.
func FuzzNetemLockstep(f *testing.F) {
	f.Add(uint64(1), []byte{10, 20, 10, 1, 0, 0, 0, 0, 20}, []byte{0x10, 0x20, 0x30, 0x80, 0xc5, 0x80, 0xcf, 0x80})
	f.Add(uint64(7), []byte{30, 5, 0, 0, 0, 0, 0, 1, 10, 100, 50, 200, 5, 60, 3, 128, 0, 1, 50, 4, 48, 8, 1, 20, 30, 2, 10}, []byte{1, 2, 3, 4, 5, 0xc1, 0x80, 6, 7, 0xc9, 0x80, 0xff, 0x80})
	f.Add(uint64(99), []byte{63, 0, 40, 2, 128, 200, 100, 2, 30, 30, 200, 5, 0, 255, 2, 255, 255}, []byte{9, 9, 9, 9, 0x80, 0xc3, 0x80, 0xdf, 0x80})
	f.Add(uint64(3), []byte{20, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 128, 0}, []byte{1, 0xa3, 2, 0xb7, 3, 0xca, 0x80, 0xa0, 0xd0, 0x80})
	f.Add(uint64(11), []byte{8, 5, 8, 1, 50, 0, 0, 0, 10, 0, 0, 0, 0, 40, 2, 100, 50, 1, 30, 0, 0, 0, 0, 0, 0, 0, 0, 1, 255, 128}, []byte{0xbf, 0xa1, 5, 0xae, 0xc8, 0x80, 0xff, 0x80})
	// Netems that hold packets for no time (immediate.go, fast.go): one
	// that draws nothing (a pfifo of 6), one that loses, duplicates and
	// corrupts.
	f.Add(uint64(2), []byte{5}, []byte{1, 2, 3, 4, 5, 6, 7, 0x80, 8, 0xc1, 9, 10, 0x80, 0x80})
	f.Add(uint64(5), []byte{30, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 100, 0}, []byte{1, 0xa2, 2, 3, 0x80, 0xc2, 4, 0xb5, 0x80})
	f.Fuzz(func(t *testing.T, seed uint64, cfgBytes, ops []byte) {
		c := configFrom(cfgBytes, seed)
		q, err := netem.NewQueue(c)
		if err != nil {
			t.Fatalf("config %+v: %v", c, err)
		}
		m := netemtest.New(c, 0)
		var made []*lockstepPacket
		defer func() {
			q.Purge()
			for _, p := range made {
				if n := p.pkt.ReadRefs(); n != 1 {
					t.Errorf("packet %d holds %d references after Purge, want the test's own 1", p.id, n)
				}
				p.pkt.DecRef()
			}
		}()
		now := int64(0)
		for i, op := range ops {
			switch {
			case op < 0x80 || op >= 0xa0 && op < 0xc0: // a packet
				p := makeLockstepPacket(uint64(len(made)+1), op)
				made = append(made, p)
				took := q.Enqueue(p.pkt.IncRef(), p.shape.Size, now)
				if !took {
					p.pkt.DecRef()
				}
				if want := m.EnqueueShape(p.id, p.shape, now); took != want {
					t.Fatalf("op %d at %d: packet %d taken %v, the model %v", i, now, p.id, took, want)
				}
			case op < 0xa0: // dequeue everything due
				for {
					pkt, size, ok := q.Dequeue(now)
					mp, next, mok := m.Dequeue(now)
					if ok != mok {
						t.Fatalf("op %d at %d: dequeue %v, the model %v (packet %d)", i, now, ok, mok, mp.ID)
					}
					if !ok {
						if n, _ := q.Len(); n > 0 && q.NextEvent() != next {
							t.Fatalf("op %d at %d: next event %d, the model %d", i, now, q.NextEvent(), next)
						}
						break
					}
					err := made[mp.ID-1].check(pkt, size, mp)
					pkt.DecRef()
					if err != nil {
						t.Fatalf("op %d at %d: %v", i, now, err)
					}
				}
			default: // time passes: up to 63 ms
				now += int64(op-0xc0) * int64(time.Millisecond)
			}
			if n, _ := q.Len(); n != m.Len() {
				t.Fatalf("op %d at %d: %d held, the model %d", i, now, n, m.Len())
			}
			if q.Drops() != m.Drops || q.Requeues() != m.Requeues {
				t.Fatalf("op %d: drops %d requeues %d, the model %d and %d", i, q.Drops(), q.Requeues(), m.Drops, m.Requeues)
			}
		}
	})
}
