package netem

import (
	"strings"
	"testing"
)

// TestTighten: a pod's netem words over the operator's make only the
// pod's own network worse: more delay or loss, a lower rate and limit
// are taken, and what the pod leaves out stays the operator's; less
// delay (the jitter's least included) or loss, a higher rate or limit,
// and the words that would send more or spare packets (duplicate,
// reorder, slot, ecn, a loss model) other than the operator's are
// refused, saying what to give.
func TestTighten(t *testing.T) {
	op := "limit 500 delay 50ms 10ms loss 1% rate 10mbit"
	for _, tc := range []struct {
		pod, want string // want: the merged words, "" for a refusal
		says      string
	}{
		{"delay 100ms", "limit 500 delay 100ms loss 1% rate 10mbit", ""},
		{"loss 5%", "limit 500 delay 50ms 10ms loss 5% rate 10mbit", ""},
		{"rate 5mbit", "limit 500 delay 50ms 10ms loss 1% rate 5mbit", ""},
		{"limit 100", "limit 100 delay 50ms 10ms loss 1% rate 10mbit", ""},
		{"", "limit 500 delay 50ms 10ms loss 1% rate 10mbit", ""},
		{"seed 7", "limit 500 delay 50ms 10ms loss 1% rate 10mbit seed 7", ""},
		{"delay 60ms 20ms", "limit 500 delay 60ms 20ms loss 1% rate 10mbit", ""},
		{"delay 50ms 20ms", "", "sooner than the operator's least 40ms"},
		{"delay 60ms 10ms distribution normal", "", "sooner than the operator's least"},
		{"delay 10ms", "", "sooner than the operator's least"},
		{"loss 0.5%", "", "below the operator's 1%"},
		{"loss gemodel 1%", "", "loss model"},
		{"rate 20mbit", "", "at most the operator's (rate 10Mbit)"},
		{"rate 10mbit -100", "", "overheads no smaller"},
		{"limit 1001", "", "above the operator's 500"},
		{"duplicate 1%", "", "duplicate is the operator's"},
		{"delay 50ms 10ms reorder 10%", "", "reorder and gap is the operator's"},
		{"slot 1ms", "", "slot is the operator's"},
		{"loss 2% ecn", "", "ecn is the operator's"},
		{"corrupt 1%", "limit 500 delay 50ms 10ms loss 1% rate 10mbit corrupt 1%", ""},
		{"corrupt 1% 25%", "", "correlation is the operator's"},
	} {
		o, err := Parse(op)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseWith(tc.pod, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.pod, err)
		}
		got, err := o.Tighten(p)
		switch {
		case tc.want == "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("pod %q over %q: %v, want a refusal saying %q", tc.pod, op, err, tc.says)
		case tc.want != "" && err != nil:
			t.Errorf("pod %q over %q: %v", tc.pod, op, err)
		case tc.want != "":
			want, err := Parse(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if got.Words() != want.Words() {
				t.Errorf("pod %q over %q: %q, want %q", tc.pod, op, got.Words(), want.Words())
			}
		}
	}
}

// TestTightenCorrupt: over an operator's corruption, a pod's may be more
// frequent, never rarer, its correlation the operator's; left out, the
// operator's stays.
func TestTightenCorrupt(t *testing.T) {
	op := "delay 10ms corrupt 1% 25%"
	for _, tc := range []struct{ pod, want, says string }{
		{"delay 10ms", "delay 10ms corrupt 1% 25%", ""},
		{"corrupt 5% 25%", "delay 10ms corrupt 5% 25%", ""},
		{"corrupt 1% 25%", "delay 10ms corrupt 1% 25%", ""},
		{"corrupt 0.5% 25%", "", "below the operator's 1%"},
		{"corrupt 5%", "", "correlation is the operator's"},
		{"corrupt 5% 50%", "", "give corrupt PERCENT 25%"},
	} {
		o, err := Parse(op)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseWith(tc.pod, nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.pod, err)
		}
		got, err := o.Tighten(p)
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("pod %q over %q: %v, want a refusal saying %q", tc.pod, op, err, tc.says)
			}
			continue
		}
		want, werr := Parse(tc.want)
		if err != nil || werr != nil || got.Words() != want.Words() {
			t.Errorf("pod %q over %q: %q (%v), want %q (%v)", tc.pod, op, got.Words(), err, want.Words(), werr)
		}
	}
}
