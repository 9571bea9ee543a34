package fifo_test

import (
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/faketime"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/netqdisc/netqdisc/pkg/qdisc"
	"github.com/netqdisc/netqdisc/pkg/qdisc/fifo"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
	"github.com/netqdisc/netqdisc/pkg/qdisc/tbf"
)

// TestParse: fifo's words are "limit N" (packets a lane; "1000p", as
// tc-pfifo prints a limit, is read too) and "queues N" (lanes), after an
// optional "fifo" or "pfifo"; "" is the defaults. Anything else is
// refused with an error naming the word, so that a user knows which to
// change.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		words string
		want  fifo.Options
		says  []string // for a refusal: what its error says
	}{
		{words: "", want: fifo.Options{}},
		{words: "limit 10", want: fifo.Options{Limit: 10}},
		{words: "limit 1000p", want: fifo.Options{Limit: 1000}},
		{words: "queues 4", want: fifo.Options{Queues: 4}},
		{words: "limit 5 queues 2", want: fifo.Options{Limit: 5, Queues: 2}},
		{words: "queues 2 limit 5", want: fifo.Options{Limit: 5, Queues: 2}},
		{words: "fifo limit 7", want: fifo.Options{Limit: 7}},
		{words: "pfifo limit 7p", want: fifo.Options{Limit: 7}},
		{words: "  limit\t1048576  ", want: fifo.Options{Limit: 1 << 20}},
		{words: "limit", says: []string{`"limit" needs a value`}},
		{words: "queues", says: []string{`"queues" needs a value`}},
		{words: "limit 0", says: []string{`limit "0"`, "whole number"}},
		{words: "limit -1", says: []string{`limit "-1"`}},
		{words: "limit ten", says: []string{`limit "ten"`}},
		{words: "limit 1048577", says: []string{`limit "1048577"`, "1048576"}},
		{words: "limit 10b", says: []string{`limit "10b"`}},
		{words: "queues 0", says: []string{`queues "0"`}},
		{words: "1000p", says: []string{`unknown word "1000p"`}},
		{words: "burst 10", says: []string{`unknown word "burst"`}},
		{words: "limit 5 fifo", says: []string{`unknown word "fifo"`}},
	} {
		t.Run(tc.words, func(t *testing.T) {
			got, err := fifo.Parse(tc.words)
			viaKind, kerr := fifo.Kind.Parse(tc.words)
			if tc.says == nil {
				if err != nil {
					t.Fatalf("Parse(%q): %v", tc.words, err)
				}
				if got != tc.want {
					t.Errorf("Parse(%q) = %+v; want %+v", tc.words, got, tc.want)
				}
				if kerr != nil || viaKind != qdisc.Options(got) {
					t.Errorf("Kind.Parse(%q) = %v, %v; want Parse's %+v", tc.words, viaKind, kerr, got)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse(%q) = %+v; want an error saying %q", tc.words, got, tc.says)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Parse(%q): %q; want it to say %q", tc.words, err, s)
				}
			}
			if kerr == nil || viaKind != nil {
				t.Errorf("Kind.Parse(%q) = %v, %v; want Parse's error", tc.words, viaKind, kerr)
			}
		})
	}
}

// TestOptionsRoundTrip: Options.String writes the options in Parse's
// words, which Parse reads back to the same options (the default limit,
// 1000, written out), as a runtime keeps and re-reads them.
func TestOptionsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		o    fifo.Options
		want string       // its String
		back fifo.Options // what Parse reads of it
	}{
		{o: fifo.Options{}, want: "limit 1000", back: fifo.Options{Limit: fifo.DefaultLimit}},
		{o: fifo.Options{Limit: 10}, want: "limit 10", back: fifo.Options{Limit: 10}},
		{o: fifo.Options{Queues: 3}, want: "limit 1000 queues 3", back: fifo.Options{Limit: 1000, Queues: 3}},
		{o: fifo.Options{Limit: 1 << 20, Queues: 64}, want: "limit 1048576 queues 64", back: fifo.Options{Limit: 1 << 20, Queues: 64}},
	} {
		t.Run(tc.want, func(t *testing.T) {
			s := tc.o.String()
			if s != tc.want {
				t.Errorf("%+v.String() = %q; want %q", tc.o, s, tc.want)
			}
			back, err := fifo.Kind.Parse(s)
			if err != nil {
				t.Fatalf("Kind.Parse(%q): %v", s, err)
			}
			if back != qdisc.Options(tc.back) {
				t.Errorf("Kind.Parse(%q) = %+v; want %+v", s, back, tc.back)
			}
			if back.String() != s {
				t.Errorf("Kind.Parse(%q).String() = %q; want it unchanged", s, back.String())
			}
		})
	}
}

// TestTighten: a pod may shorten its fifo's lanes (limit at most the
// operator's, the default 1000 where either leaves it unset), never
// lengthen them; the lanes are the operator's whatever the pod asks.
func TestTighten(t *testing.T) {
	for _, tc := range []struct {
		name          string
		operator, pod fifo.Options
		want          fifo.Options // what runs, if accepted
		says          string       // else what the refusal says
	}{
		{name: "a shorter limit", operator: fifo.Options{Limit: 100, Queues: 4}, pod: fifo.Options{Limit: 50}, want: fifo.Options{Limit: 50, Queues: 4}},
		{name: "the same limit", operator: fifo.Options{Limit: 100}, pod: fifo.Options{Limit: 100}, want: fifo.Options{Limit: 100}},
		{name: "the default under the default", operator: fifo.Options{}, pod: fifo.Options{}, want: fifo.Options{}},
		{name: "a limit under the operator's default", operator: fifo.Options{}, pod: fifo.Options{Limit: 1000}, want: fifo.Options{Limit: 1000}},
		{name: "the pod's queues are the operator's", operator: fifo.Options{Limit: 100, Queues: 2}, pod: fifo.Options{Limit: 10, Queues: 64}, want: fifo.Options{Limit: 10, Queues: 2}},
		{name: "the operator's one per CPU stays", operator: fifo.Options{Limit: 100}, pod: fifo.Options{Limit: 10, Queues: 1}, want: fifo.Options{Limit: 10}},
		{name: "a longer limit", operator: fifo.Options{Limit: 100, Queues: 4}, pod: fifo.Options{Limit: 200}, says: "limit 200 is above the operator's 100; give 100 or less"},
		{name: "the default over the operator's", operator: fifo.Options{Limit: 100}, pod: fifo.Options{}, says: "limit 1000 is above the operator's 100"},
		{name: "over the operator's default", operator: fifo.Options{}, pod: fifo.Options{Limit: 1001}, says: "limit 1001 is above the operator's 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fifo.Kind.Tighten(tc.operator, tc.pod)
			if tc.says == "" {
				if err != nil {
					t.Fatalf("Tighten(%+v, %+v): %v; want it accepted", tc.operator, tc.pod, err)
				}
				if got != qdisc.Options(tc.want) {
					t.Errorf("Tighten(%+v, %+v) = %+v; want %+v", tc.operator, tc.pod, got, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Tighten(%+v, %+v) = %v, %v; want an error saying %q", tc.operator, tc.pod, got, err, tc.says)
			}
			if got != nil {
				t.Errorf("Tighten(%+v, %+v) refused it but returned %v", tc.operator, tc.pod, got)
			}
		})
	}
}

// TestNewToDelivers: a fifo Kind.NewTo builds on the receive path hands
// out every packet enqueued, intact, each lane's in the order they came;
// a lane holds at most its limit while the stack above is busy, and the
// rest are refused with ErrNoBufferSpace and counted as drops; every
// packet's reference is released.
func TestNewToDelivers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		words   string
		hashes  int // packets are spread over this many hashes
		packets int
		lanes   int // what the qdisc should have
	}{
		{name: "one lane", words: "limit 1000 queues 1", hashes: 1, packets: 300, lanes: 1},
		{name: "one lane, many hashes", words: "limit 1000 queues 1", hashes: 7, packets: 300, lanes: 1},
		{name: "three lanes", words: "limit 500 queues 3", hashes: 9, packets: 900, lanes: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := fifo.Kind.Parse(tc.words)
			if err != nil {
				t.Fatal(err)
			}
			clock := faketime.NewManualClock()
			out := qdisctest.NewLink(clock)
			q, err := fifo.Kind.NewTo(out, qdisctest.NewLink(clock), clock, o)
			if err != nil {
				t.Fatalf("NewTo(%v): %v", o, err)
			}
			if q.Lanes() != tc.lanes {
				t.Errorf("NewTo(%v) has %d lanes; want %d", o, q.Lanes(), tc.lanes)
			}
			var pkts []*stack.PacketBuffer
			for i := range tc.packets {
				h := uint32(i % tc.hashes)
				pkt := qdisctest.MakePacket(100+i%50, h, uint64(i))
				pkts = append(pkts, pkt)
				if err := q.Enqueue(pkt, h); err != nil {
					t.Fatalf("Enqueue of packet %d: %v", i, err)
				}
			}
			qdisctest.WaitQuiescent(t, q)
			recs := out.Records()
			if len(recs) != tc.packets {
				t.Errorf("%d packets delivered; want all %d", len(recs), tc.packets)
			}
			if err := out.Err(); err != nil {
				t.Errorf("a packet delivered changed: %v", err)
			}
			// Each hash's packets are in the order they were enqueued; with
			// one lane, all of them are.
			next := map[uint32]uint64{}
			seen := map[uint64]bool{}
			var last uint64
			for i, r := range recs {
				if seen[r.Seq] {
					t.Errorf("packet %d delivered twice", r.Seq)
				}
				seen[r.Seq] = true
				if want, ok := next[r.Hash]; ok && r.Seq < want {
					t.Errorf("hash %d: packet %d delivered after %d", r.Hash, r.Seq, want-1)
				}
				next[r.Hash] = r.Seq + 1
				if tc.lanes == 1 && i > 0 && r.Seq != last+1 {
					t.Errorf("one lane: packet %d delivered after %d; want them in order", r.Seq, last)
				}
				last = r.Seq
			}
			if s := q.Stats(); s.Packets != uint64(tc.packets) || s.Drops != 0 || s.BacklogPackets != 0 {
				t.Errorf("Stats %+v; want %d sent, nothing dropped or queued", s, tc.packets)
			}
			if !strings.HasPrefix(q.String(), "fifo ") {
				t.Errorf("String() = %q; want fifo's", q.String())
			}
			q.Close()
			qdisctest.CheckReleased(t, pkts)
		})
	}
}

// TestNewToLimit: on the receive path a fifo lane holds at most its
// limit behind the packet the stack above is taking; what comes past it
// is refused (ErrNoBufferSpace) and counted as a drop, and what was held
// is delivered, in order, once the stack takes it.
func TestNewToLimit(t *testing.T) {
	const limit, offered = 5, 20
	clock := faketime.NewManualClock()
	out := qdisctest.NewLink(clock)
	var plug qdisctest.Plug
	out.OnWrite = plug.Wait
	q, err := fifo.Kind.NewTo(out, qdisctest.NewLink(clock), clock, fifo.Options{Limit: limit, Queues: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var pkts []*stack.PacketBuffer
	refused := 0
	plug.While(func() {
		for i := range offered {
			pkt := qdisctest.MakePacket(200, 0, uint64(i))
			pkts = append(pkts, pkt)
			err := q.Enqueue(pkt, 0)
			switch err.(type) {
			case nil:
			case *tcpip.ErrNoBufferSpace:
				refused++
			default:
				t.Fatalf("Enqueue of packet %d: %v", i, err)
			}
			if i == 0 {
				plug.WaitStuck(t, 1) // the first is with the stack
			}
		}
	})
	qdisctest.WaitQuiescent(t, q)
	recs := out.Records()
	if len(recs) != 1+limit || refused != offered-1-limit {
		t.Errorf("%d delivered, %d refused; want %d (one with the stack, %d queued) and %d refused", len(recs), refused, 1+limit, limit, offered-1-limit)
	}
	for i, r := range recs {
		if r.Seq != uint64(i) {
			t.Errorf("delivery %d is packet %d; want %d", i, r.Seq, i)
		}
	}
	if s := q.Stats(); s.Packets != uint64(len(recs)) || s.Drops != uint64(refused) {
		t.Errorf("Stats %+v; want %d sent and %d dropped", s, len(recs), refused)
	}
	q.Close()
	qdisctest.CheckReleased(t, pkts)
}

// TestKindQueueAndCeiling: fifo grafted under a shaper is the shaper's
// own byte FIFO (Kind.Queue builds nothing, with no error), and a
// running fifo takes a tbf's buckets over its lanes in place
// (Kind.Ceiling), which it then shows as the tbf it is grafted under,
// and loses them with a nil gate.
func TestKindQueueAndCeiling(t *testing.T) {
	if q, err := fifo.Kind.Queue(fifo.Options{Limit: 10}, 1514); q != nil || err != nil {
		t.Errorf("Queue = %v, %v; want none: the parent's own FIFO", q, err)
	}
	clock := faketime.NewManualClock()
	link := qdisctest.NewLink(clock)
	q, err := fifo.Kind.New(link, clock, fifo.Options{Queues: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	gate, maxSize, err := tbf.NewGate(link, tbf.Config{Rate: 125000, Burst: 10000}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := fifo.Kind.Ceiling(q, gate, maxSize); err != nil {
		t.Fatal(err)
	}
	if s := q.String(); !strings.HasPrefix(s, "tbf rate 1Mbit burst 10000b; child fifo") {
		t.Errorf("with a ceiling, String() = %q; want fifo under a tbf", s)
	}
	if err := fifo.Kind.Ceiling(q, nil, 0); err != nil {
		t.Fatal(err)
	}
	if s := q.String(); !strings.HasPrefix(s, "fifo ") {
		t.Errorf("with the ceiling lifted, String() = %q; want fifo's", s)
	}
}
