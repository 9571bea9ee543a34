package fqcodel_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestSlowLinkCoDelSeesTheDelay: a lower link that takes one packet a
// millisecond and refuses the rest for want of room (its socket buffer
// full), offered two a millisecond: what it refuses is requeued and
// offered again, and the packets behind wait in fq_codel, as under Linux's
// dev_requeue_skb, so CoDel sees their sojourn grow and drops. A
// dispatcher that dropped what the link refused would have kept the queue
// short and CoDel blind. Every packet is sent, dropped or queued, once.
func TestSlowLinkCoDelSeesTheDelay(t *testing.T) {
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	link.AcceptAtMost = 1
	link.Full.Store(true)
	var wrote atomic.Bool // this millisecond
	link.OnWrite = func() {
		if wrote.Swap(true) {
			link.Full.Store(true)
		}
	}
	d, err := fqcodel.New(link, clock, fqcodel.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const steps = 1000
	written := 0
	for i := 0; i < steps; i++ {
		for range 2 {
			pkt := qdisctest.MakePacket(1000, 1, uint64(written))
			if err := d.WritePacket(pkt); err != nil {
				t.Fatal(err)
			}
			pkt.DecRef()
			written++
		}
		qdisctest.WaitQuiescent(t, d)
		clock.Advance(time.Millisecond)
		wrote.Store(false)
		link.Full.Store(false) // room for one packet
		clock.Fire()
		qdisctest.WaitQuiescent(t, d)
	}
	s, x := d.Stats(), d.XStats()
	if s.Requeues == 0 {
		t.Errorf("stats %+v: nothing requeued", s)
	}
	t.Logf("%v\n%v", s, x)
	if x.CoDelDrops == 0 {
		t.Errorf("CoDel dropped nothing from a queue that grew for %d ms: %+v", steps, x)
	}
	if got := uint64(len(link.Records())); got != s.Packets || got > steps+1 {
		t.Errorf("the link took %d packets, Stats says %d; at most one a millisecond", got, s.Packets)
	}
	if s.Packets+s.Drops+s.BacklogPackets != uint64(written) || s.Drops != x.Drops() {
		t.Errorf("stats %+v, fq_codel %+v: %d written, not each sent, dropped by fq_codel or queued once", s, x, written)
	}
}
