package mmlink_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink"
	"github.com/netqdisc/netqdisc/pkg/qdisc/mmlink/mmlinktest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// traceFrom makes a trace from b (what fuzzing varies): up to 40
// opportunities, each 0 to 4 ms after the one before (0: several at one
// ms), the last after 0.
func traceFrom(b []byte) []uint32 {
	var ms []uint32
	t := uint32(0)
	for i, x := range b {
		if i == 40 {
			break
		}
		t += uint32(x % 5)
		ms = append(ms, t)
	}
	if len(ms) == 0 || ms[len(ms)-1] == 0 {
		ms = append(ms, t+1)
	}
	return ms
}

// fuzzPacket makes packet id of ip bytes (as mahimahi would read it:
// ip+4), with a 14-byte link header pushed when link is set.
func fuzzPacket(ip int, id uint64, link bool) *stack.PacketBuffer {
	p := qdisctest.MakePacket(ip, 1, id)
	if !link {
		return p
	}
	defer p.DecRef()
	q := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: header.EthernetMinimumSize, Payload: p.Data().ToBuffer()})
	q.LinkHeader().Push(header.EthernetMinimumSize)
	return q
}

// maxOps is the most operations a lockstep input runs: longer ones
// find nothing more, slowly.
const maxOps = 2000

// FuzzMMLinkLockstep holds mmlink's queue to mmlinktest's model of
// mahimahi's LinkQueue, packet for packet, over random traces, limits
// and arrivals in ns: both take and refuse the same packets and count
// the same drops, hold as many, hand over the same packets in the same
// order at the same times (Peek shows them with the times they left),
// and say the same time for the next departure (never early, never
// late); every reference is released once.
func FuzzMMLinkLockstep(f *testing.F) {
	f.Add(uint32(0), []byte{1, 1, 1, 1}, uint16(0x0f00), []byte{0x7c, 0x7c, 0x7c, 0xa0, 0xa0, 0xa0, 0xa0})
	f.Add(uint32(999_999), []byte{0, 0, 3, 0, 4, 1}, uint16(0x0203), []byte{5, 0x7f, 6, 0x80, 0xff, 0x80, 0x20, 0x21, 0xa0, 0xe0, 0xa0, 0xb0, 0xa0})
	f.Add(uint32(123_456), []byte{2}, uint16(0x0105), []byte{0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0x7e, 0xff, 0x80, 0xa0, 0xa0, 0xa0, 0xa0})
	f.Fuzz(lockstep)
}

// lockstep is FuzzMMLinkLockstep's run of one input.
func lockstep(t *testing.T, start uint32, traceBytes []byte, limits uint16, ops []byte) {
	{
		ms := traceFrom(traceBytes)
		tr, err := mmlink.NewTrace("fuzz", ms)
		if err != nil {
			t.Fatalf("trace %v: %v", ms, err)
		}
		cfg := mmlink.Config{Trace: tr, Limit: uint32(limits&0xf) + 1}
		if b := limits >> 8; b != 0 {
			cfg.Bytes = mmlink.OpportunityBytes + uint32(b)*97
		}
		now := int64(start)
		q, err := mmlink.NewQueue(cfg, 0, now)
		if err != nil {
			t.Fatal(err)
		}
		m := mmlinktest.New(ms, now, cfg.Limit, cfg.Bytes)
		var made []*stack.PacketBuffer
		defer func() {
			q.Purge()
			for _, p := range made {
				if n := p.ReadRefs(); n != 1 {
					t.Errorf("packet %d holds %d references after Purge, want the test's own 1", qdisctest.Seq(p), n)
				}
				p.DecRef()
			}
		}()
		dequeueAll := func(i int) {
			var sizes [4]uint32
			var left [4]int64
			n := q.Peek(now, sizes[:], left[:])
			want := m.Left(now)
			if n != min(len(want), len(sizes)) {
				t.Fatalf("op %d at %d: Peek shows %d, the model has %d left", i, now, n, len(want))
			}
			for k := range n {
				if left[k] != want[k].Departed {
					t.Fatalf("op %d at %d: Peek's packet %d left at %d, the model's at %d", i, now, k, left[k], want[k].Departed)
				}
			}
			for {
				p, _, ok := q.Dequeue(now)
				mp, mok := m.Dequeue(now)
				if ok != mok {
					t.Fatalf("op %d at %d: dequeue %v, the model %v (its packet %d, left at %d)", i, now, ok, mok, mp.ID, mp.Departed)
				}
				if !ok {
					break
				}
				if got := qdisctest.Seq(p); got != mp.ID {
					t.Fatalf("op %d at %d: packet %d left, the model's %d", i, now, got, mp.ID)
				}
				p.DecRef()
			}
			if n, _ := q.Len(); n > 0 {
				want, ok := m.NextDeparture()
				if !ok || q.NextEvent() != want {
					t.Fatalf("op %d at %d: next departure %d, the model %d (%v)", i, now, q.NextEvent(), want, ok)
				}
			}
		}
		var id uint64
		for i, op := range ops[:min(len(ops), maxOps)] {
			switch {
			case op < 0x80: // a packet of 8 to 1659 IP bytes
				id++
				ip := 8 + int(op)*13
				p := fuzzPacket(ip, id, op&1 == 1)
				made = append(made, p)
				took := q.Enqueue(p.IncRef(), uint32(p.Size()), now)
				if !took {
					p.DecRef()
				}
				if want := m.Enqueue(id, uint32(ip+4), now); took != want {
					t.Fatalf("op %d at %d: packet %d taken %v, the model %v", i, now, id, took, want)
				}
			case op < 0xa0: // hand over what has left
				dequeueAll(i)
			case op < 0xc0: // to the next departure, as the lane waits for it
				if at, ok := m.NextDeparture(); ok {
					now = at
				}
				dequeueAll(i)
			default: // time passes: up to 10.9 ms, in steps that are not whole ms
				now += int64(op-0xc0) * 173_411
			}
			if n, _ := q.Len(); n != m.Len() {
				t.Fatalf("op %d at %d: %d held, the model %d", i, now, n, m.Len())
			}
			if q.Drops() != m.Drops {
				t.Fatalf("op %d: %d drops, the model %d", i, q.Drops(), m.Drops)
			}
		}
	}
}
