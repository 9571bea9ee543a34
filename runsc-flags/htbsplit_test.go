package runscflags

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// splitOperator is the operator's tree of docs/classes.md's split example,
// at 1 Gbit/s: the cluster's class by destination, the internet's class
// 1:20 (10 Mbit/s) by a catch-all, a small default.
const splitOperator = "qdisc default 30; class root classid 1:1 rate 1gbit; class parent 1:1 classid 1:10 rate 990mbit ceil 1gbit; class parent 1:1 classid 1:20 rate 10mbit; class parent 1:1 classid 1:30 rate 1mbit; filter dst 10.0.0.0/8 classid 1:10; filter classid 1:20"

// eightWays splits 1:20 into eight classes 1:21..1:28, each given the
// words of its own, the Nth reached by destination 203.0.113.N, the last
// by a catch-all.
func eightWays(words func(n int) string) string {
	var parts []string
	for n := 1; n <= 8; n++ {
		parts = append(parts, fmt.Sprintf("class parent 1:20 classid 1:2%d %s", n, words(n)))
		if n < 8 {
			parts = append(parts, fmt.Sprintf("filter parent 1:20 dst 203.0.113.%d/32 classid 1:2%d", n, n))
		} else {
			parts = append(parts, "filter parent 1:20 classid 1:28")
		}
	}
	return strings.Join(parts, "; ")
}

// TestHTBEightfoldSplit: a pod that splits the operator's 10 Mbit/s class
// eight ways cannot make it send more. Eight children at the class's rate
// each (which Linux's htb would serve at 80 Mbit/s, each within its own
// rate) are refused; children that share the rate, with one borrower or
// none, are accepted, and load offered to the eight destinations for 3 s
// through the qdisc NewQueueingDiscipline builds leaves at no more than
// 10.0 Mbit/s.
func TestHTBEightfoldSplit(t *testing.T) {
	for _, tc := range []struct {
		name, annotation string
		says             string // refused, saying
	}{
		{name: "the operator's tree alone"},
		{
			name:       "eight at the class's rate",
			annotation: eightWays(func(int) string { return "rate 10mbit ceil 10mbit" }),
			says:       "their rates add up to 80Mbit, above 1:20's 10Mbit",
		},
		{
			name:       "eight borrowers sharing the rate",
			annotation: eightWays(func(int) string { return "rate 1250kbit ceil 10mbit" }),
			says:       "one of 1:20's children at most may borrow",
		},
		{
			name:       "eight sharing the rate",
			annotation: eightWays(func(int) string { return "rate 1250kbit ceil 1250kbit" }),
		},
		{
			name: "one borrower and seven sharing the rest",
			annotation: eightWays(func(n int) string {
				if n == 1 {
					return "rate 3mbit ceil 10mbit"
				}
				return "rate 1mbit ceil 1mbit"
			}),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parse(t, "--qdisc=htb", "--qdisc-htb="+splitOperator)
			if err != nil {
				t.Fatal(err)
			}
			if tc.annotation != "" {
				err := c.ApplyAnnotations(map[string]string{AnnotationPrefix + FlagHTB: tc.annotation})
				if tc.says != "" {
					if err == nil || !strings.Contains(err.Error(), tc.says) {
						t.Fatalf("annotation %q: %v; want it refused, saying %q", tc.annotation, err, tc.says)
					}
					return
				}
				if err != nil {
					t.Fatalf("annotation %q: %v", tc.annotation, err)
				}
			}
			var dsts []netip.Addr
			for n := 1; n <= 8; n++ {
				dsts = append(dsts, netip.AddrFrom4([4]byte{203, 0, 113, byte(n)}))
			}
			got := offeredMbit(t, c, dsts, 2, 3*time.Second)
			t.Logf("%s: %.3f Mbit/s", tc.name, got)
			if got > 10.05 || got < 9.9 {
				t.Errorf("the internet's class sent %.3f Mbit/s, want 10.0 (its rate)", got)
			}
		})
	}
}

// offeredMbit offers per 1500-byte packets a ms to each of dsts (more
// than the qdisc c builds sends) for dur on a step clock, and returns the
// Mbit/s that left.
func offeredMbit(t *testing.T, c *Config, dsts []netip.Addr, per int, dur time.Duration) float64 {
	t.Helper()
	clock := qdisctest.NewStepClock()
	link := qdisctest.NewLink(clock)
	link.Discard = true
	q, err := c.NewQueueingDiscipline(link, clock)
	if err != nil {
		t.Fatal(err)
	}
	offered := float64(len(dsts)*per) * 1500 * 8 * 1000 / 1e6
	if q == nil { // none: the NIC writes to its link
		return offered
	}
	defer q.Close()
	quiet, ok := q.(qdisctest.Quiescer)
	if !ok { // fifo: it shapes nothing, and its dispatchers keep no time
		return offered
	}
	pkts := make([]*stack.PacketBuffer, len(dsts))
	for i, d := range dsts {
		pkts[i] = sizedIPv4(d, 1500)
		defer pkts[i].DecRef()
	}
	const step = time.Millisecond
	for range int(dur / step) {
		for _, p := range pkts {
			for range per {
				q.WritePacket(p) // a full queue drops; the load is offered
			}
		}
		qdisctest.WaitQuiescent(t, quiet)
		clock.Advance(step)
		clock.Fire()
		qdisctest.WaitQuiescent(t, quiet)
	}
	_, bytes := link.Count()
	return float64(bytes) * 8 / dur.Seconds() / 1e6
}

// sizedIPv4 is a UDP packet of size bytes to dst, its network header at
// the start of its data.
func sizedIPv4(dst netip.Addr, size int) *stack.PacketBuffer {
	b := make([]byte, size)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(size))
	b[8], b[9] = 64, 17
	copy(b[12:], []byte{192, 168, 0, 2})
	a := dst.As4()
	copy(b[16:], a[:])
	binary.BigEndian.PutUint16(b[20:], 40000)
	binary.BigEndian.PutUint16(b[22:], 443)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	return pkt
}

// TestHTBKubernetesBandwidthHolds: kubernetes.io/egress-bandwidth holds an
// htb pod to the bandwidth, measured: the classes under the root keep no
// rate of their own above it (htb serves a class within its own rate
// without asking its parent, so lowering the root alone let classes of 90
// and 10 Mbit/s under a 50M bandwidth send 100). Load to the cluster's
// class and the internet's two, 2 s on a step clock through the qdisc.
func TestHTBKubernetesBandwidthHolds(t *testing.T) {
	const operator = "qdisc default 30; class root classid 1:1 rate 100mbit; class parent 1:1 classid 1:10 rate 90mbit ceil 100mbit; class parent 1:1 classid 1:20 rate 10mbit ceil 100mbit; class parent 1:20 classid 1:21 rate 8mbit ceil 100mbit; class parent 1:20 classid 1:22 rate 8mbit ceil 100mbit; class parent 1:1 classid 1:30 rate 1mbit; filter dst 10.0.0.0/8 classid 1:10; filter classid 1:20; filter parent 1:20 dst 203.0.113.0/24 classid 1:21; filter parent 1:20 classid 1:22"
	dsts := []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("203.0.113.9"), netip.MustParseAddr("198.51.100.1")}
	for _, tc := range []struct {
		bandwidth string
		want      float64 // Mbit/s
	}{
		{"", 106}, // the operator's classes' rates add up to 106 Mbit/s under its 100: htb gives them that
		{"50M", 50},
		{"5M", 5},
	} {
		c, err := parse(t, "--qdisc=htb", "--qdisc-htb="+operator)
		if err != nil {
			t.Fatal(err)
		}
		if tc.bandwidth != "" {
			if err := c.ApplyAnnotations(map[string]string{AnnotationKubeEgress: tc.bandwidth}); err != nil {
				t.Fatal(err)
			}
		}
		got := offeredMbit(t, c, dsts, 10, 2*time.Second)
		t.Logf("egress-bandwidth %q: %.3f Mbit/s (tree %s)", tc.bandwidth, got, c.HTB)
		if got > tc.want*1.005 || got < tc.want*0.97 {
			t.Errorf("egress-bandwidth %q: %.3f Mbit/s left, want %.0f", tc.bandwidth, got, tc.want)
		}
	}
}
