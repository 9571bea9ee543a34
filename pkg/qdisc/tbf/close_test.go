package tbf_test

import (
	"fmt"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

func TestCloseRace(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  tbf.Config
	}{
		// Shaping hard: a backlog, drops at the limit, the dispatcher
		// asleep on its timer when Close comes.
		{"shaping", tbf.Config{Rate: 10 * mbit, Burst: 3028, Latency: 20 * time.Millisecond}},
		// Far from the ceiling: packets flow straight through.
		{"unlimited", tbf.Config{Rate: 100 * gbit, Burst: 128 << 20}},
		// Peak bucket: packets over min(burst, mtu) refused.
		{"peak", tbf.Config{Rate: 10 * mbit, Burst: 64 << 10, PeakRate: 100 * mbit, MTU: 1514, Limit: 64 << 10}},
	} {
		for _, queues := range []int{1, 2, 4, 8} {
			t.Run(fmt.Sprintf("%s/%d queues", tc.name, queues), func(t *testing.T) {
				for round := 0; round < 3; round++ {
					qdisctest.CloseRace(t, func() qdisctest.StatsQdisc {
						link := qdisctest.NewLink(nil)
						link.Discard = true
						cfg := tc.cfg
						cfg.Lanes = queues
						d, err := tbf.New(link, tcpip.NewStdClock(), cfg)
						if err != nil {
							t.Fatal(err)
						}
						return d
					}, 8, 400)
				}
			})
		}
	}
}

func TestClosedRefusesWithoutReference(t *testing.T) {
	clock := faketime.NewManualClock()
	d, err := tbf.New(qdisctest.NewLink(clock), clock, tbf.Config{Rate: mbit, Burst: 1514})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		pkt := qdisctest.MakePacket(1514, 0, uint64(i))
		if err := d.WritePacket(pkt); err != nil {
			t.Fatal(err)
		}
		pkt.DecRef()
	}
	qdisctest.WaitQuiescent(t, d)
	d.Close()
	d.Close()
	for _, size := range []int{100, 5000} {
		pkt := qdisctest.MakePacket(size, 0, 9)
		if _, ok := d.WritePacket(pkt).(*tcpip.ErrClosedForSend); !ok {
			t.Errorf("WritePacket(%d bytes) after Close did not answer ErrClosedForSend", size)
		}
		if n := pkt.ReadRefs(); n != 1 {
			t.Errorf("refused packet has %d references, want 1", n)
		}
		pkt.DecRef()
	}
	// One left at once; the two queued were released by Close.
	if st := d.Stats(); st.Packets != 1 || st.Drops != 2 || st.BacklogPackets != 0 {
		t.Errorf("Stats %+v: want 1 sent, 2 dropped at Close", st)
	}
}
