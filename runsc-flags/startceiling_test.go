package runscflags_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestStartCeiling: --qdisc-tbf-rate given with a kind other than tbf is
// a ceiling over it from the start, as runsc qdisc change would put it
// there: netem's delay, then the ceiling's rate (the netem seed's netem
// with a tbf child); a kind that takes no ceiling is refused, naming it,
// not left unshaped.
func TestStartCeiling(t *testing.T) {
	c, err := fromArgs("--qdisc=netem", "--qdisc-netem=delay 100ms", "--qdisc-tbf-rate=1mbit", "--qdisc-tbf-burst=1514")
	if err != nil {
		t.Fatal(err)
	}
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	q, err := c.NewQueueingDiscipline(link, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for seq := range uint64(10) {
		p := qdisctest.MakePacket(1250, 1, seq)
		if err := q.WritePacket(p); err != nil {
			t.Fatal(err)
		}
		p.DecRef()
	}
	// 1250 bytes at 1 Mbit/s take 10 ms: after the 100 ms delay, one
	// packet (the bucket's 1514 bytes hold one), then one each 10 ms.
	var sent []int
	for ms := 1; ms <= 150; ms++ {
		clock.Advance(time.Millisecond)
		qdisctest.WaitQuiescent(t, q.(qdisctest.Quiescer))
		if ms%25 == 0 {
			sent = append(sent, link.NumRecords())
		}
	}
	if want := []int{0, 0, 0, 1, 3, 6}; !slices.Equal(sent, want) {
		t.Errorf("packets on the link at 25, 50 ... 150 ms: %v, want %v", sent, want)
	}

	c, err = fromArgs("--qdisc=cake", "--qdisc-tbf-rate=1mbit", "--qdisc-tbf-burst=1514")
	if err != nil {
		t.Fatal(err)
	}
	if q, err := c.NewQueueingDiscipline(link, clock); err == nil {
		q.Close()
		t.Errorf("--qdisc=cake with --qdisc-tbf-rate built a qdisc; want a refusal")
	} else if !strings.Contains(err.Error(), "--qdisc=cake takes no ceiling") {
		t.Errorf("refusal %q does not name cake", err)
	}
}
