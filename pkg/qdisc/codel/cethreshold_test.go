package codel_test

import (
	"testing"
	"time"

	"github.com/netqdisc/netqdisc/pkg/qdisc/codel"
)

// dspkt is a test packet with a DS field, for the CE threshold's mask.
type dspkt struct {
	*tpkt
	ds uint8
}

func (p dspkt) DSField() (uint8, bool) { return p.ds, true }

// dsfifo is fifo for dspkt.
type dsfifo struct{ q []dspkt }

func (f *dsfifo) Dequeue() (dspkt, bool) {
	if len(f.q) == 0 {
		return dspkt{}, false
	}
	p := f.q[0]
	f.q = f.q[1:]
	return p, true
}
func (f *dsfifo) Drop(dspkt)      {}
func (f *dsfifo) Backlog() uint32 { return 0 }

// TestCEThreshold is codel_impl.h's end of codel_dequeue: a packet that
// leaves after a sojourn above ce_threshold is marked CE (if ECN-capable:
// ECT or CE already; counted either way) whatever CoDel decided, and with
// a selector mask only if its DS field matches. CoDel itself never acts
// here (its target is far off, and the backlog under an MTU).
func TestCEThreshold(t *testing.T) {
	ms := func(d time.Duration) codel.Time { return codel.DurationOf(d) }
	for _, tc := range []struct {
		name          string
		threshold     codel.Time
		on            bool
		selector, msk uint8
		ds            uint8
		ect           bool
		sojourn       codel.Time
		marked        bool
	}{
		{name: "above the threshold", threshold: ms(time.Millisecond), on: true, ect: true, sojourn: ms(2 * time.Millisecond), marked: true},
		{name: "below it", threshold: ms(time.Millisecond), on: true, ect: true, sojourn: ms(500 * time.Microsecond)},
		{name: "at it: after, strictly", threshold: ms(time.Millisecond), on: true, ect: true, sojourn: ms(time.Millisecond)},
		{name: "one unit above", threshold: ms(time.Millisecond), on: true, ect: true, sojourn: ms(time.Millisecond) + 1, marked: true},
		{name: "not ECN-capable", threshold: ms(time.Millisecond), on: true, sojourn: ms(2 * time.Millisecond)},
		{name: "off", threshold: ms(time.Millisecond), ect: true, sojourn: ms(2 * time.Millisecond)},
		{name: "threshold 0: anything that waited a unit", threshold: 0, on: true, ect: true, sojourn: 1, marked: true},
		{name: "threshold 0, no wait", threshold: 0, on: true, ect: true, sojourn: 0},
		{name: "selector matches", threshold: 0, on: true, selector: 0x04, msk: 0xfc, ds: 0x05, ect: true, sojourn: 5, marked: true},
		{name: "selector does not match", threshold: 0, on: true, selector: 0x04, msk: 0xfc, ds: 0x01, ect: true, sojourn: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			par := codel.Params{Target: ms(time.Second), Interval: ms(time.Second), MTU: 1 << 20, ECN: true,
				CEThreshold: tc.threshold, CEThresholdOn: tc.on, CESelector: tc.selector, CEMask: tc.msk}
			var log []event
			p := dspkt{tpkt: &tpkt{seq: 1, size: 1000, enq: 100, ect: tc.ect, log: &log}, ds: tc.ds}
			q := &dsfifo{q: []dspkt{p}}
			var v codel.Vars
			var st codel.Stats
			got, ok := codel.Dequeue[dspkt](q, &v, &par, &st, codel.Time(100)+tc.sojourn)
			if !ok || got.seq != 1 {
				t.Fatalf("Dequeue = %v, %v; want the packet", got, ok)
			}
			if got.ce != tc.marked || (st.CEMarks == 1) != tc.marked {
				t.Errorf("marked %v, CEMarks %d; want marked %v", got.ce, st.CEMarks, tc.marked)
			}
			if st.Drops != 0 || st.ECNMarks != 0 {
				t.Errorf("CoDel acted: %+v", st)
			}
		})
	}
}
