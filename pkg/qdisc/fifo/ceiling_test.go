package fifo_test

import (
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestSetCeiling puts a tbf's buckets over a running fifo of two queues,
// as runsc qdisc change does on a sandbox started with fifo: both queues
// draw on the one bucket, so what leaves by every instant is what the
// bucket allows (a full burst at once, then the rate); removing the
// ceiling sends the backlog at once, each flow in order.
func TestSetCeiling(t *testing.T) {
	const (
		size    = 1000
		packets = 200
		rate    = 1_000_000 // bytes/s: a 1000-byte packet a millisecond
		burst   = 10 * size
	)
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	d := fifo.NewWithClock(link, clock, 2, packets)
	defer d.Close()
	gate, maxSize, err := tbf.NewGate(link, tbf.Config{Rate: rate, Burst: burst, Slack: tbf.NoSlack}, true)
	if err != nil {
		t.Fatal(err)
	}
	d.SetCeiling(gate, maxSize)
	if s := d.String(); !strings.HasPrefix(s, "tbf rate 8Mbit burst 10000b; child fifo queues 2") {
		t.Errorf("String() = %q with a ceiling", s)
	}
	for i := range packets {
		pkt := qdisctest.MakePacket(size, uint32(i%2), uint64(i))
		if err := d.WritePacket(pkt); err != nil {
			t.Fatal(err)
		}
		pkt.DecRef()
	}
	qdisctest.WaitQuiescent(t, d)
	// The bucket is full as the ceiling is set: 10 packets at once, then
	// one a millisecond, from both queues together.
	for ms := 0; ms <= 50; ms++ {
		if got, want := len(link.Records()), burst/size+ms; got != want {
			t.Fatalf("after %d ms, %d packets sent; want %d (a burst of %d, then 1 a ms)", ms, got, want, burst/size)
		}
		clock.Advance(time.Millisecond)
		qdisctest.WaitQuiescent(t, d)
	}
	d.SetCeiling(nil, 0)
	qdisctest.WaitQuiescent(t, d)
	recs := link.Records()
	if len(recs) != packets {
		t.Fatalf("%d packets sent after the ceiling was removed, want all %d at once", len(recs), packets)
	}
	last := map[uint32]uint64{}
	for _, r := range recs {
		if prev, ok := last[r.Hash]; ok && r.Seq < prev {
			t.Fatalf("flow %d: packet %d after packet %d", r.Hash, r.Seq, prev)
		}
		last[r.Hash] = r.Seq
	}
	if s := d.String(); s != "fifo queues 2 limit 200p" {
		t.Errorf("String() = %q after the ceiling was removed", s)
	}
}
