package node_test

import (
	"math"
	"os"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/htb"
	"github.com/netqdisc/netqdisc/pkg/qdisc/node"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

const mbit = 1_000_000 / 8

// sandboxNIC is one sandbox of a test node: its qdisc over its class's
// uplink over its own link, stepped by its runner.
type sandboxNIC struct {
	link   *qdisctest.Link
	q      qdisc.Discipline
	runner *node.Runner
	seq    uint64
}

// joinNode starts a node's allocator with tree, stepped on clock, and
// joins a sandbox of each class (its process this one), returning their
// allocator and their members over their seats.
func joinNode(t testing.TB, clock *faketime.ManualClock, tree string, classes ...htb.ClassConfig) (*node.Allocator, []*node.Member) {
	t.Helper()
	s, err := htb.ParseScript(tree)
	if err != nil {
		t.Fatal(err)
	}
	a, err := node.NewAllocator(s, 128)
	if err != nil {
		t.Fatal(err)
	}
	now := func() int64 { return int64(clock.NowMonotonic().Sub(tcpip.MonotonicTime{})) }
	stepper := node.StepEvery(a, clock, now)
	var seats []*node.Seat
	t.Cleanup(func() {
		stepper.Close()
		for _, s := range seats {
			s.Close()
		}
		a.Close()
	})
	var ms []*node.Member
	for _, c := range classes {
		_, c, f, err := a.Join(c, selfProcess{}, now())
		if err != nil {
			t.Fatal(err)
		}
		seat, err := node.MapSeat(f)
		if err != nil {
			t.Fatal(err)
		}
		seats = append(seats, seat)
		ms = append(ms, node.NewMember(seat, c))
	}
	return a, ms
}

// selfProcess is a sandbox's process that runs as long as the test.
type selfProcess struct{}

func (selfProcess) Alive() bool  { return true }
func (selfProcess) PID() int     { return os.Getpid() }
func (selfProcess) Close() error { return nil }

// newNode starts a node's allocator with tree and starts a NIC per class, each
// with the qdisc build makes over its uplink (on the receive path, the
// uplink writer that delivers to the sandbox), on clock.
func newNode(t *testing.T, clock *faketime.ManualClock, tree string, classes []htb.ClassConfig, receive bool, build func(stack.LinkEndpoint) qdisc.Discipline) []*sandboxNIC {
	t.Helper()
	now := func() int64 { return int64(clock.NowMonotonic().Sub(tcpip.MonotonicTime{})) }
	_, ms := joinNode(t, clock, tree, classes...)
	var nics []*sandboxNIC
	for i, c := range classes {
		m := ms[i]
		n := &sandboxNIC{link: qdisctest.NewLink(clock)}
		up := node.NewUplink(n.link, c.Rate)
		if receive {
			up = node.NewUplinkWriter(n.link, c.Rate)
		}
		n.q = build(up)
		n.runner = node.Run(m, up, clock, now)
		t.Cleanup(func() { n.runner.Close(); n.q.Close() })
		nics = append(nics, n)
	}
	return nics
}

// drive keeps the busy NICs backlogged with 1500-byte packets for d,
// stepping clock 1 ms at a time, and returns the bytes each link took.
func drive(t *testing.T, clock *faketime.ManualClock, nics []*sandboxNIC, busy []bool, d time.Duration) []uint64 {
	t.Helper()
	before := make([]uint64, len(nics))
	for i, n := range nics {
		_, before[i] = n.link.Count()
	}
	for range int(d / time.Millisecond) {
		for i, n := range nics {
			if !busy[i] {
				continue
			}
			for n.q.Stats().BacklogPackets < 20 {
				pkt := qdisctest.MakePacket(1500, 0, n.seq)
				n.seq++
				n.q.WritePacket(pkt)
				pkt.DecRef()
			}
		}
		for _, n := range nics {
			qdisctest.WaitQuiescent(t, n.q)
		}
		clock.Advance(time.Millisecond)
	}
	out := make([]uint64, len(nics))
	for i, n := range nics {
		_, b := n.link.Count()
		out[i] = b - before[i]
	}
	return out
}

// issueClasses are the issue's three sandboxes under a root of 100
// Mbit/s: guaranteed 10, 20 and 30 Mbit/s, each with a ceil of 100.
var issueClasses = []htb.ClassConfig{
	{ID: 1<<16 | 10, Parent: 1<<16 | 1, Rate: 10 * mbit, Ceil: 100 * mbit},
	{ID: 1<<16 | 20, Parent: 1<<16 | 1, Rate: 20 * mbit, Ceil: 100 * mbit},
	{ID: 1<<16 | 30, Parent: 1<<16 | 1, Rate: 30 * mbit, Ceil: 100 * mbit},
}

// TestNodeShares: the issue's node, in process: three sandboxes' NICs
// (fifo) over their classes' uplinks, kept backlogged; the bytes each
// link takes in 1 s are htb's shares (within 1% of the
// root's rate), in all no more than the root's; one going idle leaves
// its share to the others.
func TestNodeShares(t *testing.T) {
	t.Parallel()
	classes := issueClasses
	for _, tc := range []struct {
		name string
		busy []bool
		want []float64 // Mbit/s
	}{
		{"all busy", []bool{true, true, true}, []float64{10 + 40*5.0/21, 20 + 40*8.0/21, 30 + 40*8.0/21}},
		{"1:10 idle", []bool{false, true, true}, []float64{0, 45, 55}},
		{"receive path", []bool{true, true, true}, []float64{10 + 40*5.0/21, 20 + 40*8.0/21, 30 + 40*8.0/21}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := faketime.NewManualClock()
			nics := newNode(t, clock, "class root classid 1:1 rate 100mbit", classes, tc.name == "receive path", func(l stack.LinkEndpoint) qdisc.Discipline {
				if tc.name == "receive path" {
					// What the sandbox receives: fifo's receive path,
					// delivering through the class's uplink writer.
					return fifo.NewTo(l.(*node.Uplink), qdisctest.NewLink(clock), clock, 1, 1000)
				}
				return fifo.NewWithClock(l, clock, 1, 1000)
			})
			drive(t, clock, nics, tc.busy, 500*time.Millisecond)
			got := drive(t, clock, nics, tc.busy, time.Second)
			var total float64
			for i, b := range got {
				r := float64(b) / mbit
				total += r
				t.Logf("%s: %.3f Mbit/s", classify.ClassID(classes[i].ID), r)
				if math.Abs(r-tc.want[i]) > 1 {
					t.Errorf("class %s sent %.3f Mbit/s, want %.3f", classify.ClassID(classes[i].ID), r, tc.want[i])
				}
			}
			if total > 100*1.005 {
				t.Errorf("the node sent %.3f Mbit/s in all, past the root's 100 by more than 0.5%%", total)
			}
		})
	}
}

// TestNodeHandover: a sandbox's share goes to the others when it goes
// idle, within 100 ms, and when it is killed (its runner stops without
// leaving its slot, as SIGKILL leaves it), within a second; a sandbox
// whose own tbf holds it below its share sends its tbf's rate, and the
// others take the rest.
func TestNodeHandover(t *testing.T) {
	t.Parallel()
	classes := issueClasses
	rates := func(b []uint64, d time.Duration) []float64 {
		out := make([]float64, len(b))
		for i := range b {
			out[i] = float64(b[i]) / d.Seconds() / mbit
		}
		return out
	}
	check := func(t *testing.T, what string, got, want []float64, tol float64) {
		t.Helper()
		for i := range got {
			if math.Abs(got[i]-want[i]) > tol {
				t.Errorf("%s: %s sent %.3f Mbit/s, want %.3f", what, classify.ClassID(classes[i].ID), got[i], want[i])
			}
		}
	}
	t.Run("idle and killed", func(t *testing.T) {
		clock := faketime.NewManualClock()
		nics := newNode(t, clock, "class root classid 1:1 rate 100mbit", classes, false, func(l stack.LinkEndpoint) qdisc.Discipline {
			return fifo.NewWithClock(l, clock, 1, 1000)
		})
		all := []bool{true, true, true}
		drive(t, clock, nics, all, 500*time.Millisecond)
		drive(t, clock, nics, []bool{false, true, true}, 100*time.Millisecond)
		got := rates(drive(t, clock, nics, []bool{false, true, true}, time.Second), time.Second)
		check(t, "from 100 ms after 1:a went idle", got, []float64{0, 45, 55}, 0.5)
		drive(t, clock, nics, all, 500*time.Millisecond)
		nics[2].runner.Kill()
		nics[2].q.Close() // its packets stop
		drive(t, clock, nics, []bool{true, true, false}, time.Second)
		got = rates(drive(t, clock, nics, []bool{true, true, false}, time.Second), time.Second)
		check(t, "from 1 s after 1:1e was killed", got, []float64{10 + 70*5.0/13, 20 + 70*8.0/13, 0}, 0.5)
	})
	t.Run("own tbf below the share", func(t *testing.T) {
		clock := faketime.NewManualClock()
		i := 0
		nics := newNode(t, clock, "class root classid 1:1 rate 100mbit", classes, false, func(l stack.LinkEndpoint) qdisc.Discipline {
			i++
			if i == 3 {
				q, err := tbf.New(l, clock, tbf.Config{Rate: 15 * mbit, Burst: 16000, Limit: 64000})
				if err != nil {
					t.Fatal(err)
				}
				return q
			}
			return fifo.NewWithClock(l, clock, 1, 1000)
		})
		all := []bool{true, true, true}
		drive(t, clock, nics, all, 500*time.Millisecond)
		got := rates(drive(t, clock, nics, all, time.Second), time.Second)
		// 1:1e wants what it sends and the slack (a 256th of the
		// root's rate), under its rate of 30: the others share the
		// rest.
		spare := 100 - 30 - (15 + 100.0/256)
		// Within 1 Mbit/s, not 0.5: up to 0.75 Mbit/s moves between
		// the other two from run to run (3 to 9 runs in 80 under
		// -race at every commit from 3395416, before issue 49, to
		// 1e86214), most likely from the order in which a manual
		// clock fires the timers of one instant (the runners', the
		// allocator's, the lanes'), which is random; staggering the
		// runners' starts alone did not help.
		check(t, "1:1e held to 15 Mbit/s by its own tbf", got, []float64{10 + spare*5/13, 20 + spare*8/13, 15}, 1.0)
	})
}
