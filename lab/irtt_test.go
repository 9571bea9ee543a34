package lab

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseIrtt: irtt's JSON gives the answered probes' RTTs in order and
// counts the lost ones (lost "true", "true_down" or "true_up"); JSON that
// is not irtt's is an error.
func TestParseIrtt(t *testing.T) {
	const out = `{"version": {}, "stats": {}, "round_trips": [
		{"seqno": 0, "lost": "false", "delay": {"receive": 1, "rtt": 400993, "send": 2}},
		{"seqno": 1, "lost": "true"},
		{"seqno": 2, "lost": "false", "delay": {"rtt": 1500000}},
		{"seqno": 3, "lost": "true_down", "delay": {"send": 5}}
	]}`
	run, err := parseIrtt([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{400993, 1500 * time.Microsecond}
	if diff := cmp.Diff(want, run.rtts); diff != "" || run.sent != 4 || run.lost != 2 {
		t.Errorf("parseIrtt: RTTs (-want +got):\n%s\nsent %d lost %d, want 4 and 2", diff, run.sent, run.lost)
	}
	if _, err := parseIrtt([]byte("irtt: no such host")); err == nil {
		t.Error("parseIrtt of text that is not JSON: no error")
	}
}

// TestIrttResultAboveIdle: the loaded quantile less the idle median.
func TestIrttResultAboveIdle(t *testing.T) {
	r := IrttResult{Idle: []time.Duration{1, 2, 3}, Loaded: []time.Duration{5, 5, 5}}
	if got := r.LoadedAboveIdle(0.99); got != 3 {
		t.Errorf("LoadedAboveIdle(0.99) = %v, want 3ns", got)
	}
}
