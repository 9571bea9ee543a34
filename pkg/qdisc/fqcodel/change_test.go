package fqcodel_test

import (
	"errors"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"github.com/netqdisc/netqdisc/pkg/qdisc/fqcodel"
	"github.com/netqdisc/netqdisc/pkg/qdisc/qdisctest"
)

// TestChangeInPlace is fq_codel_change: every knob but flows changes on
// a running queue, which keeps its packets in order; a lower limit or
// memory limit drops (from the head, as Linux dequeues) until under it;
// a change of flows is refused and changes nothing.
func TestChangeInPlace(t *testing.T) {
	const mtu = 1514
	for _, tc := range []struct {
		name      string
		change    fqcodel.Config
		dropped   int
		wantField string
	}{
		{name: "every knob but flows", change: fqcodel.Config{Limit: 100, Quantum: 300, Target: 2 * time.Millisecond, Interval: 50 * time.Millisecond,
			MemoryLimit: 1 << 20, DropBatch: 8, NoECN: true, CEThreshold: time.Millisecond, CESelector: 1, CEMask: 3}},
		{name: "the same flows", change: fqcodel.Config{Flows: 16, Limit: 100}},
		{name: "a lower limit drops from the head", change: fqcodel.Config{Limit: 4}, dropped: 6},
		{name: "a lower memory limit drops", change: fqcodel.Config{MemoryLimit: 1}, dropped: 10},
		{name: "other flows", change: fqcodel.Config{Flows: 32}, wantField: "flows"},
		{name: "a bad target", change: fqcodel.Config{Target: time.Second, Interval: time.Millisecond}, wantField: "target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := fqcodel.NewScheduler(fqcodel.Config{Flows: 16}, mtu)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Purge()
			for i := 0; i < 10; i++ {
				q.Enqueue(qdisctest.MakePacket(100, 0, uint64(i)), 100, uint32(i%2)<<31, 0)
			}
			before := q.Config()
			dropped, _, err := q.Change(tc.change, 0)
			if tc.wantField != "" {
				var ce *fqcodel.ConfigError
				if !errors.As(err, &ce) || ce.Field != tc.wantField {
					t.Fatalf("Change(%+v) = %v; want a ConfigError for %s", tc.change, err, tc.wantField)
				}
				if q.Config() != before {
					t.Errorf("a refused change changed the config: %+v, was %+v", q.Config(), before)
				}
				return
			}
			if err != nil {
				t.Fatalf("Change(%+v): %v", tc.change, err)
			}
			want, _ := fqcodel.NewScheduler(tc.change, mtu)
			wantCfg := want.Config()
			wantCfg.Flows = 16
			if got := q.Config(); got != wantCfg {
				t.Errorf("Config() = %+v, want %+v", got, wantCfg)
			}
			if got := q.CoDelParams(); got != want.CoDelParams() {
				t.Errorf("CoDel's params %+v, want %+v", got, want.CoDelParams())
			}
			if dropped != tc.dropped || q.XStats().DropOverlimit != uint64(tc.dropped) {
				t.Errorf("dropped %d (drop_overlimit %d), want %d", dropped, q.XStats().DropOverlimit, tc.dropped)
			}
			// What is left leaves in the order it came, flow by flow.
			last := map[uint64]uint64{}
			for n := 0; ; n++ {
				pkt, _, ok := q.Dequeue(0)
				if !ok {
					if n != 10-tc.dropped {
						t.Errorf("%d packets left, want %d", n, 10-tc.dropped)
					}
					break
				}
				seq := qdisctest.Seq(pkt)
				if prev, ok := last[seq%2]; ok && seq < prev {
					t.Errorf("packet %d left after %d of its flow", seq, prev)
				}
				last[seq%2] = seq
				pkt.DecRef()
			}
		})
	}
}

// TestCEThresholdMarks: fq_codel with a ce_threshold marks an ECT packet
// that waited past it, counted as ce_mark, and leaves one that did not,
// and a Not-ECT one, as it was.
func TestCEThresholdMarks(t *testing.T) {
	q, err := fqcodel.NewScheduler(fqcodel.Config{CEThreshold: time.Millisecond}, 1514)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tos    uint8
		wait   time.Duration
		marked bool
	}{
		{"ECT(0) past the threshold", 0x02, 2 * time.Millisecond, true},
		{"ECT(0) within it", 0x02, 500 * time.Microsecond, false},
		{"Not-ECT past it", 0x00, 2 * time.Millisecond, false},
	} {
		marks := q.XStats().CEMark
		q.Enqueue(withNetworkHeader(header.IPv4ProtocolNumber, v4Header(tc.tos)), 28, 1, 0)
		pkt, _, ok := q.Dequeue(int64(tc.wait))
		if !ok {
			t.Fatalf("%s: nothing left", tc.name)
		}
		tos, _ := header.IPv4(pkt.NetworkHeader().Slice()).TOS()
		ce := tos&3 == 3
		if ce != tc.marked || (q.XStats().CEMark == marks+1) != tc.marked {
			t.Errorf("%s: CE %v, ce_mark %d -> %d; want marked %v", tc.name, ce, marks, q.XStats().CEMark, tc.marked)
		}
		pkt.DecRef()
	}
}
