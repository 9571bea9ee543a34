package htb

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

func TestMain(m *testing.M) { qdisctest.Main(m) }

// TestUnshapedClassNotHeldBehindShapedOne: while the lane waits for the
// capped class's next event, a packet of a class with credit leaves at
// once, as Linux runs htb_dequeue after every enqueue; a packet joining
// the waiting class waits for its turn.
func TestUnshapedClassNotHeldBehindShapedOne(t *testing.T) {
	const mbit = 125_000
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	d, err := newDiscipline(link, clock, Config{Default: 0x10020, Classes: []ClassConfig{
		{ID: 0x10010, Rate: 1000 * mbit},
		{ID: 0x10020, Rate: 1 * mbit},
	}}, bySeq{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	write := func(class uint32, seq uint64) {
		t.Helper()
		pkt := qdisctest.MakePacket(1000, 0, uint64(class)<<32|seq)
		defer pkt.DecRef()
		if err := d.WritePacket(pkt); err != nil {
			t.Fatalf("WritePacket: %v", err)
		}
		qdisctest.WaitQuiescent(t, d)
	}
	for i := range 4 {
		write(0x10020, uint64(i))
	}
	if n := len(link.Records()); n != 2 {
		t.Fatalf("%d of the capped class's packets left at once, want 2 (its 1600-byte burst)", n)
	}
	clock.Advance(time.Millisecond)
	write(0x10010, 100)
	recs := link.Records()
	if len(recs) != 3 || recs[2].Seq != 0x10010<<32|100 {
		t.Fatalf("the uncapped class's packet did not leave at once while the capped one waited: %v", recs)
	}
	// The capped class's third packet is due at 3.2 ms.
	clock.Advance(2*time.Millisecond + 199*time.Microsecond)
	clock.Fire()
	qdisctest.WaitQuiescent(t, d)
	if n := len(link.Records()); n != 3 {
		t.Fatalf("%d packets sent by 3.199 ms, want 3", n)
	}
	clock.Advance(time.Microsecond)
	clock.Fire()
	qdisctest.WaitQuiescent(t, d)
	if n := len(link.Records()); n != 4 {
		t.Fatalf("%d packets sent at 3.2 ms, want 4", n)
	}
	if s := d.Stats(); s.BacklogPackets != 1 {
		t.Errorf("backlog %d packets, want 1:\n%s", s.BacklogPackets, d.TCStats())
	}
}

// TestChangeClassWhileSorting: producers sort their packets (the filters)
// outside the lane's lock while the operator changes classes under it;
// every packet written is sent or counted dropped, and the race detector
// sees nothing Sort reads written by ChangeClass.
func TestChangeClassWhileSorting(t *testing.T) {
	link := qdisctest.NewLink(nil)
	link.Discard = true
	d, err := New(link, tcpip.NewStdClock(), never2())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const producers, each = 4, 2000
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := netip.AddrFrom4([4]byte{8, 8, 8, 8})
			if p%2 == 0 {
				dst = netip.AddrFrom4([4]byte{10, 1, 2, 3})
			}
			pkt := ipv4Packet(dst)
			defer pkt.DecRef()
			for range each {
				d.WritePacket(pkt) // a full leaf drops: counted below
			}
		}()
	}
	for i := range 200 {
		cls := never2().Classes[i%2]
		cls.Rate -= uint64(i) // a change in place, rate and buckets
		if err := d.ChangeClass(cls); err != nil {
			t.Fatalf("ChangeClass: %v", err)
		}
	}
	wg.Wait()
	qdisctest.WaitQuiescent(t, d)
	if s := d.Stats(); s.Packets+s.Drops != producers*each || s.BacklogPackets != 0 {
		t.Errorf("%d sent + %d dropped, backlog %d; want %d written, none left", s.Packets, s.Drops, s.BacklogPackets, producers*each)
	}
}
