package htb

import (
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc/classify"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/netem"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// netemTree is a tree of two leaves under a root: 1:10 (the cluster's, no
// delay) and 1:20 (the internet's, 1 Mbit/s) with netem's words on 1:20.
const netemTree = "class root classid 1:1 rate 100mbit; class parent 1:1 classid 1:10 rate 50mbit; class parent 1:1 classid 1:20 rate 1mbit; qdisc parent 1:20 netem "

// TestGraftWords holds a leaf's qdisc statement with a kind's words: a
// script reads it, writes it back the same, and refuses what is wrong
// naming what to change.
func TestGraftWords(t *testing.T) {
	_ = netem.Kind // netem registered
	for _, tc := range []struct {
		script string
		want   string // "" for a valid script written back as given
	}{
		{netemTree + "delay 100ms", ""},
		{netemTree + "delay 100ms loss 1%", ""},
		{"class root classid 1:1 rate 10mbit; class parent 1:1 classid 1:10 rate 5mbit; class parent 1:1 classid 1:20 rate 5mbit; qdisc parent 1:10 fq_codel; qdisc parent 1:20 netem delay 5ms", ""},
		{netemTree + "delay", "netem:"},
		{netemTree + "delay 10ms; qdisc parent 1:20 fq_codel", "class 1:20 is given a qdisc twice"},
		{"class root classid 1:1 rate 10mbit; qdisc parent 1:2 netem delay 1ms", "no class 1:2"},
		{"class root classid 1:1 rate 10mbit; class parent 1:1 classid 1:10 rate 5mbit; qdisc parent 1:1 netem delay 1ms", "class 1:1 has children"},
		{"class root classid 1:1 rate 10mbit; qdisc parent 1:1 sfq", `"sfq": a leaf takes fq_codel`},
		{"class root classid 1:1 rate 10mbit; qdisc parent 1:1 fifo", `"fifo": a leaf takes fq_codel`},
		{"class root classid 1:1 rate 10mbit; qdisc parent 1:1 fq_codel target 1ms", "--qdisc-fq-codel-* flags"},
		{"class root classid 1:1 rate 10mbit; qdisc parent 1:1", "a leaf's qdisc is"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			s, err := ParseScript(tc.script)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("ParseScript = %v, want an error saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseScript(s.String())
			if err != nil || again.String() != s.String() {
				t.Fatalf("ParseScript(%q) = %q, %v; want it back", s.String(), again.String(), err)
			}
			if !strings.Contains(s.String(), "qdisc parent 1:20 netem ") {
				t.Errorf("String() = %q: the netem leaf is missing", s.String())
			}
		})
	}
}

// TestPodGraftOpensNoFile holds a pod's words for a leaf's netem to
// netem's ParsePod: a distribution file is refused, never opened.
func TestPodGraftOpensNoFile(t *testing.T) {
	_, err := ParsePodScript(netemTree + "delay 10ms 1ms distribution /etc/passwd")
	if err == nil {
		t.Fatal("a pod's netem leaf named a host file and was taken")
	}
	if strings.Contains(err.Error(), "root:") {
		t.Fatalf("the error shows the file's lines: %v", err)
	}
}

// TestNetemLeaf runs a tree whose class 1:20 has netem's delay 100ms as
// its leaf, as a lane does: it dequeues when an enqueue Activated the
// tree and when the tree's NextEvent comes, and at no other time. 1:20's
// packets leave their delay after they came, not before and not after
// (the tree wakes at the leaf's NextEvent, not a second later), and at no
// more than the class's rate; 1:10's leave at once; every reference comes
// back once.
func TestNetemLeaf(t *testing.T) {
	const ms = int64(1_000_000)
	type arrival struct {
		at    int64
		class uint32
	}
	for _, tc := range []struct {
		name     string
		words    string
		arrivals []arrival
		// want is each packet's departure, in the order of arrivals.
		want []int64
	}{
		{
			name:     "delay",
			words:    "delay 100ms",
			arrivals: []arrival{{0, 0x10020}, {0, 0x10010}, {10 * ms, 0x10010}, {50 * ms, 0x10020}},
			want:     []int64{100 * ms, 0, 10 * ms, 150 * ms},
		},
		{
			// 1000-byte packets at 1 Mbit/s: the bucket (1600 bytes,
			// 12.8 ms) passes two at once, then one each 8 ms.
			name:     "rate",
			words:    "delay 100ms",
			arrivals: []arrival{{0, 0x10020}, {0, 0x10020}, {0, 0x10020}, {0, 0x10020}, {1 * ms, 0x10010}},
			want:     []int64{100 * ms, 100 * ms, 103_200_000, 111_200_000, 1 * ms},
		},
		{
			// reorder's gap sends the second packet ahead, at once:
			// netem's Activated on a class already active wakes the
			// tree, which was waiting for the first's delay.
			name:     "sent ahead",
			words:    "delay 100ms reorder 100% gap 2",
			arrivals: []arrival{{0, 0x10020}, {10 * ms, 0x10020}},
			want:     []int64{100 * ms, 10 * ms},
		},
		{
			name:     "no delay",
			words:    "limit 100",
			arrivals: []arrival{{0, 0x10020}, {2 * ms, 0x10010}},
			want:     []int64{0, 2 * ms},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseScript(netemTree + tc.words)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := s.Config(classify.Egress, fqcodel.Config{}, 1514)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := NewTree(cfg, bySeq{}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if tr.ArrivalBlind() {
				t.Fatal("the tree is ArrivalBlind over a netem leaf, which is timed by the arrivals it is given")
			}
			var pkts []*stack.PacketBuffer
			left := make([]int64, len(tc.arrivals))
			for i := range left {
				left[i] = -1
			}
			drain := func(now int64) {
				for {
					pkt, _, ok := tr.Dequeue(now)
					if !ok {
						return
					}
					i := int(qdisctest.Seq(pkt) & 0xffffffff)
					if left[i] != -1 {
						t.Fatalf("packet %d left twice", i)
					}
					left[i] = now
					pkt.DecRef()
				}
			}
			now, wake, next := int64(0), int64(-1), 0
			for next < len(tc.arrivals) || wake >= 0 {
				if next < len(tc.arrivals) && (wake < 0 || tc.arrivals[next].at <= wake) {
					now = tc.arrivals[next].at
					a := tc.arrivals[next]
					p := qdisctest.MakePacket(1000, 0, uint64(a.class)<<32|uint64(next))
					p.IncRef() // the test's own, for CheckReleased
					pkts = append(pkts, p)
					if !tr.Enqueue(p, 1000, now) {
						t.Fatalf("packet %d refused", next)
					}
					next++
					if !tr.Activated() {
						continue // the lane keeps waiting for wake
					}
				} else {
					now = wake
				}
				drain(now)
				wake = -1
				if n, _ := tr.Len(); n != 0 {
					if wake = tr.NextEvent(); wake <= now {
						t.Fatalf("at %d: NextEvent %d is not after now", now, wake)
					}
				}
			}
			for i, want := range tc.want {
				if left[i] != want {
					t.Errorf("packet %d (class %s, came at %d ms) left at %d ns, want %d", i, classify.ClassID(tc.arrivals[i].class), tc.arrivals[i].at/ms, left[i], want)
				}
			}
			qdisctest.CheckReleased(t, pkts)
		})
	}
}

// TestNetemLeafPurge releases the packets a netem leaf holds when the
// tree is purged, once each.
func TestNetemLeafPurge(t *testing.T) {
	s, err := ParseScript(netemTree + "delay 100ms")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.Config(classify.Egress, fqcodel.Config{}, 1514)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTree(cfg, bySeq{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var pkts []*stack.PacketBuffer
	for i := range 3 {
		p := qdisctest.MakePacket(1000, 0, 0x10020<<32|uint64(i))
		p.IncRef()
		pkts = append(pkts, p)
		tr.Enqueue(p, 1000, 0)
	}
	if _, _, ok := tr.Dequeue(0); ok {
		t.Fatal("a packet left before its delay")
	}
	if n, _ := tr.Purge(); n != 3 {
		t.Fatalf("Purge dropped %d packets, want 3", n)
	}
	qdisctest.CheckReleased(t, pkts)
}

// TestTightenGrafts holds a pod's script to the operator's leaves: the
// operator's netem stays with its words, and a pod grafts none of its
// own.
func TestTightenGrafts(t *testing.T) {
	const base = "class root classid 1:1 rate 100mbit; class parent 1:1 classid 1:10 rate 50mbit; class parent 1:1 classid 1:20 rate 1mbit"
	for _, tc := range []struct {
		name, op, pod, want string // want "" to take pod
	}{
		{"kept", base + "; qdisc parent 1:20 netem delay 100ms", base + "; qdisc parent 1:20 netem delay 100ms", ""},
		{"kept, a class lowered", base + "; qdisc parent 1:20 netem delay 100ms", strings.Replace(base, "1:20 rate 1mbit", "1:20 rate 500kbit", 1) + "; qdisc parent 1:20 netem delay 100ms",
			""},
		{"pod's own netem", base, base + "; qdisc parent 1:20 netem delay 1ms",
			"qdisc parent 1:20 netem delay 1000000ns: the leaves' qdiscs are the operator's: a pod's script grafts none and keeps the operator's words"},
		{"words changed", base + "; qdisc parent 1:20 netem delay 100ms", base + "; qdisc parent 1:20 netem delay 1ms",
			"qdisc parent 1:20 netem delay 1000000ns: the leaves' qdiscs are the operator's"},
		{"operator's dropped", base + "; qdisc parent 1:20 netem delay 100ms", base,
			"qdisc parent 1:20 netem delay 100000000ns: the operator's leaf qdisc stays, with its words"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, err := ParseScript(tc.op)
			if err != nil {
				t.Fatal(err)
			}
			pod, err := ParsePodScript(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			got, err := op.Tighten(pod)
			if tc.want == "" {
				if err != nil || got.String() != pod.String() {
					t.Fatalf("Tighten = %q, %v; want the pod's script", got.String(), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Tighten = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestChangeKeepsGrafts: a change of a running tree's classes (the
// Kind's Change) keeps its netem leaf with its words: a class changes in
// place, and words for the leaf other than those it runs are refused.
func TestChangeKeepsGrafts(t *testing.T) {
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	q, err := Kind.New(link, clock, kindOf(t, netemTree+"delay 100ms"))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for _, tc := range []struct{ words, says string }{
		{strings.Replace(netemTree, "1:20 rate 1mbit", "1:20 rate 2mbit", 1) + "delay 100ms", ""},
		{netemTree + "delay 10ms", "the leaves' qdiscs stay as they are"},
		{strings.TrimSuffix(netemTree, "; qdisc parent 1:20 netem "), "the leaves' qdiscs stay as they are"},
	} {
		err := Kind.Change(q, kindOf(t, tc.words))
		if tc.says == "" && err != nil || tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("Change(%q) = %v, want %q", tc.words, err, tc.says)
		}
	}
	if c := q.(*Discipline).Classes()[2]; c.Rate != 250_000 || !strings.HasPrefix(c.Leaf, "netem ") {
		t.Errorf("class 1:20: rate %d, leaf %q; want 250000 and netem", c.Rate, c.Leaf)
	}
}
