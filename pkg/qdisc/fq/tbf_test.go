package fq_test

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fq"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestUnderTBF: fq as a tbf's child takes what the tbf gives it. A
// latency bounds fq's bytes as it would the tbf's FIFO (rate*latency +
// burst: what is past it is dropped from the longest flow's head and
// counted, what fits waits, the newest of each flow among it), and on
// a host-GSO link a GSO packet leaves in pieces of a millisecond at the
// rate, one segment at 10 Mbit/s, each charged and sent in turn.
func TestUnderTBF(t *testing.T) {
	const mbit = 125_000
	t.Run("latency bounds the bytes", func(t *testing.T) {
		clock := qdisctest.NewStepClock()
		link := qdisctest.NewLink(clock)
		child, err := fq.NewQueue(fq.Config{}, mtu, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := tbf.New(link, clock, tbf.Config{Rate: 10 * mbit, Burst: 3028, Latency: 10 * time.Millisecond, Child: child})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for seq := uint64(0); seq < 30; seq++ {
			p := qdisctest.MakePacket(mtu, uint32(seq%3)+1, seq)
			d.WritePacket(p)
			p.DecRef()
		}
		qdisctest.WaitQuiescent(t, d)
		// 10 ms at the rate and the burst, 10 packets, wait; the burst's
		// 2 may have left before fq filled, or after.
		const limit = 10*mbit/100 + 3028
		s := d.Stats()
		if s.BacklogBytes > limit || s.BacklogBytes < limit-3*mtu {
			t.Errorf("backlog %d bytes under a %d-byte limit, want it full but for the burst's 2 packets: %+v", s.BacklogBytes, limit, s)
		}
		if s.Packets+s.BacklogPackets+s.Drops != 30 {
			t.Errorf("stats %+v: want the 30 packets sent, queued or dropped", s)
		}
		// What waited leaves at the rate; each flow's newest is among it.
		for range 20 {
			clock.Advance(10 * time.Millisecond)
			clock.Fire()
			qdisctest.WaitQuiescent(t, d)
		}
		sent := map[uint64]bool{}
		for _, r := range link.Records() {
			sent[r.Seq] = true
		}
		for seq := uint64(27); seq < 30; seq++ {
			if !sent[seq] {
				t.Errorf("packet %d, its flow's newest, never sent: want the oldest dropped", seq)
			}
		}
		if got, want := uint64(len(link.Records())), s.Packets+s.BacklogPackets; got != want {
			t.Errorf("the link took %d packets, want the %d sent or queued", got, want)
		}
	})
	t.Run("no limit given: 1000 packets as senders hand them down", func(t *testing.T) {
		for _, tc := range []struct {
			name      string
			gso       bool
			wantLimit uint32
		}{
			{"MTU link", false, tbf.DefaultLimitPackets * (mtu)},
			{"host-GSO link", true, tbf.DefaultLimitPackets * (65536 + 14)},
		} {
			clock := qdisctest.NewStepClock()
			link := qdisctest.NewLink(clock)
			if tc.gso {
				link.GSO, link.GSOMax = stack.HostGSOSupported, 65536
			}
			child, err := fq.NewQueue(fq.Config{}, mtu, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, err := tbf.New(link, clock, tbf.Config{Rate: 10 * mbit, Burst: 3028, Child: child})
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Config().Limit; got != tc.wantLimit {
				t.Errorf("%s: the tbf's limit over fq is %d bytes, want %d", tc.name, got, tc.wantLimit)
			}
			d.Close()
		}
	})
	t.Run("GSO cut to a millisecond", func(t *testing.T) {
		clock := qdisctest.NewStepClock()
		link := qdisctest.NewLink(clock)
		link.GSO, link.GSOMax = stack.HostGSOSupported, 65536
		child, err := fq.NewQueue(fq.Config{}, mtu, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := tbf.New(link, clock, tbf.Config{Rate: 10 * mbit, Burst: 70000, Child: child})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		p := qdisctest.GSOPacket(10*1448, 1448, 1, 1, 0)
		if err := d.WritePacket(p); err != nil {
			t.Fatal(err)
		}
		p.DecRef()
		qdisctest.WaitQuiescent(t, d)
		recs := link.Records()
		if len(recs) != 10 {
			t.Fatalf("the link took %d packets, want the GSO packet's 10 segments one by one", len(recs))
		}
		if s := d.Stats(); s.Bytes != uint64(10*(1448+qdisctest.GSOHeaderLen)) || s.Packets != 10 {
			t.Errorf("stats %+v: want 10 packets of one segment, each charged with its headers", s)
		}
	})
}
