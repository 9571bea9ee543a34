package runscflags

import (
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestNetemTBFChild: --qdisc-tbf-child=netem takes --qdisc-netem's words,
// as `tc qdisc add dev D parent 1:1 netem delay 50ms` grafts netem under
// a tbf: on a ManualClock a packet leaves at its delay and not before,
// and the packets due together leave at the tbf's rate after its burst.
// A pod's words for that netem are held to the operator's (more delay,
// never less), and netem's words with no netem to take them are refused
// saying where they go.
func TestNetemTBFChild(t *testing.T) {
	args := []string{"--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=3028", "--qdisc-tbf-child=netem", "--qdisc-netem=delay 50ms seed 1"}
	c, err := parse(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	clock := faketime.NewManualClock()
	start := clock.NowMonotonic()
	link := qdisctest.NewLink(clock)
	sq, err := c.NewQueueingDiscipline(link, clock)
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	q := sq.(qdisc.Discipline)
	if s := q.String(); !strings.Contains(s, "child netem limit 1000 delay 50ms seed 1") {
		t.Errorf("the qdisc is %q; want the tbf's child netem with the flag's delay", s)
	}
	const n, size, rate, burst = 20, 1514, 1_250_000, 3028
	for i := range n {
		pkt := qdisctest.MakePacket(size, 1, uint64(i))
		if err := q.WritePacket(pkt); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		pkt.DecRef()
	}
	// Every 100 us for 100 ms: nothing before the delay, then no more
	// than the tbf's burst and rate allow since, and all of it by the end
	// (the last is due 50ms + 18 packets' times, 71.8 ms).
	for range 1000 {
		clock.Advance(100 * time.Microsecond)
		qdisctest.WaitQuiescent(t, q)
		at := clock.NowMonotonic().Sub(start)
		sent, bytes := link.Count()
		if at < 50*time.Millisecond && sent != 0 {
			t.Fatalf("at %v, before netem's delay: %d packets sent", at, sent)
		}
		if most := burst + rate*(at-50*time.Millisecond).Seconds(); at >= 50*time.Millisecond && float64(bytes) > most {
			t.Fatalf("at %v: %d bytes sent, more than the tbf's burst and rate allow since the delay, %.0f", at, bytes, most)
		}
	}
	if sent, _ := link.Count(); sent != n {
		t.Fatalf("%d of %d packets sent after 100 ms", sent, n)
	}

	for _, tc := range []struct {
		words string
		ok    bool
	}{
		{"delay 60ms", true},
		{"delay 50ms loss 1%", true},
		{"delay 10ms", false},
	} {
		pod, err := parse(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		err = pod.ApplyAnnotations(map[string]string{AnnotationPrefix + "qdisc-netem": tc.words})
		if (err == nil) != tc.ok {
			t.Errorf("a pod's --qdisc-netem=%q over the operator's 50ms: %v; want accepted: %v", tc.words, err, tc.ok)
		}
	}

	_, err = parse(t, "--qdisc=tbf", "--qdisc-tbf-rate=10mbit", "--qdisc-tbf-burst=3028", "--qdisc-netem=delay 50ms")
	if err == nil || !strings.Contains(err.Error(), "--qdisc-tbf-child=netem under --qdisc=tbf") {
		t.Errorf("--qdisc-netem under a tbf whose child is fq: %v; want it refused, naming --qdisc-tbf-child=netem", err)
	}
}
