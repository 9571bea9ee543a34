package dispatch_test

import (
	"slices"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/dispatch"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// pacer is a fake qdisc.Shaper: it hands over a packet only gap after
// the last, as htb or cake hold their packets back for their rates. Its
// lane calls it under its lock.
type pacer struct {
	gap, next int64
	pkts      []*stack.PacketBuffer
}

func (p *pacer) Enqueue(pkt *stack.PacketBuffer, _ uint32, _ int64) bool {
	p.pkts = append(p.pkts, pkt)
	return true
}

func (p *pacer) Peek(now int64, sizes []uint32, arrived []int64) int {
	if len(p.pkts) == 0 || now < p.next || len(sizes) == 0 {
		return 0
	}
	sizes[0], arrived[0] = uint32(p.pkts[0].Size()), now
	return 1
}

func (p *pacer) Dequeue(now int64) (*stack.PacketBuffer, uint32, bool) {
	if len(p.pkts) == 0 || now < p.next {
		return nil, 0, false
	}
	pkt := p.pkts[0]
	p.pkts = p.pkts[1:]
	p.next = now + p.gap
	return pkt, uint32(pkt.Size()), true
}

func (p *pacer) Purge() (int, uint64) {
	n, b := p.Len()
	for _, pkt := range p.pkts {
		pkt.DecRef()
	}
	p.pkts = nil
	return n, b
}

func (p *pacer) Len() (int, uint64) {
	var b uint64
	for _, pkt := range p.pkts {
		b += uint64(pkt.Size())
	}
	return len(p.pkts), b
}

func (p *pacer) Drops() uint64    { return 0 }
func (p *pacer) NextEvent() int64 { return p.next }
func (p *pacer) Activated() bool  { return false }

// TestShaperUnderAGate: a queue that shapes on its own (htb, cake) under
// a gate (a node's class, dispatch.Uplink) holds its packets back until
// its next event, and its lane waits on the alarm for that event, as it
// does with no gate: it does not go idle with packets queued until the
// next packet comes (htb under a node's class sent 11% of its rate).
func TestShaperUnderAGate(t *testing.T) {
	for _, gated := range []bool{false, true} {
		clock := qdisctest.NewStepClock()
		link := qdisctest.NewLink(clock)
		cfg := dispatch.Config{Lower: link, MaxPackets: 1, Queue: &pacer{gap: int64(time.Millisecond)}, Clock: clock}
		if gated {
			cfg.Gate = &spacedGate{} // lets every packet leave as seen
		}
		var g dispatch.Group
		g.Init(1, cfg)
		g.Start()
		for seq := uint64(1); seq <= 3; seq++ {
			pkt := qdisctest.MakePacket(100, 0, seq)
			if err := g.Lane(0).Enqueue(pkt); err != nil {
				t.Fatal(err)
			}
			pkt.DecRef()
		}
		for ms := range 3 {
			qdisctest.WaitQuiescent(t, &g)
			var got []uint64
			for _, rec := range link.Records() {
				got = append(got, rec.Seq)
			}
			if want := []uint64{1, 2, 3}[:ms+1]; !slices.Equal(got, want) {
				t.Errorf("gated %v, after %d ms: sent %v, want %v", gated, ms, got, want)
			}
			clock.Advance(time.Millisecond)
			clock.Fire()
		}
		g.Close()
	}
}

// uplinkLink is a recording link that is an Uplink: its gate lets one
// packet leave every gap, as a node's class's bucket does at its share.
type uplinkLink struct {
	*qdisctest.Link
	gate *spacedGate
}

func (u uplinkLink) UplinkGate() dispatch.Gate { return u.gate }

// TestUplinkSlack: lanes writing to an Uplink wake at most once in
// dispatch.UplinkSlack, whatever their qdisc asks (a fifo: none), and
// send every packet due then, each at most UplinkSlack late: 30 packets
// 100 µs apart (the last due at 2.9 ms) have left by 4 ms with 3 to 5
// timer wake-ups, not 29. (The first pass books what was queued when it
// ran, as the packets are still being enqueued; the alarm fires once
// more when those run out.)
func TestUplinkSlack(t *testing.T) {
	clock := qdisctest.NewStepClock()
	link := uplinkLink{Link: qdisctest.NewLink(clock), gate: &spacedGate{gap: int64(100 * time.Microsecond)}}
	var g dispatch.Group
	g.Init(1, dispatch.Config{Lower: link, MaxPackets: 100, Clock: clock})
	g.Start()
	defer g.Close()
	for seq := uint64(1); seq <= 30; seq++ {
		pkt := qdisctest.MakePacket(100, 0, seq)
		if err := g.Lane(0).Enqueue(pkt); err != nil {
			t.Fatal(err)
		}
		pkt.DecRef()
	}
	for range 40 {
		qdisctest.WaitQuiescent(t, &g)
		clock.Advance(100 * time.Microsecond)
		clock.Fire()
	}
	qdisctest.WaitQuiescent(t, &g)
	if n := len(link.Records()); n != 30 {
		t.Errorf("%d of 30 packets sent in 4 ms", n)
	}
	if w := g.Wakeups(); w < 3 || w > 5 {
		t.Errorf("%d timer wake-ups in 4 ms, want one a UplinkSlack (%v)", w, dispatch.UplinkSlack)
	}
}
