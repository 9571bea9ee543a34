package tbf_test

import (
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestLimitBelowBurst: a limit smaller than the burst, or than a packet,
// is accepted, as Linux's tbf_change accepts any limit; a packet larger
// than the limit is then dropped and counted (bfifo_enqueue), and the
// smaller ones pass. Both at New and at Change, with one queue and with
// a shared budget.
func TestLimitBelowBurst(t *testing.T) {
	const limit = 640
	for _, tc := range []struct {
		name   string
		queues int
		change bool // set the limit by Change rather than New
	}{
		{"New, one queue", 1, false},
		{"New, four queues", 4, false},
		{"Change, one queue", 1, true},
		{"Change, four queues", 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tbf.Config{Rate: 1 << 20, Burst: 1 << 17, Limit: limit, Lanes: tc.queues}
			start := cfg
			if tc.change {
				start.Limit = 1 << 20
			}
			clock := faketime.NewManualClock()
			link := qdisctest.NewLink(clock)
			d, err := tbf.New(link, clock, start)
			if err != nil {
				t.Fatalf("New(%+v): %v", start, err)
			}
			defer d.Close()
			if tc.change {
				if err := d.Change(cfg); err != nil {
					t.Fatalf("Change(%+v): %v", cfg, err)
				}
			}
			if got := d.Config().Limit; got != limit {
				t.Fatalf("the limit in force is %d, want %d", got, limit)
			}
			for seq, w := range []struct {
				size int
				err  tcpip.Error
			}{
				{1000, &tcpip.ErrNoBufferSpace{}}, // larger than the limit
				{600, nil},
				{limit, nil},
				{limit + 1, &tcpip.ErrNoBufferSpace{}},
				{1514, &tcpip.ErrNoBufferSpace{}},
			} {
				pkt := qdisctest.MakePacket(w.size, uint32(seq), uint64(seq))
				err := d.WritePacket(pkt)
				pkt.DecRef()
				if (err == nil) != (w.err == nil) || (err != nil && err.String() != w.err.String()) {
					t.Errorf("WritePacket(%d bytes) = %v, want %v", w.size, err, w.err)
				}
				qdisctest.WaitQuiescent(t, d)
			}
			st := d.Stats()
			if st.Packets != 2 || st.Bytes != 600+limit || st.Drops != 3 || st.BacklogPackets != 0 {
				t.Errorf("Stats %+v; want 2 packets (%d bytes) sent and 3 dropped", st, 600+limit)
			}
			if n, _ := link.Count(); n != 2 {
				t.Errorf("the link got %d packets, want 2", n)
			}
		})
	}
}
