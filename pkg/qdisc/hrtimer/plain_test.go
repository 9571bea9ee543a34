package hrtimer

import (
	"testing"
	"time"
)

// TestPlainWait: a wait is the runtime's own only when it is Lead or less
// away and the timer was Reset or fired less than Lead before (a busy
// qdisc's packet-after-packet waits); a short wait on a quiet timer, and
// every longer one, ends in ppoll.
func TestPlainWait(t *testing.T) {
	for _, tc := range []struct {
		name     string
		d, since time.Duration
		plain    bool
	}{
		{"short, busy", 300 * time.Microsecond, 250 * time.Microsecond, true},
		{"Lead, busy", Lead, Lead - 1, true},
		{"short, quiet", 300 * time.Microsecond, Lead, false},
		{"short, after a long quiet", time.Millisecond, time.Hour, false},
		{"now, quiet", 0, 10 * time.Millisecond, false},
		{"past Lead, busy", Lead + 1, 0, false},
		{"far, quiet", 50 * time.Millisecond, time.Second, false},
	} {
		if got := plainWait(tc.d, tc.since); got != tc.plain {
			t.Errorf("%s: plainWait(%v, %v) = %v; want %v", tc.name, tc.d, tc.since, got, tc.plain)
		}
	}
}
